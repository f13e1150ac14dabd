{#
    Iceberg writes a metadata file (vN.metadata.json) on every commit and, unless a table says
    so, never deletes the old ones: under a run every few seconds a table's metadata folder grew
    by one file of every snapshot kept per cycle, until orphan-file removal (72 h by default).
    Every table the product creates on Spark sets these two properties, and maintenance sets
    them on a table made before (or by hand) that has neither, so that each commit deletes the
    metadata files that fall off the table's metadata log. Databend keeps no such files.
#}

{% macro metadata_log_properties() %}
    {#-
        The one list. The metadata log is for inspection only (time travel reads snapshots, which
        live in the current file), so its length only has to outlast a reader: a hundred versions,
        Iceberg's own default, and the var cdc_merge_metadata_versions_kept. Not much fewer on the
        embedded Hadoop catalog: under concurrent writers its version hint can fall a few commits
        behind (a writer's hint written after later ones'), and a hint naming a deleted file fails
        every reader until the next commit (eight threads appending to one table did so with ten).
    -#}
    {{ return({
        'write.metadata.delete-after-commit.enabled': 'true',
        'write.metadata.previous-versions-max': var('cdc_merge_metadata_versions_kept', 100) | string,
    }) }}
{% endmacro %}


{% macro metadata_log_tblproperties(properties=none) -%}
    {#- The properties as a tblproperties list: 'name' = 'value', ... -#}
    {%- set listed = [] -%}
    {%- for name, value in (properties if properties is not none else cdc_merge.metadata_log_properties()).items() -%}
        {%- do listed.append("'" ~ name ~ "' = '" ~ value ~ "'") -%}
    {%- endfor -%}
    {{ listed | join(', ') }}
{%- endmacro %}


{% macro bound_metadata_log(relation) %}
    {#- Sets the properties the table lacks (a value set otherwise, as a model's table_properties, stays): those set. -#}
    {% if relation is none %}
        {{ return({}) }}
    {% endif %}
    {% set added = cdc_merge.set_missing_table_properties(relation, cdc_merge.metadata_log_properties()) %}
    {% if added %}
        {{ log("cdc_merge maintenance " ~ relation ~ ": old metadata files now deleted on commit ("
            ~ cdc_merge.metadata_log_tblproperties(added) ~ ")", info=True) }}
    {% endif %}
    {{ return(added) }}
{% endmacro %}


{% macro set_missing_table_properties(relation, wanted) %}
    {#- wanted's properties the table does not set at all, set: those set (on Databend none: its tables have no such properties). -#}
    {{ return(adapter.dispatch('set_missing_table_properties', 'cdc_merge')(relation, wanted)) }}
{% endmacro %}

{% macro spark__set_missing_table_properties(relation, wanted) %}
    {#- Through the Iceberg API in the driver where the session is in this process (table_properties.py): no statement, no commit when set. -#}
    {% set in_driver = adapter.cdc_set_missing_properties_in_driver(relation.schema ~ '.' ~ relation.identifier, wanted) %}
    {% if in_driver is not none %}
        {{ return(in_driver) }}
    {% endif %}
    {% set current = {} %}
    {% for row in run_query('show tblproperties ' ~ relation).rows %}
        {% do current.update({row['key']: row['value']}) %}
    {% endfor %}
    {% set missing = adapter.cdc_missing_table_properties(current, wanted) %}
    {% if missing %}
        {% do run_query('alter table ' ~ relation ~ ' set tblproperties (' ~ cdc_merge.metadata_log_tblproperties(missing) ~ ')') %}
    {% endif %}
    {{ return(missing) }}
{% endmacro %}

{% macro databend__set_missing_table_properties(relation, wanted) %}
    {{ return({}) }}
{% endmacro %}
