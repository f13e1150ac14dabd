{#
    cdc_merge_verify: one row per mirror and cdc_verify check, in the mirror's schema, which the data
    test cdc_verify_clean reads (the newest check of a mirror must have found no difference).
#}

{% macro record_verify_checks(checks) %}
    {% for check in checks %}
        {% set table = api.Relation.create(database=check.database, schema=check.schema, identifier='cdc_merge_verify',
            type='table') %}
        {% do run_query(adapter.dispatch('create_verify_table', 'cdc_merge')(table)) %}
        {% do cdc_merge.upgrade_verify_table(table) %}
        {% do run_query(cdc_merge.insert_verify_check(table, check)) %}
    {% endfor %}
{% endmacro %}

{% macro insert_verify_check(table, check) %}
    insert into {{ table }} (
        checked_at, invocation_id, mirror, source_table, method, clean, source_rows, mirror_rows, ranges,
        compared_rows, missing, extra, differing, sample_keys, check_seconds, source_position, in_flight
    )
    select
        cast({{ adapter.cdc_sql_string(check.checked_at) }} as timestamp),
        {{ adapter.cdc_sql_string(invocation_id) }},
        {{ adapter.cdc_sql_string(check.mirror) }},
        {{ adapter.cdc_sql_string(check.source_table) }},
        {{ adapter.cdc_sql_string(check.method) }},
        {{ 'true' if check.clean else 'false' }},
        {{ check.source_rows | int }},
        {{ check.mirror_rows | int }},
        {{ check.ranges | int }},
        {{ check.compared_rows | int }},
        {{ check.missing | int }},
        {{ check.extra | int }},
        {{ check.differing | int }},
        {{ adapter.cdc_sql_string(check.sample_keys) }},
        {{ check.check_seconds }},
        {{ adapter.cdc_sql_string(check.source_position) if check.source_position is not none else 'cast(null as string)' }},
        {{ check.in_flight | int }}
{% endmacro %}

{% macro verify_columns_added() %}
    {#- Columns cdc_merge_verify got after its first version: an older table gets them (upgrade_verify_table). -#}
    {{ return([('source_position', 'string'), ('in_flight', 'bigint')]) }}
{% endmacro %}

{% macro upgrade_verify_table(table) %}
    {% set present = adapter.get_columns_in_relation(table) | map(attribute='name') | map('lower') | list %}
    {% for name, data_type in cdc_merge.verify_columns_added() if name not in present %}
        {% do run_query(cdc_merge.add_column_sql(table, name, data_type)) %}
    {% endfor %}
{% endmacro %}


{% macro spark__create_verify_table(relation) %}
    create table if not exists {{ relation }} (
        checked_at timestamp,
        invocation_id string,
        mirror string,
        source_table string,
        method string,
        clean boolean,
        source_rows bigint,
        mirror_rows bigint,
        ranges bigint,
        compared_rows bigint,
        missing bigint,
        extra bigint,
        differing bigint,
        sample_keys string,
        check_seconds double,
        source_position string,
        in_flight bigint
    )
    using iceberg
    tblproperties ({{ cdc_merge.bookkeeping_table_properties() }})
{% endmacro %}

{% macro databend__create_verify_table(relation) %}
    create table if not exists {{ relation }} (
        checked_at timestamp null,
        invocation_id string null,
        mirror string null,
        source_table string null,
        method string null,
        clean boolean null,
        source_rows bigint null,
        mirror_rows bigint null,
        ranges bigint null,
        compared_rows bigint null,
        missing bigint null,
        extra bigint null,
        differing bigint null,
        sample_keys string null,
        check_seconds double null,
        source_position string null,
        in_flight bigint null
    )
{% endmacro %}
