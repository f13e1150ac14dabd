{#
    One bucket of a chunk's raw events, deduplicated to the newest event per key: the batch
    view the model selects from (create_batch_view_sql). bucket_plan_sql sizes the bucket first.

    Debezium writes a placeholder for Postgres TOAST columns an update did not change
    (unavailable_values.sql). The MERGE keeps the stored value of such a column, which is only
    right if every earlier event of that key in the batch that sent it is applied first: keys with
    a placeholder are applied one event per round, oldest first, skipping an event whose next newer
    event sends every field it sends (applying that one alone leaves the same row); all other keys
    apply their newest event in the first round. A small range the cdc_spark adapter holds in the
    driver needs no rounds: its dedup fills each newest event's placeholders from the key's older
    events there (newest_events_view, LocalRawRanges.java).
#}

{% macro bucket_plan_sql(changes_view, source_table, bucket, buckets) %}
    {#-
        What applying one bucket of a chunk needs first, in one pass over its events: their count,
        their key range, hex-encoded ('' when the bucket is empty) so that any key text comes back
        as a literal without quoting (python_jobs/apply/key_range.py), and how many carry TOAST placeholders
        (bucket_rounds).
    -#}
    with

    {{ cdc_merge.table_events_cte(changes_view, source_table, bucket, buckets) }}

    select
        count(*) as events,
        coalesce(hex(min(key)), '') as min_key_hex,
        coalesce(hex(max(key)), '') as max_key_hex,
        count_if({{ cdc_merge.has_unavailable_sql('raw_data') }}) as placeholder_events
    from table_events
{% endmacro %}


{% macro bucket_rounds(changes_view, source_table, bucket, buckets, plan, deduplicated=false) %}
    {#-
        How many rounds the bucket's keys need (TOAST placeholders, below): 1 unless some of its
        events carry placeholders (plan: its bucket_plan_sql row), or when the batch reads the
        newest events deduplicated in the driver, which filled them from older events (deduplicated,
        newest_events_view). Asked only then: over 1M events the plan with this query took 0.74 s,
        the one pass alone 0.52 s (BENCHMARKS.md, "Levers tried").
    -#}
    {% if deduplicated or (plan['placeholder_events'] | int) == 0 %}
        {{ return(1) }}
    {% endif %}
    {% set rounds_sql %}
        with

        {{ cdc_merge.table_events_cte(changes_view, source_table, bucket, buckets) }},

        {#- Only the keys with placeholders are ranked: grouping every key of a large batch took seconds. #}
        keys_with_placeholders as (
            select distinct key
            from table_events
            where {{ cdc_merge.has_unavailable_sql('raw_data') }}
        ),

        placeholder_key_events as (
            select *
            from table_events
            where key in (select key from keys_with_placeholders)
        ),

        {{ cdc_merge.ranked_events_cte(none, 'placeholder_key_events') }}

        select coalesce(max(_cdc_round), 1) as rounds
        from ranked
    {% endset %}
    {{ return(run_query(rounds_sql).rows[0]['rounds'] | int) }}
{% endmacro %}


{% macro table_events_cte(changes_view, source_table, bucket, buckets) %}
    table_events as (
        select *
        from {{ changes_view }}
        where
            _change_type = 'INSERT'
            and table_name = '{{ source_table }}'
            {#- Truncates, schema changes and snapshot ranges are the table's, not a key's (truncate.sql, column_defaults.sql, snapshot_ranges.sql). #}
            and action not in ('truncate', 'schema', 'range')
            {%- if buckets > 1 %}
            and {{ cdc_merge.key_bucket_sql('key', buckets) }} = {{ bucket }}
            {%- endif %}
    )
{%- endmacro %}


{% macro key_bucket_sql(column, buckets) %}
    {{ return(adapter.dispatch('key_bucket_sql', 'cdc_merge')(column, buckets)) }}
{% endmacro %}

{% macro spark__key_bucket_sql(column, buckets) -%}
    pmod(hash({{ column }}), {{ buckets }})
{%- endmacro %}

{% macro databend__key_bucket_sql(column, buckets) -%}
    city64withseed({{ column }}, 0) % {{ buckets }}
{%- endmacro %}


{% macro ranked_events_cte(rounds, events='table_events') %}
    {#-
        Each event of events with its rank in its key (newest first). With a single round
        (rounds = 1) every key applies its newest event, so only the rank is computed (0.5 s less
        at 1M events). Otherwise also whether the key has placeholders (1/0), whether the event is
        superseded (its next newer event sends every field it sends) and the round of each event
        that is not (_cdc_round, oldest first): a MERGE per round took 2-4 s, and a key updated
        often without its TOAST value took a round per update.
    -#}
    {%- if rounds == 1 %}
    ranked as (
        select
            *,
            row_number() over (
                partition by key order by seq desc, landed_file desc, landed_line desc
            ) as _cdc_rank
        from {{ events }}
    )
    {%- else %}
    {%- set superseded = "_cdc_rank > 1 and " ~ cdc_merge.sends_every_field_of_sql('_cdc_newer_data', 'raw_data') %}
    events_in_order as (
        select
            *,
            row_number() over (
                partition by key order by seq desc, landed_file desc, landed_line desc
            ) as _cdc_rank,
            lag(raw_data) over (
                partition by key order by seq desc, landed_file desc, landed_line desc
            ) as _cdc_newer_data,
            max(case when {{ cdc_merge.has_unavailable_sql('raw_data') }} then 1 else 0 end) over (partition by key)
                as _cdc_has_placeholders
        from {{ events }}
    ),

    ranked as (
        select
            *,
            {{ superseded }} as _cdc_superseded,
            {#- The events not superseded from this one back to the oldest: the same order as the rank's, so no sort of its own. #}
            sum(case when {{ superseded }} then 0 else 1 end) over (
                partition by key order by seq desc, landed_file desc, landed_line desc
                rows between current row and unbounded following
            ) as _cdc_round
        from events_in_order
    )
    {%- endif %}
{%- endmacro %}


{% macro in_round_sql(round, rounds) -%}
    {#- The newest event of a key in the first round; for keys with placeholders each event not superseded, oldest first, one per round. -#}
    {%- if rounds == 1 %}
    _cdc_rank = 1
    {%- else %}
    (
        (_cdc_has_placeholders = 0 and _cdc_rank = 1 and {{ round }} = 1)
        or (_cdc_has_placeholders = 1 and not _cdc_superseded and _cdc_round = {{ round }})
    )
    {%- endif %}
{%- endmacro %}


{% macro newest_events_view(chunk, raw_changes_view, cfg, plan, whole_range, stored=[]) %}
    {#-
        The chunk's newest event per source table and key as a view (its name), deduplicated once
        for all the mirrors of a small range the cdc_spark adapter keeps in the driver, its TOAST
        placeholders filled from older events, where it stands in for the mirror's own dedup
        (shared_dedup.py): the batch view then runs no window, the classification no shuffle, and a
        key with placeholders no rounds where every event of the range is newer than what stored (the
        mirror and its tombstones) holds. none otherwise.
    -#}
    {{ return(adapter.dispatch('newest_events_view', 'cdc_merge')(chunk, raw_changes_view, cfg, plan, whole_range, stored)) }}
{% endmacro %}

{% macro spark__newest_events_view(chunk, raw_changes_view, cfg, plan, whole_range, stored) %}
    {% set view_name = raw_changes_view ~ '__newest' %}
    {% if chunk.stream is not defined and adapter.create_newest_events_view(view_name,
            cfg.raw_relation.schema ~ '.' ~ cfg.raw_relation.identifier, chunk.after, chunk.through, plan, chunk.buckets, whole_range,
            stored) %}
        {{ return(view_name) }}
    {% endif %}
    {{ return(none) }}
{% endmacro %}

{% macro databend__newest_events_view(chunk, raw_changes_view, cfg, plan, whole_range, stored) %}
    {{ return(none) }}
{% endmacro %}

{% macro drop_newest_events_view(raw_changes_view) %}
    {{ return(adapter.dispatch('drop_newest_events_view', 'cdc_merge')(raw_changes_view)) }}
{% endmacro %}

{% macro spark__drop_newest_events_view(raw_changes_view) %}
    {% do adapter.cdc_drop_temporary_view(raw_changes_view ~ '__newest') %}
{% endmacro %}

{% macro databend__drop_newest_events_view(raw_changes_view) %}
{% endmacro %}


{% macro create_batch_view_sql(batch_view, changes_view, source_table, bucket, buckets, round=1, rounds=none, deduplicated=false) %}
    {#-
        rounds: how many the bucket needs (bucket_plan_sql); none when not known. deduplicated:
        changes_view holds only the newest event per key already (the cdc_spark adapter's
        create_newest_events_view, once for all the mirrors of a small range).
    -#}
    {{ return(adapter.dispatch('create_batch_view_sql', 'cdc_merge')(batch_view, changes_view, source_table, bucket, buckets, round, rounds, deduplicated)) }}
{% endmacro %}

{% macro spark__create_batch_view_sql(batch_view, changes_view, source_table, bucket, buckets, round, rounds, deduplicated) %}
    create or replace temporary view {{ batch_view }} as
    {{ cdc_merge.batch_events_sql(changes_view, source_table, bucket, buckets, round, rounds, deduplicated) }}
{% endmacro %}

{% macro databend__create_batch_view_sql(batch_view, changes_view, source_table, bucket, buckets, round, rounds, deduplicated) %}
    {#- Views are not temporary on Databend: the view lives in the model's schema until the run drops it. -#}
    create or replace view {{ batch_view }} as
    {{ cdc_merge.batch_events_sql(changes_view, source_table, bucket, buckets, round, rounds, deduplicated) }}
{% endmacro %}


{% macro batch_events_sql(changes_view, source_table, bucket, buckets, round=1, rounds=none, deduplicated=false) %}
    {#- The batch view's query: also what dbt show and dbt compile put in place of cdc_events() (preview.sql). -#}
    {{ return(adapter.dispatch('batch_events_sql', 'cdc_merge')(changes_view, source_table, bucket, buckets, round, rounds, deduplicated)) }}
{% endmacro %}

{% macro spark__batch_events_sql(changes_view, source_table, bucket, buckets, round, rounds, deduplicated) %}
    with

    {{ cdc_merge.table_events_cte(changes_view, source_table, bucket, buckets) }},

    {% if deduplicated -%}
    {#- Each key's newest event, deduplicated once for every mirror of the range: no window of the mirror's own. -#}
    ranked as (
        select * from table_events
    ),
    {%- else -%}
    {{ cdc_merge.ranked_events_cte(rounds) }},
    {%- endif %}

    final as (
        select
            key as _cdc_key,
            action as _cdc_action,
            seq as _cdc_seq,
            source_ts as _cdc_source_ts,
            coalesce(raw_data, before_data) as _cdc_row,
            {{ cdc_merge.spark__unavailable_fields_sql('raw_data') }} as _cdc_unavailable
        from ranked
        {%- if not deduplicated %}
        where {{ cdc_merge.in_round_sql(round, rounds) }}
        {%- endif %}
    )

    select * from final
{% endmacro %}


{% macro databend__batch_events_sql(changes_view, source_table, bucket, buckets, round, rounds, deduplicated) %}
    {#- deduplicated is never set on Databend (the cdc_spark adapter's shared dedup). -#}
    {#- _cdc_unavailable is a string ',a,b,': a nullable array does not unify with array_contains there. -#}
    with

    {{ cdc_merge.table_events_cte(changes_view, source_table, bucket, buckets) }},

    {{ cdc_merge.ranked_events_cte(rounds) }},

    picked as (
        select *
        from ranked
        where {{ cdc_merge.in_round_sql(round, rounds) }}
    ),

    unavailable as (
        select
            picked.key,
            ',' || string_agg(field.key, ',') || ',' as columns
        from picked, json_each(picked.raw_data) as field
        where
            {{ cdc_merge.has_unavailable_sql('picked.raw_data') }}
            and field.value::string = '{{ cdc_merge.unavailable_marker() }}'
        group by picked.key
    ),

    final as (
        select
            picked.key as _cdc_key,
            picked.action as _cdc_action,
            picked.seq as _cdc_seq,
            picked.source_ts as _cdc_source_ts,
            coalesce(picked.raw_data, picked.before_data) as _cdc_row,
            coalesce(unavailable.columns, '') as _cdc_unavailable
        from picked
        left join unavailable
            on picked.key = unavailable.key
    )

    select * from final
{% endmacro %}


{% macro create_empty_batch_view_sql(batch_view) %}
    {{ return(adapter.dispatch('create_empty_batch_view_sql', 'cdc_merge')(batch_view)) }}
{% endmacro %}

{% macro spark__create_empty_batch_view_sql(batch_view) %}
    create or replace temporary view {{ batch_view }} as
    {{ cdc_merge.empty_batch_events_sql() }}
{% endmacro %}

{% macro databend__create_empty_batch_view_sql(batch_view) %}
    create or replace view {{ batch_view }} as
    {{ cdc_merge.empty_batch_events_sql() }}
{% endmacro %}


{% macro empty_batch_events_sql() %}
    {{ return(adapter.dispatch('empty_batch_events_sql', 'cdc_merge')()) }}
{% endmacro %}

{% macro spark__empty_batch_events_sql() %}
    select
        cast(null as string) as _cdc_key,
        cast(null as string) as _cdc_action,
        cast(null as string) as _cdc_seq,
        cast(null as timestamp) as _cdc_source_ts,
        cast(null as string) as _cdc_row,
        cast(array() as array<string>) as _cdc_unavailable
    where false
{% endmacro %}

{% macro databend__empty_batch_events_sql() %}
    select
        cast(null as string) as _cdc_key,
        cast(null as string) as _cdc_action,
        cast(null as string) as _cdc_seq,
        cast(null as timestamp) as _cdc_source_ts,
        cast(null as variant) as _cdc_row,
        '' as _cdc_unavailable
    from (select 1) as nothing
    where 1 = 0
{% endmacro %}
