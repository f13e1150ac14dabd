{#
    Every config of a cdc_merge model is checked here, before any SQL runs: the values dbt has are
    gathered and checked in python_jobs/apply/mirror_config.py; each error names the model and says
    what to change.
#}

{% macro cdc_merge_validated_config() %}
    {{ return(cdc_merge.checked_model_config('cdc_merge', "cdc_merge model '" ~ model.name ~ "': ")) }}
{% endmacro %}


{% macro checked_model_config(materialization, fail_prefix) %}
    {#- A cdc_merge or cdc_history model's config, checked; with its raw relation. -#}
    {% if model.language != 'sql' %}
        {% do exceptions.raise_compiler_error(fail_prefix ~ materialization ~ " runs SQL models only; this one is " ~ model.language ~ ".") %}
    {% endif %}
    {% do cdc_merge.require_cdc_adapter(fail_prefix ~ materialization) %}
    {% set settings = {'offsets_schema': this.schema} %}
    {% for name in adapter.cdc_config_names(materialization) %}
        {% set value = config.get(name) %}
        {% if value is not none %}
            {% do settings.update({name: value}) %}
        {% endif %}
    {% endfor %}
    {% set upstream = cdc_merge.upstream_relations() %}
    {% set checked = adapter.cdc_mirror_config(materialization, fail_prefix, settings, cdc_merge.upstream_landings(), upstream | length,
        target.type, 'on_schema_change' in (model.unrendered_config or {}), (model.unrendered_config or {}).keys() | list) %}
    {% if checked.error %}
        {% do exceptions.raise_compiler_error(checked.error) %}
    {% endif %}
    {#- dbt run --empty renders ref() as an empty subquery; the raw table itself is still read for its snapshots. -#}
    {% set raw_relation = upstream[0].incorporate(limit=none) if upstream[0].limit is not none else upstream[0] %}
    {% set cfg = {'raw_relation': raw_relation} %}
    {% do cfg.update(checked.config) %}
    {{ return(cfg) }}
{% endmacro %}


{% macro upstream_relations() %}
    {#- The relations the model reads: exactly one raw table for a cdc_merge or cdc_history model. -#}
    {% set upstream = [] %}
    {% for source_name, table_name in model.sources %}
        {% do upstream.append(source(source_name, table_name)) %}
    {% endfor %}
    {% for model_ref in model.refs %}
        {% do upstream.append(ref(model_ref.name) if model_ref is mapping else ref(*model_ref)) %}
    {% endfor %}
    {{ return(upstream) }}
{% endmacro %}


{% macro upstream_landings() %}
    {#-
        The landing configs of the landing models the model depends on ({'path', 'format', 'tables'}):
        with format debezium only the tables under 'tables:' land. The landing model's own setting, or
        the project's var, as the cdc_landing materialization reads them.
    -#}
    {% set landings = [] %}
    {% for node_id in model.depends_on.nodes %}
        {% set node_config = (graph.nodes.get(node_id) or {}).get('config', {}) %}
        {% set landing_config = node_config.get('landing_config') or (var('cdc_merge_landing_config', 'landing.yml')
            if node_config.get('materialized') == 'cdc_landing' else none) %}
        {% set landing = adapter.cdc_landing_tables(landing_config) if landing_config else none %}
        {% if landing is not none %}
            {% do landings.append(landing) %}
        {% endif %}
    {% endfor %}
    {{ return(landings) }}
{% endmacro %}


{% macro cdc_merge_validate_columns(model_columns, cfg) %}
    {#- Runs on the model's output columns, still before anything is written. -#}
    {% set fail_prefix = "cdc_merge model '" ~ model.name ~ "': " %}
    {% set lowered = model_columns | map('lower') | list %}
    {% for required in ['_cdc_key', '_cdc_action', '_cdc_seq', '_cdc_source_ts', '_cdc_unavailable'] %}
        {% if required not in lowered %}
            {% do exceptions.raise_compiler_error(fail_prefix ~ "the model must select " ~ required ~ ": add {{ cdc_merge.cdc_metadata_columns() }} to its final select.") %}
        {% endif %}
    {% endfor %}
    {% for column in cfg.unique_key %}
        {% if column | lower not in lowered %}
            {% do exceptions.raise_compiler_error(fail_prefix ~ "unique_key column " ~ column ~ " is not selected by the model (it selects " ~ model_columns | join(', ') ~ ").") %}
        {% endif %}
    {% endfor %}
    {% if '_cdc_deleted' in lowered %}
        {% do exceptions.raise_compiler_error(fail_prefix ~ "_cdc_deleted is kept by the materialization; do not select it.") %}
    {% endif %}
    {% set keyword_problem = adapter.cdc_column_names_problem(model_columns, cfg.unique_key, model.name) %}
    {% if keyword_problem %}
        {% do exceptions.raise_compiler_error(keyword_problem) %}
    {% endif %}
{% endmacro %}
