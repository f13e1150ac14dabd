{#
    What cdc_events() stands for in a cdc_history model: every event of the batch, not only
    the newest per key, one row per (key, seq) (a replayed or re-landed copy of an event is the
    same change), with the columns of cdc_merge's batch view. The model's SQL runs over it, so
    each of its rows is one event's values; the chain of versions is built from them (chain.sql).
    _cdc_unavailable names each event's unchanged Postgres TOAST values, which the chain fills
    in from the version before.
#}

{% macro history_batch_view_name(model_name) %}
    {{ return(cdc_merge.batch_view_name(model_name)) }}
{% endmacro %}


{% macro history_events_relation(raw_relation) %}
    {#- cdc_events() inside a cdc_history model: the batch view; dbt show / compile: the whole log. -#}
    {% if flags.WHICH in ['show', 'compile', 'generate'] %}
        {% set cfg = cdc_merge.cdc_history_validated_config() %}
        {{ return('(' ~ cdc_merge.history_batch_events_sql(cdc_merge.raw_events_since_sql(cfg.raw_relation, none, []), cfg.source_table, 0, 1) ~ ') as cdc_events') }}
    {% endif %}
    {{ return(cdc_merge.history_batch_view_name(model.name)) }}
{% endmacro %}


{% macro create_history_batch_view_sql(batch_view, changes_view, source_table, bucket, buckets) %}
    {{ return(adapter.dispatch('create_history_batch_view_sql', 'cdc_merge')(batch_view, changes_view, source_table, bucket, buckets)) }}
{% endmacro %}

{% macro spark__create_history_batch_view_sql(batch_view, changes_view, source_table, bucket, buckets) %}
    create or replace temporary view {{ batch_view }} as
    {{ cdc_merge.history_batch_events_sql(changes_view, source_table, bucket, buckets) }}
{% endmacro %}

{% macro databend__create_history_batch_view_sql(batch_view, changes_view, source_table, bucket, buckets) %}
    create or replace view {{ batch_view }} as
    {{ cdc_merge.history_batch_events_sql(changes_view, source_table, bucket, buckets) }}
{% endmacro %}


{% macro history_batch_events_sql(changes_view, source_table, bucket, buckets, keys_sql=none) %}
    {#- keys_sql: only the events of these keys (a query over table_events; unsent_columns.sql reads a mirror's so). -#}
    {{ return(adapter.dispatch('history_batch_events_sql', 'cdc_merge')(changes_view, source_table, bucket, buckets, keys_sql)) }}
{% endmacro %}

{% macro spark__history_batch_events_sql(changes_view, source_table, bucket, buckets, keys_sql) %}
    with

    {{ cdc_merge.history_event_copies_ctes(changes_view, source_table, bucket, buckets, keys_sql) }},

    final as (
        select
            key as _cdc_key,
            action as _cdc_action,
            seq as _cdc_seq,
            source_ts as _cdc_source_ts,
            coalesce(raw_data, before_data) as _cdc_row,
            {{ cdc_merge.spark__unavailable_fields_sql('raw_data') }} as _cdc_unavailable
        from copies
        where _cdc_copy = 1
    )

    select * from final
{% endmacro %}

{% macro databend__history_batch_events_sql(changes_view, source_table, bucket, buckets, keys_sql) %}
    {#- _cdc_unavailable is a string ',a,b,' as in cdc_merge's batch view (databend__batch_events_sql). -#}
    with

    {{ cdc_merge.history_event_copies_ctes(changes_view, source_table, bucket, buckets, keys_sql) }},

    unavailable as (
        select
            copies.key,
            copies.seq,
            ',' || string_agg(field.key, ',') || ',' as columns
        from copies, json_each(copies.raw_data) as field
        where
            copies._cdc_copy = 1
            and {{ cdc_merge.has_unavailable_sql('copies.raw_data') }}
            and field.value::string = '{{ cdc_merge.unavailable_marker() }}'
        group by copies.key, copies.seq
    ),

    final as (
        select
            copies.key as _cdc_key,
            copies.action as _cdc_action,
            copies.seq as _cdc_seq,
            copies.source_ts as _cdc_source_ts,
            coalesce(copies.raw_data, copies.before_data) as _cdc_row,
            coalesce(unavailable.columns, '') as _cdc_unavailable
        from copies
        left join unavailable
            on copies.key = unavailable.key and copies.seq = unavailable.seq
        where copies._cdc_copy = 1
    )

    select * from final
{% endmacro %}


{% macro history_event_copies_ctes(changes_view, source_table, bucket, buckets, keys_sql=none) %}
    {{ cdc_merge.table_events_cte(changes_view, source_table, bucket, buckets) }},

    copies as (
        select
            *,
            row_number() over (
                partition by key, seq order by landed_file desc, landed_line desc
            ) as _cdc_copy
        from table_events
        {%- if keys_sql is not none %}
        where key in ({{ keys_sql }})
        {%- endif %}
    )
{%- endmacro %}
