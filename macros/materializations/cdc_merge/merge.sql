{#
    Applying one deduplicated batch. Every statement compares seq, so running a batch
    again, or an older event arriving late, changes nothing.
#}

{% macro create_changes_sql(changes_view, model_sql, target_relation, tombstones, cfg) %}
    {{ return(adapter.dispatch('create_changes_sql', 'cdc_merge')(changes_view, model_sql, target_relation, tombstones, cfg)) }}
{% endmacro %}

{% macro spark__create_changes_sql(changes_view, model_sql, target_relation, tombstones, cfg) %}
    {#- Cached so the counts and the MERGE read the target's keys once. -#}
    cache table {{ changes_view }} as
    {{ cdc_merge.classified_batch_sql(model_sql, target_relation, tombstones) }}
{% endmacro %}

{% macro databend__create_changes_sql(changes_view, model_sql, target_relation, tombstones, cfg) %}
    {#- A scratch table (no time travel) so the counts and the MERGEs read the target's keys once. -#}
    create or replace transient table {{ changes_view }} as
    {{ cdc_merge.classified_batch_sql(model_sql, target_relation, tombstones) }}
{% endmacro %}


{% macro classified_batch_sql(model_sql, target_relation, tombstones) %}
    {#- Each key of the batch against the mirror and the tombstones: insert, update, delete, tombstone or skip. -#}
    with

    batch as (
        {{ model_sql }}
    ),

    mirror_keys as (
        select
            _cdc_key,
            _cdc_seq
        from {{ target_relation }}
    ),

    {% if tombstones is not none -%}
    tombstone_keys as (
        select
            _cdc_key,
            _cdc_seq
        from {{ tombstones }}
    ),
    {%- endif %}

    final as (
        select
            batch.*,
            {{ 'tombstone_keys._cdc_seq' if tombstones is not none else 'cast(null as string)' }} as _cdc_tombstone_seq,
            case
                when mirror_keys._cdc_seq is not null and batch._cdc_seq <= mirror_keys._cdc_seq then 'skip'
                when mirror_keys._cdc_seq is not null and batch._cdc_action = 'delete' then 'delete'
                when mirror_keys._cdc_seq is not null then 'update'
                {%- if tombstones is not none %}
                when batch._cdc_seq <= tombstone_keys._cdc_seq then 'skip'
                {%- endif %}
                when batch._cdc_action = 'delete' then 'tombstone'
                else 'insert'
            end as _cdc_change
        from batch
        left join mirror_keys
            on batch._cdc_key = mirror_keys._cdc_key
        {%- if tombstones is not none %}
        left join tombstone_keys
            on batch._cdc_key = tombstone_keys._cdc_key
        {%- endif %}
    )

    select * from final
{% endmacro %}


{% macro drop_scratch(name) %}
    {#- The per-run intermediates: temporary views (cached) on Spark, transient tables on Databend. -#}
    {{ return(adapter.dispatch('drop_scratch', 'cdc_merge')(name)) }}
{% endmacro %}

{% macro spark__drop_scratch(name) %}
    {% do run_query('uncache table if exists ' ~ name) %}
    {% do run_query('drop view if exists ' ~ name) %}
{% endmacro %}

{% macro databend__drop_scratch(name) %}
    {% do run_query('drop table if exists ' ~ name) %}
{% endmacro %}


{% macro change_counts_sql(changes_view) %}
    select
        count(*) as events_read,
        count_if(_cdc_change = 'insert') as inserted,
        count_if(_cdc_change = 'update') as updated,
        count_if(_cdc_change = 'delete') as deleted,
        count_if(_cdc_change = 'tombstone') as tombstoned,
        count_if(_cdc_change = 'skip') as skipped,
        count_if(_cdc_change = 'insert' and _cdc_tombstone_seq is not null) as revived,
        {#- '' rather than null: databend-py hands a NULL over as the string 'NULL'. #}
        coalesce(cast(max(_cdc_source_ts) as string), '') as max_source_ts
    from {{ changes_view }}
{% endmacro %}


{% macro merge_tombstones_sql(tombstones, changes_view) %}
    {{ return(adapter.dispatch('merge_tombstones_sql', 'cdc_merge')(tombstones, changes_view)) }}
{% endmacro %}

{% macro default__merge_tombstones_sql(tombstones, changes_view) %}
    merge into {{ tombstones }} as tombstone
    using (
        select
            _cdc_key,
            _cdc_action,
            _cdc_seq,
            _cdc_source_ts
        from {{ changes_view }}
        where _cdc_change in ('delete', 'tombstone') or _cdc_tombstone_seq is not null
    ) as change
        on tombstone._cdc_key = change._cdc_key
    when matched and change._cdc_seq > tombstone._cdc_seq and change._cdc_action = 'delete' then update set
        _cdc_seq = change._cdc_seq,
        _cdc_source_ts = change._cdc_source_ts
    {#- A newer insert or update brings the key back: its tombstone is no longer needed. #}
    when matched and change._cdc_seq > tombstone._cdc_seq then delete
    when not matched and change._cdc_action = 'delete' then insert (_cdc_key, _cdc_seq, _cdc_source_ts)
        values (change._cdc_key, change._cdc_seq, change._cdc_source_ts)
{% endmacro %}


{% macro merge_mirror_sql(target_relation, changes_view, columns, cfg) %}
    {{ return(adapter.dispatch('merge_mirror_sql', 'cdc_merge')(target_relation, changes_view, columns, cfg)) }}
{% endmacro %}

{% macro default__merge_mirror_sql(target_relation, changes_view, columns, cfg) %}
    {%- set soft = cfg.deletes == 'soft' -%}
    {%- set written = columns + ['_cdc_key', '_cdc_seq', '_cdc_source_ts'] -%}
    merge into {{ target_relation }} as mirror
    using (
        select *
        from {{ changes_view }}
        where _cdc_change in ('insert', 'update', 'delete'{{ ", 'tombstone'" if soft }})
    ) as change
        on mirror._cdc_key = change._cdc_key
    {%- if soft %}
    when matched and change._cdc_seq > mirror._cdc_seq and change._cdc_action = 'delete' then update set
        _cdc_deleted = true,
        _cdc_seq = change._cdc_seq,
        _cdc_source_ts = change._cdc_source_ts
    {%- else %}
    when matched and change._cdc_seq > mirror._cdc_seq and change._cdc_action = 'delete' then delete
    {%- endif %}
    {#- A column the source did not send keeps its stored value (see raw_log.sql). #}
    when matched and change._cdc_seq > mirror._cdc_seq then update set
        {%- for column in columns %}
        {{ column }} = case when {{ cdc_merge.is_unavailable_sql(column) }} then mirror.{{ column }} else change.{{ column }} end,
        {%- endfor %}
        _cdc_source_ts = change._cdc_source_ts,
        {%- if soft %}
        _cdc_deleted = false,
        {%- endif %}
        _cdc_seq = change._cdc_seq
    {%- if soft %}
    when not matched then insert ({{ written | join(', ') }}, _cdc_deleted)
        values ({% for column in written %}{{ cdc_merge.sent_value(column, columns) }}, {% endfor %}change._cdc_action = 'delete')
    {%- else %}
    when not matched and change._cdc_action != 'delete' then insert ({{ written | join(', ') }})
        values ({% for column in written %}{{ cdc_merge.sent_value(column, columns) }}{{ ', ' if not loop.last }}{% endfor %})
    {%- endif %}
{% endmacro %}


{% macro sent_value(column, columns) %}
    {#- A new row has no stored value for a column the source did not send: null, not the placeholder. -#}
    {%- if column in columns -%}
        case when {{ cdc_merge.is_unavailable_sql(column) }} then null else change.{{ column }} end
    {%- else -%}
        change.{{ column }}
    {%- endif -%}
{% endmacro %}


{% macro is_unavailable_sql(column) %}
    {{ return(adapter.dispatch('is_unavailable_sql', 'cdc_merge')(column)) }}
{% endmacro %}

{% macro spark__is_unavailable_sql(column) -%}
    array_contains(change._cdc_unavailable, '{{ column }}')
{%- endmacro %}

{% macro databend__is_unavailable_sql(column) -%}
    {#- _cdc_unavailable is ',a,b,' on Databend (see databend__create_batch_view_sql). -#}
    position(',{{ column }},' in change._cdc_unavailable) > 0
{%- endmacro %}
