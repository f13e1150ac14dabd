{#
    cdc_merge_table_settings: what the materializations record about a table they own where a
    Databend table has no properties of a user's choosing. Its comment is the user's (dbt's
    persist_docs writes the model's description there on every run), so nothing of ours is kept in
    it. One appended row per recording, never updated, so models running at once never conflict on
    it; a table's newest row of a setting is its value. It lives beside cdc_merge_offsets.
    Spark keeps the same as Iceberg table properties (cdc-merge.<setting>), which a comment does not touch.
#}

{% macro table_settings_relation(offsets) %}
    {{ return(api.Relation.create(schema=offsets.schema, identifier='cdc_merge_table_settings', type='table')) }}
{% endmacro %}


{% macro create_table_settings_table(relation) %}
    {{ return(adapter.dispatch('create_table_settings_table', 'cdc_merge')(relation)) }}
{% endmacro %}

{% macro spark__create_table_settings_table(relation) %}
    {#- Not used by cdc_merge on Spark (table properties); kept so that the table means the same on both engines. -#}
    create table if not exists {{ relation }} (
        target_table string,
        setting string,
        value string,
        recorded_at timestamp,
        invocation_id string
    )
    using iceberg
    tblproperties ({{ cdc_merge.bookkeeping_table_properties() }})
{% endmacro %}

{% macro databend__create_table_settings_table(relation) %}
    create table if not exists {{ relation }} (
        target_table string null,
        setting string null,
        value string null,
        recorded_at timestamp null,
        invocation_id string null
    )
{% endmacro %}


{% macro ensure_table_settings(offsets) %}
    {#- Created if missing; dbt's relation cache, filled when the invocation starts, answers whether it exists. -#}
    {% set relation = cdc_merge.table_settings_relation(offsets) %}
    {% if adapter.get_relation(database=relation.database, schema=relation.schema, identifier=relation.identifier) is none %}
        {% do adapter.cdc_execute_one_at_a_time('create ' ~ relation,
            [cdc_merge.create_schema_if_missing(relation), cdc_merge.create_table_settings_table(relation)]) %}
    {% endif %}
    {{ return(relation) }}
{% endmacro %}


{% macro recorded_table_setting(offsets, target_relation, setting) %}
    {#- The newest value of a setting recorded for the table, or none. -#}
    {% set relation = cdc_merge.ensure_table_settings(offsets) %}
    {% set rows = run_query("select value from " ~ relation ~ " where target_table = '" ~ target_relation
        ~ "' and setting = '" ~ setting ~ "' order by recorded_at desc limit 1").rows %}
    {{ return((rows[0]['value'] or none) if rows | length else none) }}
{% endmacro %}


{% macro record_table_setting(offsets, target_relation, setting, value) %}
    {% set relation = cdc_merge.ensure_table_settings(offsets) %}
    {% do run_query("insert into " ~ relation ~ " (target_table, setting, value, recorded_at, invocation_id) values ('"
        ~ target_relation ~ "', '" ~ setting ~ "', '" ~ value ~ "', now(), '" ~ invocation_id ~ "')") %}
{% endmacro %}
