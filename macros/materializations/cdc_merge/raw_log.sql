{#
    Reading the raw log incrementally: which raw snapshots are new for a mirror
    (pending_raw_snapshots), grouped into chunks of bounded size (chunks_of), and the events
    a chunk added, as a scratch relation (read_chunk). dedup.sql then keeps the newest event
    per key; change_stream.sql reads a Databend stream instead of snapshots.
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


{% macro raw_snapshot_log(raw_relation, current_snapshot=none) %}
    {#-
        The raw table's current snapshot ('current', none when it has none) and its snapshots
        ('snapshots', rows of raw_snapshots_sql). The cdc_spark adapter reads them from Iceberg's
        metadata in the JVM, without a statement; elsewhere two queries on the metadata tables, or
        one where the caller read the current snapshot already (current_snapshot: the idle check's).
    -#}
    {% set listed = adapter.cdc_snapshot_log(raw_relation.schema ~ '.' ~ raw_relation.identifier) if cdc_merge.capabilities().iceberg_helpers else none %}
    {% if listed is not none %}
        {{ return(listed) }}
    {% endif %}
    {% if current_snapshot is none %}
        {% set current = run_query(cdc_merge.current_raw_snapshot_sql(raw_relation)).rows %}
        {% set current_snapshot = current[0]['snapshot_id'] if current | length else none %}
    {% endif %}
    {{ return({
        'current': current_snapshot,
        'snapshots': run_query(cdc_merge.raw_snapshots_sql(raw_relation)).rows if current_snapshot is not none else [],
    }) }}
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


{% macro pending_raw_snapshots(raw_relation, offset_snapshot, snapshot_log) %}
    {#-
        The snapshots after offset_snapshot up to the current one of snapshot_log (raw_snapshot_log),
        oldest first; decided in python_jobs/apply/chunk_plan.py. An offset no longer in the raw
        table's history is refused rather than skip events.
    -#}
    {% set plan = adapter.cdc_pending_snapshots(snapshot_log, offset_snapshot) %}
    {% if plan.expired %}
        {% do cdc_merge.raise_expired_offset(raw_relation, offset_snapshot) %}
    {% endif %}
    {{ return(plan.pending) }}
{% endmacro %}


{% macro raise_expired_offset(raw_relation, offset_snapshot) %}
    {#- The mirror's offset is not on the raw table's history: refuse rather than skip events. -#}
    {% do exceptions.raise_compiler_error(
        "cdc_merge model '" ~ model.name ~ "': its offset, snapshot " ~ offset_snapshot ~ " of " ~ raw_relation
        ~ ", is no longer in that table's history (expired snapshots, or the raw table was recreated), so the events"
        ~ " after it cannot be read incrementally. Rebuild the mirror from the whole log: dbt run --full-refresh --select "
        ~ model.name) %}
{% endmacro %}


{% macro chunks_of(pending, max_events, offset_snapshot, raw_relation=none, source_table=none) %}
    {#-
        pending in chunks of at most max_events raw events, {'after', 'through', 'events',
        'buckets'}; decided in python_jobs/apply/chunk_plan.py, which counts only source_table's
        events of raw_relation where the adapter can tell the tables apart.
    -#}
    {% set raw_table = raw_relation.schema ~ '.' ~ raw_relation.identifier if raw_relation is not none else none %}
    {{ return(adapter.cdc_chunks_of(pending, max_events, offset_snapshot, raw_table, source_table)) }}
{% endmacro %}


{% macro read_chunk(chunk, raw_changes_view, cfg) %}
    {#- The raw events of one chunk, as the scratch relation raw_changes_view. -#}
    {% if chunk.stream is defined %}
        {% do run_query(cdc_merge.create_raw_changes_from_stream_sql(raw_changes_view, cfg.raw_relation, chunk.stream)) %}
    {% elif cdc_merge.capabilities().iceberg_helpers and adapter.create_appended_rows_view(raw_changes_view, cfg.raw_relation.schema ~ '.' ~ cfg.raw_relation.identifier, chunk.after, chunk.through, chunk.get('range_events', chunk.events)) %}
        {#- Made by the adapter in dbt's own SparkSession: an incremental append scan, no changelog sort; a small range read once for every mirror. -#}
    {% else %}
        {% do run_query(cdc_merge.create_raw_changes_view(raw_changes_view, cfg.raw_relation, chunk.after, chunk.through)) %}
    {% endif %}
{% endmacro %}


{% macro chunk_plan(chunk, cfg, raw_changes_view=none, chunk_view=none) %}
    {#-
        What the mirror needs to know of a chunk read by read_chunk before applying it, from one pass
        over the range for every source table (the cdc_spark adapter's range_plan.py): {'events',
        'min_key_hex', 'max_key_hex', 'placeholder_events'} as bucket_plan_sql gives them for the whole
        chunk, {'truncate_seq', 'truncate_source_ts'} as chunk_truncate_sql, and 'fields' as
        unmapped_columns samples them. none where not known: the caller asks with its own queries.
    -#}
    {% if not cdc_merge.capabilities().iceberg_helpers or chunk.stream is defined %}
        {{ return(none) }}
    {% endif %}
    {% if chunk_view is not none and chunk_view != raw_changes_view %}
        {#- A consistency group's chunk without its deferred transactions (consistency.sql): one pass over that view. -#}
        {{ return(adapter.cdc_view_plan(chunk_view, cfg.source_table)) }}
    {% endif %}
    {{ return(adapter.cdc_range_plan(cfg.raw_relation.schema ~ '.' ~ cfg.raw_relation.identifier, chunk.after, chunk.through, cfg.source_table)) }}
{% endmacro %}


{% macro chunk_facts(chunk_plan, changes_view, cfg) %}
    {#-
        chunk_plan's answers where the one pass over the range gave them; otherwise, on Spark, the
        same from one query over the chunk's view (chunk_plan_sql) instead of the query each step
        would run over it: the key range, the truncate, the added columns' defaults, the snapshot
        ranges and the image fields. none on Databend, whose steps run their own.
    -#}
    {% if chunk_plan is not none %}
        {{ return(chunk_plan) }}
    {% endif %}
    {{ return(adapter.dispatch('chunk_facts_by_query', 'cdc_merge')(changes_view, cfg)) }}
{% endmacro %}

{% macro spark__chunk_facts_by_query(changes_view, cfg) %}
    {% set found = run_query(cdc_merge.chunk_plan_sql(changes_view, cfg.source_table)) %}
    {{ return(adapter.cdc_plan_of_query(found.column_names | list, found.rows[0] | list)) }}
{% endmacro %}

{% macro databend__chunk_facts_by_query(changes_view, cfg) %}
    {{ return(none) }}
{% endmacro %}


{% macro chunk_plan_sql(changes_view, source_table) %}
    {#- The columns of range_plan.py range_plan_frame for one source table, its lists as JSON text. -#}
    select
        count_if(action not in ('truncate', 'schema', 'range')) as events,
        coalesce(hex(min(case when action not in ('truncate', 'schema', 'range') then key end)), '') as min_key_hex,
        coalesce(hex(max(case when action not in ('truncate', 'schema', 'range') then key end)), '') as max_key_hex,
        count_if(action not in ('truncate', 'schema', 'range') and {{ cdc_merge.has_unavailable_sql('raw_data') }}) as placeholder_events,
        coalesce(max(case when action = 'truncate' then seq end), '') as truncate_seq,
        coalesce(cast(max(case when action = 'truncate' then source_ts end) as string), '') as truncate_source_ts,
        to_json(collect_list(case when action = 'schema' and raw_data like '%"existing_rows":%' then array(seq, raw_data) end))
            as column_defaults,
        to_json(collect_list(case when action = 'range' then array(seq, raw_data) end)) as snapshot_ranges,
        to_json(array_distinct(flatten(collect_set(
            case when action in ('insert', 'update', 'read') and raw_data is not null then json_object_keys(raw_data) end
        )))) as fields,
        coalesce(min(seq), '') as oldest_seq
    from {{ changes_view }}
    where _change_type = 'INSERT' and table_name = '{{ source_table }}'
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
        tx_id,
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


{% macro drop_scratch(name) %}
    {#- The per-run raw changes: a temporary view on Spark, a transient table on Databend. -#}
    {{ return(adapter.dispatch('drop_scratch', 'cdc_merge')(name)) }}
{% endmacro %}

{% macro spark__drop_scratch(name) %}
    {% do cdc_merge.drop_temporary_view(name) %}
{% endmacro %}

{% macro databend__drop_scratch(name) %}
    {% do run_query('drop table if exists ' ~ name) %}
{% endmacro %}


{% macro drop_temporary_view(name) %}
    {#- A view of this run only (Spark's temporary views; the batch view, a view on Databend). -#}
    {{ return(adapter.dispatch('drop_temporary_view', 'cdc_merge')(name)) }}
{% endmacro %}

{% macro spark__drop_temporary_view(name) %}
    {#- Dropped in dbt's own session without a statement where it is in this process. -#}
    {% if not adapter.cdc_drop_temporary_view(name) %}
        {% do run_query('drop view if exists ' ~ name) %}
    {% endif %}
{% endmacro %}

{% macro databend__drop_temporary_view(name) %}
    {% do run_query('drop view if exists ' ~ name) %}
{% endmacro %}
