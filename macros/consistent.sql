{#
    consistent(ref('shop_orders')): a mirror of a consistency group read at the group's latest cut,
    where every mirror of the group holds exactly the source transactions up to one commit
    (docs/consistent_cuts.md). Every consistent() of one model reads one cut: the cut is looked up
    once per model compilation and kept for the others. Plain ref() reads the newest state.
#}

{% macro consistent(relation) %}
    {% if not execute %}
        {{ return(relation) }}
    {% endif %}
    {% set mirror = cdc_merge.mirror_name(relation) %}
    {% set node = cdc_merge.mirror_node(mirror) %}
    {% set group = node.config.get('consistency_group') if node is not none else none %}
    {% if group is none %}
        {% do exceptions.raise_compiler_error("consistent(" ~ relation ~ "): " ~ mirror ~ " is not a cdc_merge model with a"
            ~ " consistency_group; set consistency_group on the mirrors to read together, or use ref() alone.") %}
    {% endif %}
    {% set cut = adapter.cdc_reader_cut(invocation_id, model.unique_id, group) %}
    {% if cut is none %}
        {% set cuts = api.Relation.create(schema=node.config.get('offsets_schema') or node.schema, identifier='cdc_merge_cuts', type='table') %}
        {% set rows = run_query(cdc_merge.latest_cut_sql(cuts, group)).rows %}
        {% set snapshots = {} %}
        {% for row in rows %}
            {% do snapshots.update({row['target_table']: row['mirror_snapshot']}) %}
        {% endfor %}
        {% set cut = adapter.cdc_keep_reader_cut(invocation_id, model.unique_id, group, snapshots) %}
    {% endif %}
    {% if cut.get(mirror) is none %}
        {% do exceptions.raise_compiler_error("consistent(" ~ relation ~ "): group " ~ group ~ " has no cut with " ~ mirror
            ~ " yet; it gets one once every mirror of the group has run with consistency_group set (dbt run --select "
            ~ "config.consistency_group:" ~ group ~ ").") %}
    {% endif %}
    {{ return(cdc_merge.relation_at_snapshot_sql(relation, cut[mirror])) }}
{% endmacro %}


{% macro mirror_name(relation) %}
    {#- How the cuts table names a mirror: schema.identifier, lower case. -#}
    {{ return((relation.schema ~ '.' ~ relation.identifier) | lower) }}
{% endmacro %}


{% macro mirror_node(mirror) %}
    {% for node in graph.nodes.values() %}
        {% if node.resource_type == 'model' and ((node.schema ~ '.' ~ (node.alias or node.name)) | lower) == mirror %}
            {{ return(node) }}
        {% endif %}
    {% endfor %}
    {{ return(none) }}
{% endmacro %}
