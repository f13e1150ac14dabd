{#
    cdc_merge: apply the new events of one source table from the raw log to its mirror.
    (Over 300 lines, and why: a dbt materialization is one block; its steps are files of their own.)

    Steps: validate every config; find the raw snapshots added since this mirror's
    offset; for each bounded chunk of them, dedup to the newest event per key, classify
    it against the mirror, MERGE, and only then append the new offset. A run that dies
    half way repeats its last chunk next time, which the seq guards make harmless.

    This file runs the steps (the materialization, and apply_batch for one batch). Each step is
    a file of its own, with its spark__ and databend__ versions side by side:
        validate.sql       every config, checked before any SQL runs
        offsets.sql        the offsets log: where a mirror stands, one row per applied chunk
        raw_log.sql        the raw snapshots after the offset, in chunks, read as raw events
        change_stream.sql  a Databend stream read instead of snapshots (change_source='stream')
        dedup.sql          one bucket of a chunk, deduplicated to the newest event per key
        target.sql         the mirror and its tombstones: created, their columns checked
        schema_change.sql  a stored mirror's columns changed as on_schema_change says, new ones backfilled
        column_types.sql   the mirror's and the model's column types, and the ALTER TABLEs that widen them
        schema_changes_log.sql  the log of a mirror's column changes, pending backfills found again
        truncate.sql       truncates of the source table: a barrier before the chunk's batches
        column_defaults.sql  columns the source added with a value for its older rows: set after the chunk's batches
        snapshot_ranges.sql  key ranges online snapshot pages read completely: rows the source no longer has, removed
        unmapped.sql       source columns the model does not read: a warning in the run's summary
        classify.sql       the batch against the mirror: stored keys, key range, classified batch
        write.sql          the tombstones, then the mirror: MERGE or deletes by position, INSERT
        publish.sql        a batch's writes to the mirror made visible in one commit
        counts.sql         change counts per batch and chunk, and the run's summary line
        idle.sql           a mirror with nothing new: one cheap check instead of the steps below
        capabilities.sql   what the connection's adapter can do, asked in one place
        maintenance.sql    maintenance after the run when a threshold is crossed (macros/maintenance/)
        metrics.sql        one row per run in cdc_merge_runs (its columns: runs_table.sql)
        kept_rows.sql      the last offset and the runs row of every mirror of a run, written once for all
        run_guard.sql      one process applies a mirror at a time; the named crash points
        consistency.sql    a consistency group's horizon: whole transactions only; the group's cut
        cut_views.sql      on Databend, a view per group mirror that reads it at the latest cut
        catalog_transaction.sql  on the cluster, a group's run published in one catalog transaction
#}

{% materialization cdc_merge, default %}
    {%- set cfg = cdc_merge.cdc_merge_validated_config() -%}
    {%- set run_started = modules.datetime.datetime.utcnow() -%}
    {%- set target_relation = this.incorporate(type='table') -%}
    {%- set existing_relation = load_cached_relation(this) -%}
    {%- set offsets = cdc_merge.offsets_relation(cfg) -%}
    {%- set tombstones = cdc_merge.tombstones_relation(target_relation) if cfg.deletes == 'hard' else none -%}
    {%- set batch_view = cdc_merge.batch_view_name(model.name) -%}
    {%- set raw_changes_view = model.name ~ '__cdc_raw_changes' -%}
    {%- set changes = cdc_merge.changes_relation(target_relation) -%}
    {%- set model_sql = compiled_code -%}

    {{ run_hooks(pre_hooks) }}

    {#- Another process applying this mirror: wait for it, then apply what is new after it (run_guard.sql). -#}
    {% do cdc_merge.lock_mirror(target_relation) %}

    {#- Nothing new since the mirror's offset: one cheap check, no statement of its own (idle.sql). -#}
    {% if cdc_merge.nothing_new(existing_relation, target_relation, offsets, cfg, model_sql, run_started) %}
        {% do store_raw_result('main', message='OK', code='OK', rows_affected=0) %}
        {% do cdc_merge.unlock_mirror(target_relation) %}
        {% do cdc_merge.finish_mirror_run() %}
        {{ run_hooks(post_hooks) }}
        {{ return({'relations': [target_relation]}) }}
    {% endif %}

    {% do cdc_merge.ensure_bookkeeping_tables(offsets) %}
    {% set existing_relation = cdc_merge.loadable_mirror(existing_relation) %}
    {#- On a catalog with transactions a group mirror's commits wait for the group's publish from here on (catalog_transaction.sql). -#}
    {% set transaction = cdc_merge.join_catalog_transaction(cfg, target_relation, tombstones, offsets, existing_relation) %}

    {% set rebuilding = existing_relation is not none and (should_full_refresh() or existing_relation.is_view) %}
    {% if rebuilding %}
        {{ log("cdc_merge " ~ target_relation ~ ": rebuilding from the whole raw log", info=True) }}
        {#- The offset goes back to the start of the log first: a rebuild that dies once the new mirror exists resumes from there. -#}
        {% set before = run_query(cdc_merge.latest_offset_sql(offsets, target_relation)) %}
        {% if before.rows | length %}
            {% do run_query(cdc_merge.append_offset_sql(offsets, target_relation, cfg, (before.rows[0]['offset_ordinal'] | int) + 1, none,
                {'events_read': 0, 'inserted': 0, 'updated': 0, 'deleted': 0, 'skipped': 0, 'max_source_ts': none})) %}
        {% endif %}
        {% do adapter.drop_relation(existing_relation) %}
        {% if tombstones is not none %}
            {% do run_query('drop table if exists ' ~ tombstones) %}
        {% endif %}
        {% set existing_relation = none %}
    {% endif %}
    {#- Truncates of the source table (truncate.sql): a mirror built from the start of the log finds them there again. -#}
    {% if existing_relation is none %}
        {% do cdc_merge.forget_truncates(cfg, target_relation) %}
    {% endif %}
    {% set truncated = namespace(seq=cdc_merge.truncate_watermark(cfg, target_relation), rows=0) %}

    {#- A missing mirror is always rebuilt from the start of the log, whatever the offsets say. -#}
    {% set latest = cdc_merge.newest_offset(offsets, target_relation) %}
    {% set ordinal = namespace(value=latest.offset_ordinal, snapshot=latest.offset_snapshot) %}
    {% set offset_snapshot = latest.offset_snapshot if existing_relation is not none else none %}
    {#- The run's last offset and its runs row are written with the other mirrors' (kept_rows.sql). -#}
    {% set can = cdc_merge.capabilities() %}
    {#-
        change_source='stream': once the mirror has caught up through the snapshots, a stream
        created at the snapshot it reached holds everything after, and its offset row says
        'stream'; until then (new mirror, full refresh, a run that died before recording the
        stream) the snapshots are read as in 'changes' mode.
    -#}
    {% set stream = cdc_merge.change_stream_relation(target_relation) if cfg.change_source == 'stream' else none %}
    {#- A consistency group's mirrors apply whole source transactions only, through one horizon (consistency.sql). -#}
    {% set horizon = cdc_merge.group_horizon(cfg, offsets) if cfg.consistency_group is not none else none %}
    {% if stream is not none and offset_snapshot == 'stream' %}
        {% set chunks = [{'after': none, 'through': 'stream', 'buckets': 1, 'stream': stream}] %}
    {% else %}
        {% set snapshot_log = cdc_merge.raw_snapshot_log(cfg.raw_relation) %}
        {% if horizon is not none %}
            {% set snapshot_log = cdc_merge.group_snapshot_log(snapshot_log, horizon) %}
        {% endif %}
        {% set current_snapshot = snapshot_log.current %}
        {% set pending = cdc_merge.pending_raw_snapshots(cfg.raw_relation, offset_snapshot, snapshot_log) %}
        {% set chunks = cdc_merge.chunks_of(pending, cfg.max_events_per_chunk, offset_snapshot, cfg.raw_relation, cfg.source_table) %}
    {% endif %}
    {% if flags.EMPTY %}
        {#- dbt run --empty: the mirror and its tables are created, no event is applied, the offset stays. -#}
        {% set chunks = [] %}
    {% endif %}

    {#-
        The model's output columns, from the first chunk's batch (or an empty one; never from
        a stream: reading it here, outside the chunk's transaction, could consume it).
    -#}
    {% do cdc_merge.enter_large_batch(chunks) %}
    {#- The batch view's statement: a batch's own is not run again when it is this one. -#}
    {% set batch_view_sql = namespace(value=none) %}
    {% set first_plan = none %}
    {% if chunks | length and chunks[0].stream is not defined %}
        {% do cdc_merge.read_chunk(chunks[0], raw_changes_view, cfg) %}
        {% set first_plan = cdc_merge.chunk_plan(chunks[0], cfg) %}
        {#- One round when no event has placeholders: then the first batch's own view is this one. -#}
        {% set first_rounds = 1 if (first_plan is not none and chunks[0].buckets == 1 and (first_plan['placeholder_events'] | int) == 0) else none %}
        {#- A small range's newest events per key, deduplicated once for all its mirrors (dedup.sql newest_events_view). -#}
        {% set first_newest = cdc_merge.newest_events_view(chunks[0], raw_changes_view, cfg, first_plan, horizon is none) %}
        {% set batch_view_sql.value = cdc_merge.create_batch_view_sql(batch_view, first_newest or raw_changes_view, cfg.source_table, 0, 1, 1,
            first_rounds, first_newest is not none) %}
    {% else %}
        {% set batch_view_sql.value = cdc_merge.create_empty_batch_view_sql(batch_view) %}
    {% endif %}
    {% do run_query(batch_view_sql.value) %}
    {% set model_described = cdc_merge.query_columns(model_sql) %}
    {% set model_columns = model_described | map(attribute='0') | list %}
    {% do cdc_merge.cdc_merge_validate_columns(model_columns, cfg) %}
    {% set metadata_columns = ['_cdc_key', '_cdc_action', '_cdc_seq', '_cdc_source_ts', '_cdc_unavailable'] %}
    {% set columns = model_columns | reject('in', metadata_columns) | list %}

    {#- What the run's summary line says besides its counts, one part each. -#}
    {% set notes = [] %}
    {#- Source columns the model does not read (unmapped.sql), from a sample of the first chunk's images. -#}
    {% set unmapped = cdc_merge.unmapped_columns(raw_changes_view, cfg, model_columns, first_plan.fields if first_plan is not none else none) if (chunks | length and chunks[0].stream is not defined) else [] %}
    {% if unmapped %}
        {% do exceptions.warn("cdc_merge model '" ~ model.name ~ "': " ~ cfg.source_table ~ " has columns the model does not read: "
            ~ unmapped | join(', ') ~ ". Add them to the model (the mirror gets them, backfilled: docs/schema_changes.md), or list them"
            ~ " under ignored in its cdc_unmapped_columns test.") %}
        {% do notes.append('not read from the source: ' ~ unmapped | join(', ')) %}
    {% endif %}
    {% if existing_relation is none %}
        {% do run_query(cdc_merge.create_mirror_sql(target_relation, '(' ~ model_sql ~ ') as model_output', columns, cfg)) %}
        {% if rebuilding %}
            {% do cdc_merge.crash_point('full-refresh-before-offset') %}
        {% endif %}
    {% else %}
        {#- A stored mirror whose columns differ from the model's is changed as on_schema_change says (schema_change.sql). -#}
        {% set evolved = cdc_merge.evolve_mirror(target_relation, model_sql, model_described, cfg) %}
        {% set columns = evolved.columns %}
        {% set model_sql = evolved.model_sql %}
        {% do notes.insert(0, evolved.note) %}
        {% if evolved.batch_view_replaced %}
            {% set batch_view_sql.value = none %}
        {% endif %}
    {% endif %}
    {#- The model as compiled, not as evolve_mirror rewrote it: the idle check compares the compiled code. -#}
    {% do cdc_merge.remember_model_checksum(target_relation, compiled_code, cfg) %}
    {#- Created with a new mirror, or when the run's list of relations does not have them. -#}
    {% if tombstones is not none and (existing_relation is none or load_cached_relation(tombstones) is none) %}
        {% do run_query(cdc_merge.create_tombstones_sql(tombstones)) %}
    {% endif %}
    {% set by_position = cdc_merge.deletes_by_position(target_relation, cfg) %}
    {#- The written columns' types, for the values the source gave older rows in columns it added (column_defaults.sql). -#}
    {% set column_types = {} %}
    {% for name, data_type in cdc_merge.lower_names(model_described) if name in columns %}
        {% do column_types.update({name: data_type}) %}
    {% endfor %}
    {% set defaulted = [] %}
    {% set ranged = namespace(rows=0) %}

    {% set totals = {'events_read': 0, 'inserted': 0, 'updated': 0, 'deleted': 0, 'skipped': 0, 'chunks': chunks | length, 'max_source_ts': none} %}
    {% for chunk in chunks %}
        {% set chunk_stats = {'events_read': 0, 'inserted': 0, 'updated': 0, 'deleted': 0, 'skipped': 0, 'max_source_ts': none} %}
        {% if chunk.stream is defined %}
            {#- Consuming the stream and applying what it held commit together, or not at all. -#}
            {% do run_query('begin') %}
        {% endif %}
        {% if not (loop.first and chunk.stream is not defined) %}
            {#- The first chunk's raw events were read above, for the model's columns. -#}
            {% do cdc_merge.read_chunk(chunk, raw_changes_view, cfg) %}
        {% endif %}
        {% set chunk_view = cdc_merge.keep_whole_transactions(raw_changes_view, horizon) %}
        {#- The chunk's counts, key range, placeholders, truncate and fields, when one pass over the range gave them for every mirror. -#}
        {% set chunk_plan = cdc_merge.chunk_plan(chunk, cfg, raw_changes_view, chunk_view) %}
        {% set newest_view = cdc_merge.newest_events_view(chunk, raw_changes_view, cfg, chunk_plan, horizon is none) %}
        {% set truncate = cdc_merge.apply_chunk_truncates(target_relation, tombstones, chunk_view, cfg, truncated.seq, chunk_plan) %}
        {% set truncated.seq = truncate.seq %}
        {% set truncated.rows = truncated.rows + truncate.rows %}
        {% for bucket in range(chunk.buckets) %}
            {% set plan = chunk_plan if (chunk_plan is not none and chunk.buckets == 1) else run_query(cdc_merge.bucket_plan_sql(chunk_view, cfg.source_table, bucket, chunk.buckets)).rows[0] %}
            {% set rounds = cdc_merge.bucket_rounds(chunk_view, cfg.source_table, bucket, chunk.buckets, plan) %}
            {% set key_range = cdc_merge.key_range_of(plan) %}
            {% set key_range = key_range if cdc_merge.key_range_skips_files(target_relation, key_range) else none %}
            {% set batch_keys_sql = cdc_merge.batch_keys_sql(chunk_view, cfg.source_table, bucket, chunk.buckets) %}
            {#- A small batch goes to the mirror in one commit on main, not through a branch (one_commit.py). -#}
            {% set one_commit = adapter.type() == 'cdc_spark' and adapter.cdc_one_commit(by_position, chunk_plan, chunk.buckets) %}
            {% for round in range(1, rounds + 1) %}
                {% set view_sql = cdc_merge.create_batch_view_sql(batch_view, newest_view or chunk_view, cfg.source_table, bucket, chunk.buckets,
                    round, rounds, newest_view is not none) %}
                {% if view_sql != batch_view_sql.value %}
                    {% do run_query(view_sql) %}
                    {% set batch_view_sql.value = view_sql %}
                {% endif %}
                {% set counts = cdc_merge.apply_batch(target_relation, tombstones, changes, cdc_merge.after_truncate_sql(model_sql, truncated.seq), batch_keys_sql, key_range, columns, cfg, by_position, one_commit) %}
                {% do cdc_merge.add_counts(chunk_stats, counts) %}
            {% endfor %}
        {% endfor %}
        {% do defaulted.extend(cdc_merge.apply_column_defaults(target_relation, cdc_merge.chunk_column_defaults(chunk_view, cfg, chunk_plan), column_types)) %}
        {% set ranged.rows = ranged.rows + cdc_merge.apply_snapshot_ranges(target_relation, tombstones, cdc_merge.chunk_snapshot_ranges(chunk_view, cfg, chunk_plan), column_types, cfg) %}
        {% set ordinal.value = ordinal.value + 1 %}
        {% do cdc_merge.crash_point('apply-before-offset') %}
        {#- A group's mirror never goes past the group's tail start: the next run reads the deferred transactions again. -#}
        {% set offset_to = adapter.cdc_group_offset(pending | map(attribute='snapshot_id') | list, horizon.tail_start, chunk.through)
            if horizon is not none else chunk.through %}
        {% if can.keeps_offset_rows and loop.last and chunk.stream is not defined %}
            {% do cdc_merge.keep_offset(offsets, target_relation, cfg, offset_to, chunk_stats) %}
        {% else %}
            {% do run_query(cdc_merge.append_offset_sql(offsets, target_relation, cfg, ordinal.value, offset_to, chunk_stats)) %}
        {% endif %}
        {% set ordinal.snapshot = offset_to %}
        {% if chunk.stream is defined %}
            {% do run_query('commit') %}
        {% endif %}
        {% do cdc_merge.add_counts(totals, chunk_stats) %}
        {{ log("cdc_merge " ~ target_relation ~ ": chunk " ~ loop.index ~ "/" ~ loop.length ~ " (" ~ chunk.buckets ~ " bucket(s)): "
            ~ chunk_stats.events_read ~ " keys changed, " ~ chunk_stats.inserted ~ " inserted, " ~ chunk_stats.updated ~ " updated, "
            ~ chunk_stats.deleted ~ " deleted, " ~ chunk_stats.skipped ~ " skipped; offset -> snapshot " ~ offset_to, info=True) }}
        {% if loop.length > 1 and cdc_merge.has_cdc_adapter() %}
            {#- A long catch-up: how fast it goes and when it will be done. -#}
            {{ log(adapter.cdc_progress_line("cdc_merge " ~ target_relation ~ " catching up", loop.index, loop.length, "chunks", run_started), info=True) }}
        {% endif %}
    {% endfor %}
    {% do cdc_merge.drop_scratch(raw_changes_view) %}
    {% if adapter.type() == 'cdc_spark' %}
        {% do adapter.cdc_drop_temporary_view(raw_changes_view ~ '__newest') %}
    {% endif %}
    {% if horizon is not none %}
        {% do cdc_merge.drop_scratch(raw_changes_view ~ '__whole') %}
        {% do totals.update({'cut_lag_seconds': horizon.lag_seconds}) %}
    {% endif %}
    {% if stream is not none and offset_snapshot != 'stream' %}
        {% do run_query('drop stream if exists ' ~ stream) %}
        {% do run_query(cdc_merge.create_change_stream_sql(stream, cfg.raw_relation, current_snapshot)) %}
        {% set ordinal.value = ordinal.value + 1 %}
        {% do run_query(cdc_merge.append_offset_sql(offsets, target_relation, cfg, ordinal.value, 'stream', {'events_read': 0, 'inserted': 0, 'updated': 0, 'deleted': 0, 'skipped': 0, 'max_source_ts': none})) %}
        {% set ordinal.snapshot = 'stream' %}
    {% endif %}
    {% do cdc_merge.drop_temporary_view(batch_view) %}
    {#- Only now, with every applied chunk's offset recorded: maintenance.sql, metrics.sql. -#}
    {% set maintained = transaction.maintained if transaction.joined else cdc_merge.maintain_after_run(target_relation, tombstones, offsets, cfg) %}
    {% if can.keeps_run_rows %}
        {% do cdc_merge.keep_run(offsets, target_relation, cfg, totals, run_started, maintained, ordinal.snapshot) %}
    {% else %}
        {% do cdc_merge.record_run(offsets, target_relation, cfg, totals, run_started, maintained, ordinal.snapshot) %}
    {% endif %}

    {% if horizon is not none %}
        {% do cdc_merge.finish_group_member(cfg, target_relation, offsets, horizon) %}
    {% endif %}
    {% do notes.append(truncated.rows ~ ' rows truncated' if truncated.rows else '') %}
    {% do notes.append('set in older rows as the source added them: ' ~ defaulted | unique | join(', ') if defaulted else '') %}
    {% do notes.append(ranged.rows ~ ' rows the source no longer has removed (online snapshot ranges)' if ranged.rows else '') %}
    {{ log("cdc_merge " ~ target_relation ~ ": " ~ ([cdc_merge.summary_line(totals)] + notes) | select | join('; '), info=True) }}
    {% do cdc_merge.unlock_mirror(target_relation) %}
    {% do cdc_merge.finish_mirror_run() %}
    {#- The run's result without a statement; its counts are in the summary line above and in cdc_merge_runs. -#}
    {% do store_raw_result('main', message='OK', code='OK', rows_affected=totals.inserted + totals.updated + totals.deleted) %}

    {{ run_hooks(post_hooks) }}
    {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}


{% macro apply_batch(target_relation, tombstones, changes, model_sql, batch_keys_sql, key_range, columns, cfg, by_position, one_commit=false) %}
    {#-
        Classify the batch against the mirror (classify.sql), then write tombstones, then the mirror
        (write.sql), publishing the mirror's writes in one commit (publish.sql).
        by_position (deletes_by_position): the classification reads the branch the batch then writes
        to, with the positions of the stored rows, and the replaced rows are deleted at those positions.
        one_commit (with by_position): the classification reads main at its current snapshot, and the
        deletes and new rows are committed to main together (write.sql write_one_commit), no branch.
    -#}
    {#- A mirror with no snapshot yet has nothing to classify against at one: the branch path. -#}
    {% set classified_at = adapter.cdc_current_snapshot(target_relation) if one_commit else none %}
    {% set one_commit = one_commit and classified_at is not none %}
    {% if one_commit %}
        {% set classified = cdc_merge.relation_at_snapshot(target_relation, classified_at) %}
    {% else %}
        {% set classified = cdc_merge.begin_mirror_writes(target_relation) if by_position else target_relation %}
    {% endif %}
    {#- With one commit, the tombstones too are classified at their current snapshot and written by position. -#}
    {% set tombstones_at = adapter.cdc_current_snapshot(tombstones) if (one_commit and tombstones is not none) else none %}
    {% set classified_tombstones = cdc_merge.relation_at_snapshot(tombstones, tombstones_at) if tombstones_at is not none else tombstones %}
    {#- A small batch held in the driver lists its keys' hashes, and where the tables are small reads their stored rows there (classify.sql). -#}
    {% set key_hashes = adapter.cdc_batch_key_hashes(batch_keys_sql) if one_commit else none %}
    {% set stored_rows = adapter.cdc_stored_rows_in_driver(batch_keys_sql, target_relation, classified_at, by_position, tombstones, tombstones_at) if key_hashes is not none else none %}
    {% set classified_sql = cdc_merge.classified_batch_sql(model_sql, batch_keys_sql, key_range, classified, classified_tombstones, by_position,
        tombstones_at is not none, key_hashes, stored_rows, one_commit) %}
    {% set created = cdc_merge.create_changes(changes, classified_sql, by_position, one_commit) %}
    {% set batch_changes = created.changes %}
    {% set row = created.counts if created.counts is not none else run_query(cdc_merge.change_counts_sql(batch_changes)).rows[0] %}
    {% set counts = {} %}
    {% for name in ['events_read', 'inserted', 'updated', 'partial_updates', 'deleted', 'tombstoned', 'skipped', 'revived', 'stored_tombstones',
                    'tombstones_replaced', 'tombstones_added'] %}
        {% do counts.update({name: row[name] | int}) %}
    {% endfor %}
    {% do counts.update({'max_source_ts': row['max_source_ts']}) %}
    {% if tombstones_at is not none and (counts.tombstones_replaced + counts.tombstones_added) > 0 %}
        {% do cdc_merge.write_tombstones_one_commit(tombstones, tombstones_at, batch_changes, counts) %}
    {% elif tombstones is not none and tombstones_at is none and (counts.deleted + counts.tombstoned + counts.revived) > 0 %}
        {% do run_query(cdc_merge.write_tombstones_sql(tombstones, batch_changes, counts.stored_tombstones)) %}
    {% endif %}
    {% set replaced_rows = cdc_merge.replaces_rows(cfg, counts.partial_updates > 0) %}
    {% if one_commit and replaced_rows %}
        {% do cdc_merge.write_one_commit(target_relation, classified_at, batch_changes, columns, cfg, counts) %}
        {% do cdc_merge.drop_changes(batch_changes) %}
        {% do counts.update({'skipped': counts.skipped + counts.tombstoned}) %}
        {{ return(counts) }}
    {% elif one_commit %}
        {#- Not expected (a batch without placeholders has no partial updates): the branch path, from the classified snapshot. -#}
        {% set classified = cdc_merge.begin_mirror_writes(target_relation, classified_at) %}
    {% endif %}
    {% set soft_tombstones = counts.tombstoned if cfg.deletes == 'soft' else 0 %}
    {% set merges = (counts.updated + counts.deleted) > 0 %}
    {% set inserts = (counts.inserted + soft_tombstones + (counts.updated if replaced_rows else 0)) > 0 %}
    {% if merges and not (replaced_rows and by_position) %}
        {#- The MERGE must know how small the changes are, to broadcast them: Spark knows it of a table, not of a checkpoint. -#}
        {% set batch_changes = cdc_merge.changes_as_table(batch_changes, changes) %}
    {% endif %}
    {% if by_position %}
        {% set mirror = classified %}
    {% else %}
        {% set mirror = cdc_merge.begin_mirror_writes(target_relation) if (merges and inserts) else target_relation %}
    {% endif %}
    {% if merges and replaced_rows and by_position %}
        {% do cdc_merge.delete_replaced_rows_by_position(target_relation, batch_changes, counts.updated + counts.deleted) %}
    {% elif merges and replaced_rows %}
        {% do cdc_merge.run_query_with_settings(cdc_merge.delete_replaced_rows_sql(mirror, batch_changes, key_range), cdc_merge.mirror_merge_settings()) %}
    {% elif merges %}
        {% do cdc_merge.run_query_with_settings(
            cdc_merge.merge_mirror_sql(mirror, batch_changes, key_range, columns, cfg, counts.partial_updates > 0), cdc_merge.mirror_merge_settings()) %}
    {% endif %}
    {% if inserts %}
        {% do run_query(cdc_merge.insert_mirror_sql(mirror, batch_changes, columns, cfg, replaced_rows)) %}
    {% endif %}
    {% if by_position and not (merges or inserts) %}
        {% do cdc_merge.discard_mirror_writes(target_relation) %}
    {% elif by_position or (merges and inserts) %}
        {% do cdc_merge.publish_mirror_writes(target_relation) %}
    {% endif %}
    {% do cdc_merge.drop_changes(batch_changes) %}
    {% do counts.update({'skipped': counts.skipped + counts.tombstoned}) %}
    {{ return(counts) }}
{% endmacro %}
