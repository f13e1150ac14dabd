{#
    cdc_merge_schema_changes (next to cdc_merge_offsets): one appended row per change of a
    mirror's columns, never updated. An added or widened column (or a kept one selected again) is
    recorded as pending before its ALTER TABLE and as backfilled after, so a run that dies in between backfills it next time.
#}

{% macro schema_changes_relation(cfg) %}
    {{ return(api.Relation.create(schema=cfg.offsets_schema, identifier='cdc_merge_schema_changes', type='table')) }}
{% endmacro %}


{% macro create_schema_changes_table(relation) %}
    {{ return(adapter.dispatch('create_schema_changes_table', 'cdc_merge')(relation)) }}
{% endmacro %}

{% macro spark__create_schema_changes_table(relation) %}
    create table if not exists {{ relation }} (
        target_table string,
        change_ordinal bigint,
        column_name string,
        change string,
        old_type string,
        new_type string,
        rows_backfilled bigint,
        committed_at timestamp,
        invocation_id string
    )
    using iceberg
    tblproperties ('format-version' = '2', {{ cdc_merge.metadata_log_tblproperties() }})
{% endmacro %}

{% macro databend__create_schema_changes_table(relation) %}
    create table if not exists {{ relation }} (
        target_table string null,
        change_ordinal bigint null,
        column_name string null,
        change string null,
        old_type string null,
        new_type string null,
        rows_backfilled bigint null,
        committed_at timestamp null,
        invocation_id string null
    )
{% endmacro %}


{% macro record_schema_change_sql(relation, target_relation, ordinal, column, change, old_type, new_type, rows_backfilled) %}
    {#- change: add_pending, widen_pending, select_pending (a kept column selected again), backfilled, drop, kept (dropped from the model, kept in the mirror). -#}
    insert into {{ relation }}
    select
        '{{ target_relation }}' as target_table,
        {{ ordinal }} as change_ordinal,
        '{{ column }}' as column_name,
        '{{ change }}' as change,
        {{ "'" ~ old_type ~ "'" if old_type else 'cast(null as string)' }} as old_type,
        {{ "'" ~ new_type ~ "'" if new_type else 'cast(null as string)' }} as new_type,
        {{ rows_backfilled if rows_backfilled is not none else 'cast(null as bigint)' }} as rows_backfilled,
        current_timestamp() as committed_at,
        '{{ invocation_id }}' as invocation_id
{% endmacro %}


{% macro pending_backfills(relation, target_relation) %}
    {#-
        Columns whose newest change is add_pending, widen_pending or select_pending: not yet backfilled. Returns {'columns',
        'ordinal': the newest change_ordinal, 'newest': {column: its newest change}}.
    -#}
    {% set pending_sql %}
        with

        changes as (
            select
                column_name,
                change,
                change_ordinal,
                row_number() over (partition by column_name order by change_ordinal desc) as newest
            from {{ relation }}
            where target_table = '{{ target_relation }}'
        )

        select
            column_name,
            change,
            change_ordinal
        from changes
        where newest = 1
    {% endset %}
    {% set pending = [] %}
    {% set newest = {} %}
    {% set ordinal = namespace(value=0) %}
    {% for row in run_query(pending_sql).rows %}
        {% do newest.update({row['column_name']: row['change']}) %}
        {% if row['change'] in ['add_pending', 'widen_pending', 'select_pending'] %}
            {% do pending.append(row['column_name']) %}
        {% endif %}
        {% set ordinal.value = [ordinal.value, row['change_ordinal'] | int] | max %}
    {% endfor %}
    {{ return({'columns': pending, 'ordinal': ordinal.value, 'newest': newest}) }}
{% endmacro %}
