{#
    Reading the raw log incrementally: which raw snapshots are new for a target, and a
    view of the events they added, deduplicated to the newest event per key.
#}

{% macro current_raw_snapshot_sql(raw_relation) %}
    {{ return(adapter.dispatch('current_raw_snapshot_sql', 'cdc_merge')(raw_relation)) }}
{% endmacro %}

{% macro spark__current_raw_snapshot_sql(raw_relation) %}
    select cast(snapshot_id as string) as snapshot_id
    from {{ raw_relation }}.refs
    where name = 'main'
{% endmacro %}


{% macro databend__current_raw_snapshot_sql(raw_relation) %}
    {#- The snapshot no other snapshot names as its predecessor: the table's current one. -#}
    select snapshot_id
    from fuse_snapshot('{{ raw_relation.schema }}', '{{ raw_relation.identifier }}')
    where snapshot_id not in (
        select previous_snapshot_id
        from fuse_snapshot('{{ raw_relation.schema }}', '{{ raw_relation.identifier }}')
        where previous_snapshot_id is not null
    )
{% endmacro %}


{% macro raw_snapshots_sql(raw_relation) %}
    {{ return(adapter.dispatch('raw_snapshots_sql', 'cdc_merge')(raw_relation)) }}
{% endmacro %}

{% macro spark__raw_snapshots_sql(raw_relation) %}
    select
        cast(snapshot_id as string) as snapshot_id,
        cast(parent_id as string) as parent_id,
        operation,
        coalesce(cast(summary['added-records'] as bigint), 0) as added_records
    from {{ raw_relation }}.snapshots
{% endmacro %}


{% macro databend__raw_snapshots_sql(raw_relation) %}
    {#- The raw table is append-only: a snapshot added its row count minus its parent's. -#}
    select
        snapshot.snapshot_id,
        snapshot.previous_snapshot_id as parent_id,
        'append' as operation,
        snapshot.row_count - coalesce(parent.row_count, 0) as added_records
    from fuse_snapshot('{{ raw_relation.schema }}', '{{ raw_relation.identifier }}') as snapshot
    left join fuse_snapshot('{{ raw_relation.schema }}', '{{ raw_relation.identifier }}') as parent
        on snapshot.previous_snapshot_id = parent.snapshot_id
{% endmacro %}


{% macro pending_raw_snapshots(raw_relation, offset_snapshot, current_snapshot) %}
    {#-
        The snapshots after offset_snapshot up to current_snapshot, oldest first, found by
        walking parent links back from current. An offset that is not on that path has
        been expired (or the raw table was rebuilt): refuse rather than skip events.
    -#}
    {% set rows = run_query(cdc_merge.raw_snapshots_sql(raw_relation)).rows %}
    {% set by_id = {} %}
    {% for row in rows %}
        {% do by_id.update({row['snapshot_id']: row}) %}
    {% endfor %}
    {% set walk = namespace(cursor=current_snapshot, found=(offset_snapshot is none)) %}
    {% set newest_first = [] %}
    {% for _ in range(rows | length) %}
        {% if walk.cursor is not none and walk.cursor != offset_snapshot %}
            {% set snapshot = by_id.get(walk.cursor) %}
            {% if snapshot is none %}
                {% set walk.cursor = none %}
            {% else %}
                {% do newest_first.append({'snapshot_id': snapshot['snapshot_id'], 'added_records': snapshot['added_records'] | int}) %}
                {% set walk.cursor = snapshot['parent_id'] %}
            {% endif %}
        {% endif %}
    {% endfor %}
    {% if offset_snapshot is not none and walk.cursor != offset_snapshot %}
        {% do exceptions.raise_compiler_error(
            "cdc_merge model '" ~ model.name ~ "': its offset, snapshot " ~ offset_snapshot ~ " of " ~ raw_relation
            ~ ", is no longer in that table's history (expired snapshots, or the raw table was recreated), so the events"
            ~ " after it cannot be read incrementally. Rebuild the mirror from the whole log: dbt run --full-refresh --select "
            ~ model.name) %}
    {% endif %}
    {{ return(newest_first | reverse | list) }}
{% endmacro %}


{% macro chunks_of(pending, max_events, offset_snapshot) %}
    {#-
        Consecutive snapshots grouped into chunks of at most max_events raw events; a single
        snapshot larger than that is split into key-hash buckets of about max_events each.
        Each chunk reads the snapshots after 'after' (exclusive) through 'through'.
    -#}
    {% set chunks = [] %}
    {% set current = namespace(after=offset_snapshot, through=none, events=0) %}
    {% for snapshot in pending %}
        {% if current.through is not none and current.events + snapshot.added_records > max_events %}
            {% do chunks.append({'after': current.after, 'through': current.through, 'events': current.events}) %}
            {% set current.after = current.through %}
            {% set current.events = 0 %}
        {% endif %}
        {% set current.through = snapshot.snapshot_id %}
        {% set current.events = current.events + snapshot.added_records %}
    {% endfor %}
    {% if current.through is not none %}
        {% do chunks.append({'after': current.after, 'through': current.through, 'events': current.events}) %}
    {% endif %}
    {% for chunk in chunks %}
        {% do chunk.update({'buckets': [1, ((chunk.events + max_events - 1) // max_events)] | max}) %}
    {% endfor %}
    {{ return(chunks) }}
{% endmacro %}


{% macro create_raw_changes_view(view_name, raw_relation, after_snapshot, through_snapshot) %}
    {{ return(adapter.dispatch('create_raw_changes_view', 'cdc_merge')(view_name, raw_relation, after_snapshot, through_snapshot)) }}
{% endmacro %}

{% macro spark__create_raw_changes_view(view_name, raw_relation, after_snapshot, through_snapshot) %}
    {#-
        Iceberg's changelog scan reads only the data files those snapshots added. (The
        cdc_spark adapter has a faster way, see read_chunk.)
    -#}
    call system.create_changelog_view(
        table => '{{ raw_relation.schema }}.{{ raw_relation.identifier }}',
        options => map(
            {%- if after_snapshot is not none %}'start-snapshot-id', '{{ after_snapshot }}', {% endif -%}
            'end-snapshot-id', '{{ through_snapshot }}'
        ),
        changelog_view => '{{ view_name }}'
    )
{% endmacro %}


{% macro databend_raw_change_columns() %}
    {#- A chunk's raw events on Databend, with the _change_type column of Iceberg's changelog view. -#}
    select
        table_name,
        key,
        action,
        raw_data,
        before_data,
        seq,
        source_ts,
        landed_file,
        landed_line,
        'INSERT' as _change_type
{% endmacro %}


{% macro databend__create_raw_changes_view(view_name, raw_relation, after_snapshot, through_snapshot) %}
    {#-
        CHANGES on a change_tracking table reads only the rows appended after the AT
        snapshot (exclusive) up to the END snapshot; it works on open-source Databend.
        Copied into a scratch table: each bucket and round reads the chunk again, and
        Databend 1.2.453 panics (change_type.is_some()) when json_each joins a CHANGES scan.
    -#}
    create or replace transient table {{ view_name }} as
    {{ cdc_merge.databend_raw_change_columns() }}
    from {{ raw_relation }}
    {%- if after_snapshot is not none %}
        changes (information => append_only)
        at (snapshot => '{{ after_snapshot }}')
        end (snapshot => '{{ through_snapshot }}')
    {%- else %}
        at (snapshot => '{{ through_snapshot }}')
    {%- endif %}
{% endmacro %}


{#
    Databend streams (change_source='stream'; Databend Cloud or an Enterprise licence):
    one append-only stream per mirror, created at the raw snapshot the mirror has reached.
#}

{% macro change_stream_relation(target_relation) %}
    {{ return(target_relation.incorporate(path={'identifier': target_relation.identifier ~ '__cdc_stream'})) }}
{% endmacro %}


{% macro create_change_stream_sql(stream, raw_relation, at_snapshot) %}
    {{ return(adapter.dispatch('create_change_stream_sql', 'cdc_merge')(stream, raw_relation, at_snapshot)) }}
{% endmacro %}

{% macro default__create_change_stream_sql(stream, raw_relation, at_snapshot) %}
    {#- validate.sql refuses change_source='stream' on other engines; this is never reached. -#}
    {% do exceptions.raise_compiler_error("change_source='stream' needs a Databend target") %}
{% endmacro %}

{% macro databend__create_change_stream_sql(stream, raw_relation, at_snapshot) %}
    create stream {{ stream }}
    on table {{ raw_relation }}
    {%- if at_snapshot is not none %}
    at (snapshot => '{{ at_snapshot }}')
    {%- endif %}
    append_only = true
{% endmacro %}


{% macro create_raw_changes_from_stream_sql(view_name, raw_relation, stream) %}
    {{ return(adapter.dispatch('create_raw_changes_from_stream_sql', 'cdc_merge')(view_name, raw_relation, stream)) }}
{% endmacro %}

{% macro default__create_raw_changes_from_stream_sql(view_name, raw_relation, stream) %}
    {% do exceptions.raise_compiler_error("change_source='stream' needs a Databend target") %}
{% endmacro %}

{% macro databend__create_raw_changes_from_stream_sql(view_name, raw_relation, stream) %}
    {#- Reading a stream in a statement that writes, inside the open transaction, consumes it at commit. -#}
    create or replace transient table {{ view_name }} as
    {{ cdc_merge.databend_raw_change_columns() }}
    from {{ stream }}
{% endmacro %}


{#
    Debezium writes '__debezium_unavailable_value' for Postgres TOAST columns an update did
    not change. The MERGE keeps the stored value of such a column, which is only right if
    every earlier event of that key in the batch is applied first: keys with a placeholder
    are applied one event per round, oldest first; all other keys apply their newest event
    in round 1.
#}

{% macro unavailable_marker() %}
    {{- return('__debezium_unavailable_value') -}}
{% endmacro %}


{% macro bucket_plan_sql(changes_view, source_table, bucket, buckets) %}
    {#-
        What applying one bucket of a chunk needs first, in one pass over its events: their count,
        their key range, hex-encoded ('' when the bucket is empty) so that any key text comes back
        as a literal without quoting (cdc_merge.key_range_of), and how many carry TOAST placeholders
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


{% macro bucket_rounds(changes_view, source_table, bucket, buckets, plan) %}
    {#-
        How many rounds the bucket's keys need (TOAST placeholders, below): 1 unless some of its
        events carry placeholders (plan: its bucket_plan_sql row). Asked only then: over 1M events
        the plan with this query took 0.74 s, the one pass alone 0.52 s (BENCHMARKS.md, "Applied since (8)").
    -#}
    {% if (plan['placeholder_events'] | int) == 0 %}
        {{ return(1) }}
    {% endif %}
    {% set rounds_sql %}
        with

        {{ cdc_merge.table_events_cte(changes_view, source_table, bucket, buckets) }},

        {#- Only the keys with placeholders are counted: grouping every key of a large batch took seconds. #}
        keys_with_placeholders as (
            select distinct key
            from table_events
            where {{ cdc_merge.has_unavailable_sql('raw_data') }}
        ),

        events_per_key as (
            select count(*) as events
            from table_events
            where key in (select key from keys_with_placeholders)
            group by key
        )

        select coalesce(max(events), 1) as rounds
        from events_per_key
    {% endset %}
    {{ return(run_query(rounds_sql).rows[0]['rounds'] | int) }}
{% endmacro %}


{% macro key_range_max_events() %}
    {#-
        Above this many events in a bucket the key range is left out: at 1M events it skipped no
        file in the benchmarks and its check of every stored key cost 3-4 s (BENCHMARKS.md,
        "Applied since (5)"); at 10k events of recent keys it halved the mirror's reads.
    -#}
    {{ return(100000) }}
{% endmacro %}


{% macro key_range_of(plan) %}
    {#-
        The key range of a bucket_plan_sql row: {'min_hex', 'max_hex'}, or none for an empty bucket
        or one of more than key_range_max_events() events.
    -#}
    {% set bounds = {'min_hex': plan['min_key_hex'] | string, 'max_hex': plan['max_key_hex'] | string} %}
    {% if bounds.min_hex == '' or (plan['events'] | int) > cdc_merge.key_range_max_events() %}
        {{ return(none) }}
    {% endif %}
    {% for value in bounds.values() %}
        {% if not modules.re.fullmatch('[0-9A-Fa-f]+', value) %}
            {% do exceptions.raise_compiler_error("cdc_merge model '" ~ model.name ~ "': the engine's hex() gave '" ~ value ~ "' for a key bound") %}
        {% endif %}
    {% endfor %}
    {{ return(bounds) }}
{% endmacro %}


{% macro table_events_cte(changes_view, source_table, bucket, buckets) %}
    table_events as (
        select *
        from {{ changes_view }}
        where
            _change_type = 'INSERT'
            and table_name = '{{ source_table }}'
            {%- if buckets > 1 %}
            and {{ cdc_merge.key_bucket_sql('key', buckets) }} = {{ bucket }}
            {%- endif %}
    )
{%- endmacro %}


{% macro batch_keys_sql(changes_view, source_table, bucket, buckets) %}
    {#-
        Every key with an event in this bucket of the chunk: a superset of the keys of any round. A key
        with several events comes several times: Spark's semi join needs no distinct keys, and making
        them distinct took 0.3 s of the classification at 1M events (BENCHMARKS.md "Applied since (9)").
    -#}
    with

    {{ cdc_merge.table_events_cte(changes_view, source_table, bucket, buckets) }}

    select key as _cdc_key
    from table_events
{% endmacro %}


{% macro key_bucket_sql(column, buckets) %}
    {{ return(adapter.dispatch('key_bucket_sql', 'cdc_merge')(column, buckets)) }}
{% endmacro %}

{% macro spark__key_bucket_sql(column, buckets) -%}
    pmod(hash({{ column }}), {{ buckets }})
{%- endmacro %}

{% macro databend__key_bucket_sql(column, buckets) -%}
    city64withseed({{ column }}, 0) % {{ buckets }}
{%- endmacro %}


{% macro has_unavailable_sql(column) %}
    {{ return(adapter.dispatch('has_unavailable_sql', 'cdc_merge')(column)) }}
{% endmacro %}

{% macro spark__has_unavailable_sql(column) -%}
    {#- contains() compares bytes; instr() counts characters: over 1M images 0.19-0.20 s against 0.37-0.53 s (BENCHMARKS.md, "Applied since (8)"). -#}
    contains(coalesce({{ column }}, ''), '{{ cdc_merge.unavailable_marker() }}')
{%- endmacro %}

{% macro databend__has_unavailable_sql(column) -%}
    position('{{ cdc_merge.unavailable_marker() }}' in coalesce(to_string({{ column }}), '')) > 0
{%- endmacro %}


{% macro ranked_events_cte(rounds) %}
    {#-
        Each event of table_events with its rank in its key (newest first), and whether the key
        has placeholders (1/0). With a single round (rounds = 1) every key applies its newest
        event, so only the rank is computed (0.5 s less at 1M events).
    -#}
    ranked as (
        select
            *,
            row_number() over (
                partition by key order by seq desc, landed_file desc, landed_line desc
            ) as _cdc_rank
            {%- if rounds != 1 %},
            count(*) over (partition by key) as _cdc_events,
            max(case when {{ cdc_merge.has_unavailable_sql('raw_data') }} then 1 else 0 end) over (partition by key)
                as _cdc_has_placeholders
            {%- endif %}
        from table_events
    )
{%- endmacro %}


{% macro in_round_sql(round, rounds) -%}
    {#- The newest event of a key in round 1; for keys with placeholders every event, oldest first, one per round. -#}
    {%- if rounds == 1 %}
    _cdc_rank = 1
    {%- else %}
    (
        (_cdc_has_placeholders = 0 and _cdc_rank = 1 and {{ round }} = 1)
        or (_cdc_has_placeholders = 1 and _cdc_events - _cdc_rank + 1 = {{ round }})
    )
    {%- endif %}
{%- endmacro %}


{% macro create_batch_view_sql(batch_view, changes_view, source_table, bucket, buckets, round=1, rounds=none) %}
    {#- rounds: how many the bucket needs (bucket_plan_sql); none when not known. -#}
    {{ return(adapter.dispatch('create_batch_view_sql', 'cdc_merge')(batch_view, changes_view, source_table, bucket, buckets, round, rounds)) }}
{% endmacro %}

{% macro spark__create_batch_view_sql(batch_view, changes_view, source_table, bucket, buckets, round, rounds) %}
    create or replace temporary view {{ batch_view }} as
    with

    {{ cdc_merge.table_events_cte(changes_view, source_table, bucket, buckets) }},

    {{ cdc_merge.ranked_events_cte(rounds) }},

    final as (
        select
            key as _cdc_key,
            action as _cdc_action,
            seq as _cdc_seq,
            source_ts as _cdc_source_ts,
            coalesce(raw_data, before_data) as _cdc_row,
            case
                when {{ cdc_merge.has_unavailable_sql('raw_data') }}
                    then map_keys(map_filter(
                        from_json(raw_data, 'map<string, string>'),
                        (_, value) -> value = '{{ cdc_merge.unavailable_marker() }}'
                    ))
                else cast(array() as array<string>)
            end as _cdc_unavailable
        from ranked
        where {{ cdc_merge.in_round_sql(round, rounds) }}
    )

    select * from final
{% endmacro %}


{% macro databend__create_batch_view_sql(batch_view, changes_view, source_table, bucket, buckets, round, rounds) %}
    {#-
        Views are not temporary on Databend: the view lives in the model's schema until the
        run drops it. _cdc_unavailable is a string ',a,b,': a nullable array does not
        unify with array_contains there.
    -#}
    create or replace view {{ batch_view }} as
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
    select
        cast(null as string) as _cdc_key,
        cast(null as string) as _cdc_action,
        cast(null as string) as _cdc_seq,
        cast(null as timestamp) as _cdc_source_ts,
        cast(null as string) as _cdc_row,
        cast(array() as array<string>) as _cdc_unavailable
    where false
{% endmacro %}

{% macro databend__create_empty_batch_view_sql(batch_view) %}
    create or replace view {{ batch_view }} as
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
