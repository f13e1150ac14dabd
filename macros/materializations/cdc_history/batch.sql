{#
    What cdc_events() stands for in a cdc_history model: every event of the batch, not only
    the newest per key, one row per (key, seq) (a replayed or re-landed copy of an event is the
    same change), with the columns of cdc_merge's batch view. The model's SQL runs over it, so
    each of its rows is one event's values; the chain of versions is built from them (chain.sql).
    Unchanged Postgres TOAST values are not filled in: _cdc_unavailable is always empty here.
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


{% macro history_batch_events_sql(changes_view, source_table, bucket, buckets) %}
    with

    {{ cdc_merge.table_events_cte(changes_view, source_table, bucket, buckets) }},

    copies as (
        select
            *,
            row_number() over (
                partition by key, seq order by landed_file desc, landed_line desc
            ) as _cdc_copy
        from table_events
    ),

    final as (
        select
            key as _cdc_key,
            action as _cdc_action,
            seq as _cdc_seq,
            source_ts as _cdc_source_ts,
            coalesce(raw_data, before_data) as _cdc_row,
            {{ cdc_merge.no_unavailable_columns_sql() }} as _cdc_unavailable
        from copies
        where _cdc_copy = 1
    )

    select * from final
{% endmacro %}


{% macro no_unavailable_columns_sql() %}
    {{ return(adapter.dispatch('no_unavailable_columns_sql', 'cdc_merge')()) }}
{% endmacro %}

{% macro spark__no_unavailable_columns_sql() -%}
    cast(array() as array<string>)
{%- endmacro %}

{% macro databend__no_unavailable_columns_sql() -%}
    ''
{%- endmacro %}
