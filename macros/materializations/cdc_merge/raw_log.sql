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
    {#- Iceberg's incremental changelog scan reads only the data files those snapshots added. -#}
    call system.create_changelog_view(
        table => '{{ raw_relation.schema }}.{{ raw_relation.identifier }}',
        options => map(
            {%- if after_snapshot is not none %}'start-snapshot-id', '{{ after_snapshot }}', {% endif -%}
            'end-snapshot-id', '{{ through_snapshot }}'
        ),
        changelog_view => '{{ view_name }}'
    )
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


{% macro batch_rounds_sql(changes_view, source_table, bucket, buckets) %}
    with

    {{ cdc_merge.table_events_cte(changes_view, source_table, bucket, buckets) }},

    keys_with_placeholders as (
        select count(*) as events
        from table_events
        group by key
        having max(instr(coalesce(raw_data, ''), '{{ cdc_merge.unavailable_marker() }}')) > 0
    )

    select coalesce(max(events), 1) as rounds
    from keys_with_placeholders
{% endmacro %}


{% macro table_events_cte(changes_view, source_table, bucket, buckets) %}
    table_events as (
        select *
        from {{ changes_view }}
        where
            _change_type = 'INSERT'
            and table_name = '{{ source_table }}'
            {%- if buckets > 1 %}
            and pmod(hash(key), {{ buckets }}) = {{ bucket }}
            {%- endif %}
    )
{%- endmacro %}


{% macro create_batch_view_sql(batch_view, changes_view, source_table, bucket, buckets, round=1) %}
    create or replace temporary view {{ batch_view }} as
    with

    {{ cdc_merge.table_events_cte(changes_view, source_table, bucket, buckets) }},

    ranked as (
        select
            *,
            row_number() over (
                partition by key order by seq desc, landed_file desc, landed_line desc
            ) as _cdc_rank,
            count(*) over (partition by key) as _cdc_events,
            max(instr(coalesce(raw_data, ''), '{{ cdc_merge.unavailable_marker() }}')) over (partition by key) > 0
                as _cdc_has_placeholders
        from table_events
    ),

    final as (
        select
            key as _cdc_key,
            action as _cdc_action,
            seq as _cdc_seq,
            source_ts as _cdc_source_ts,
            coalesce(raw_data, before_data) as _cdc_row,
            case
                when instr(coalesce(raw_data, ''), '{{ cdc_merge.unavailable_marker() }}') > 0
                    then map_keys(map_filter(
                        from_json(raw_data, 'map<string, string>'),
                        (_, value) -> value = '{{ cdc_merge.unavailable_marker() }}'
                    ))
                else cast(array() as array<string>)
            end as _cdc_unavailable
        from ranked
        where
            (not _cdc_has_placeholders and _cdc_rank = 1 and {{ round }} = 1)
            or (_cdc_has_placeholders and _cdc_events - _cdc_rank + 1 = {{ round }})
    )

    select * from final
{% endmacro %}


{% macro create_empty_batch_view_sql(batch_view) %}
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
