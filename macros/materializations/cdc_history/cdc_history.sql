{#
    cdc_history: one row per version of each key of a source table (SCD type 2), built
    incrementally from the raw log with the same offsets as cdc_merge.

    Steps: validate every config; find the raw snapshots added since this history's offset (its
    own rows in cdc_merge_offsets); for each bounded chunk of them, put every event of the chunk
    (one per key and seq) in the batch view the model reads, rebuild the chains of the keys it
    touches from the stored versions plus these events, write the difference, and only then
    append the new offset. A run that dies half way repeats its last chunk, which rebuilds the
    same chains.

    Files, each with its spark__ and databend__ versions side by side:
        validate.sql   every config, checked before any SQL runs
        batch.sql      what cdc_events() reads here: every event of the batch
        target.sql     the history table and its deletes table: created, deletes mode checked
        added_columns.sql  columns the model adds: added in place, each version's value from its event in the raw log
        chain.sql      the rebuilt chains of a batch's keys, compared with the stored rows
        unsent.sql     unchanged TOAST values in those chains, filled from the version before
        write.sql      a batch's rows removed and added, published in one commit
        ranges.sql     online snapshot ranges and truncates: current versions of rows the source no longer has closed
        truncates.sql  the truncates a history applied, kept for older events that land later
        column_defaults.sql  the source's schema changes: retypes the history cannot hold, columns added with a value
        retention.sql  whether the raw log was trimmed, and from when it holds events
    It calls cdc_merge's offsets.sql, raw_log.sql (pending_raw_snapshots, chunks_of, read_chunk),
    publish.sql, after its last offset the mirrors' maintenance (maintenance.sql, macros/maintenance/), and
    metrics.sql for its cdc_merge_runs row.
#}

{% materialization cdc_history, default %}
    {%- set cfg = cdc_merge.cdc_history_validated_config() -%}
    {%- set target_relation = this.incorporate(type='table') -%}
    {%- set existing_relation = load_cached_relation(this) -%}
    {%- set offsets = cdc_merge.offsets_relation(cfg) -%}
    {%- set deletes_relation = cdc_merge.history_deletes_relation(target_relation) if cfg.deletes == 'hard' else none -%}
    {%- set scratch = cdc_merge.history_scratch_relation(target_relation) -%}
    {%- set batch_view = cdc_merge.history_batch_view_name(model.name) -%}
    {%- set raw_changes_view = model.name ~ '__cdc_raw_changes' -%}
    {#- The model's SQL is wrapped in parentheses by the steps: the newline ends a `--` comment on its last line. -#}
    {%- set model_sql = compiled_code ~ '\n' -%}

    {%- set run_started = modules.datetime.datetime.utcnow() -%}
    {{ run_hooks(pre_hooks) }}
    {#- Another process applying or maintaining this history: wait for it (run_guard.sql), as a mirror's run does. -#}
    {% do cdc_merge.lock_mirror(target_relation) %}

    {% do cdc_merge.ensure_bookkeeping_tables(offsets) %}
    {#- A --full-refresh that stopped before taking the history's place left its rebuild beside it (rebuild_aside.sql). -#}
    {% do cdc_merge.drop_stopped_rebuild(target_relation, cfg, offsets, is_history=true) %}

    {#- The run's mode, decided in python_jobs/apply/run_plan.py from the history, the flags and its offset. -#}
    {% set latest = run_query(cdc_merge.latest_offset_sql(offsets, target_relation)) %}
    {% set latest_snapshot = (latest.rows[0]['offset_snapshot'] or none) if latest.rows | length else none %}
    {% set ordinal = namespace(value=(latest.rows[0]['offset_ordinal'] | int) if latest.rows | length else 0) %}
    {% set run = adapter.cdc_run_plan(none if existing_relation is none else ('view' if existing_relation.is_view else 'table'),
        should_full_refresh(), flags.EMPTY, 'changes', latest_snapshot) %}
    {% if run.create %}
        {#- Checked before anything is dropped: a history built from the start of a trimmed log would miss every version before its horizon. -#}
        {% set horizon = cdc_merge.raw_log_horizon(cfg.raw_relation, cfg.source_table) %}
        {% if horizon is not none and not cfg.allow_trimmed_log %}
            {% do exceptions.raise_compiler_error(
                "cdc_history model '" ~ model.name ~ "': " ~ cfg.raw_relation ~ " was trimmed by retention; of "
                ~ cfg.source_table ~ " it holds only events since " ~ (horizon.oldest or 'none at all')
                ~ ", so a history built from it now would start there and miss every earlier version. Keep the existing"
                ~ " history (no --full-refresh), or set allow_trimmed_log=true to build one that starts at that time.") %}
        {% endif %}
    {% endif %}
    {#- Refused before anything is dropped or written: a model whose columns break its enforced contract (described over
        a batch of no events), and a stored history applied in a deletes mode other than the one it was built with. -#}
    {% set metadata_columns = ['_cdc_key', '_cdc_action', '_cdc_seq', '_cdc_source_ts', '_cdc_unavailable'] %}
    {% if model.contract is defined and model.contract.enforced %}
        {% do run_query(cdc_merge.create_empty_batch_view_sql(batch_view)) %}
        {% do cdc_merge.check_model_contract(cdc_merge.cdc_query_columns(model_sql), metadata_columns, 'cdc_history',
            cdc_merge.history_columns()) %}
    {% endif %}
    {% if not run.create %}
        {% set stored = cdc_merge.stored_history_deletes(target_relation, offsets) %}
        {% set mode = adapter.cdc_history_deletes_mode(model.name, target_relation | string, cfg.deletes, stored.deletes, stored.in_comment) %}
        {% if mode.error %}
            {% do exceptions.raise_compiler_error(mode.error) %}
        {% endif %}
        {% if mode.record %}
            {#- Built before the mode was recorded (or, on Databend, when it was the comment): from now on it keeps it where it belongs. -#}
            {% do cdc_merge.record_history_deletes(target_relation, offsets, cfg.deletes, clear_comment=mode.clear_comment) %}
        {% endif %}
    {% endif %}
    {#- A history made again that applies nothing (--empty) or dies before its first offset row must not resume from the
        old offset: its offset goes back to the start of the log first. -#}
    {% if run.restart_offset %}
        {% set ordinal.value = ordinal.value + 1 %}
        {% do run_query(cdc_merge.append_offset_sql(offsets, target_relation, cfg, ordinal.value, none, cdc_merge.no_counts())) %}
    {% endif %}
    {#- A stored history is rebuilt aside, and takes the rebuild's place once it is whole (rebuild_aside.sql): until then
        the run's steps build <history>__cdc_rebuild, with bookkeeping of its own. -#}
    {% if run.build_aside %}
        {% set history = {'relation': target_relation, 'deletes': deletes_relation, 'offset_ordinal': ordinal.value} %}
        {% set target_relation = cdc_merge.start_rebuild_aside(target_relation, cfg, offsets, is_history=true) %}
        {% set deletes_relation = cdc_merge.history_deletes_relation(target_relation) if cfg.deletes == 'hard' else none %}
        {% set scratch = cdc_merge.history_scratch_relation(target_relation) %}
        {% set ordinal.value = 0 %}
        {% set existing_relation = none %}
    {% elif run.rebuild %}
        {{ log("cdc_history " ~ target_relation ~ ": rebuilding in place from the whole raw log", info=True) }}
        {% do adapter.drop_relation(existing_relation) %}
        {% set existing_relation = none %}
    {% endif %}
    {% if run.create %}
        {% do run_query('drop table if exists ' ~ cdc_merge.history_deletes_relation(target_relation)) %}
        {#- Built again from the start of the log, it finds its truncates there again. -#}
        {% do cdc_merge.forget_truncates(cfg, target_relation) %}
    {% endif %}

    {% set offset_snapshot = latest_snapshot if run.read_from == 'offset' else none %}
    {% set pending = cdc_merge.pending_raw_snapshots(cfg.raw_relation, offset_snapshot, cdc_merge.raw_snapshot_log(cfg.raw_relation)) %}
    {% set chunks = [] if flags.EMPTY else cdc_merge.chunks_of(pending, cfg.max_events_per_chunk, offset_snapshot, cfg.raw_relation, cfg.source_table) %}

    {#- The model's output columns, from the first chunk's events (or none). -#}
    {% if chunks | length %}
        {% do cdc_merge.read_chunk(chunks[0], raw_changes_view, cfg) %}
    {% endif %}
    {% set first_batch_view_sql = cdc_merge.create_history_batch_view_sql(batch_view, raw_changes_view, cfg.source_table, 0, 1)
        if chunks | length else cdc_merge.create_empty_batch_view_sql(batch_view) %}
    {% do run_query(first_batch_view_sql) %}
    {% set model_columns = run_query('select * from (' ~ model_sql ~ ') as model_output limit 0').column_names | list %}
    {% do cdc_merge.cdc_history_validate_columns(model_columns, cfg) %}
    {% set columns = model_columns | reject('in', metadata_columns) | list %}

    {% if existing_relation is none %}
        {% do cdc_merge.record_history_deletes(target_relation, offsets, cfg.deletes, created=true) %}
        {% do run_query(cdc_merge.create_history_sql(target_relation, model_sql, columns, cfg)) %}
        {% if run.build_aside %}
            {#- Once the rebuild's table exists, by which the history's next run finds a rebuild that stopped: an offset row
                at the start of the log, by which maintenance keeps what the rebuild still needs. -#}
            {% set ordinal.value = ordinal.value + 1 %}
            {% do run_query(cdc_merge.append_offset_sql(offsets, target_relation, cfg, ordinal.value, none, cdc_merge.no_counts())) %}
        {% endif %}
    {% else %}
        {#- Columns the model added are added and filled from the raw log; other changes ask for a rebuild (added_columns.sql). -#}
        {% if cdc_merge.follow_history_columns(target_relation, columns, model_sql, cfg) %}
            {#- The fill read the versions' events through the batch view: it reads the first chunk's again. -#}
            {% do run_query(first_batch_view_sql) %}
        {% endif %}
    {% endif %}
    {% if deletes_relation is not none %}
        {% do run_query(cdc_merge.create_history_deletes_sql(deletes_relation)) %}
    {% endif %}

    {% set totals = {'events': 0, 'added': 0, 'removed': 0, 'max_source_ts': none} %}
    {#- What chunks read once a run (the raw log's added columns: column_defaults.sql). -#}
    {% set run_cache = {} %}
    {% set stored_truncates = cdc_merge.history_stored_truncates(target_relation, cfg) if chunks | length else [] %}
    {% for chunk in chunks %}
        {% if not loop.first %}
            {% do cdc_merge.read_chunk(chunk, raw_changes_view, cfg) %}
        {% endif %}
        {% set stats = cdc_merge.no_counts() %}
        {#- The source's schema changes: a retype the history's columns cannot hold stops here; added columns' values after. -#}
        {% set schema_events = cdc_merge.history_schema_events(raw_changes_view, cfg) %}
        {% do cdc_merge.check_history_retypes(schema_events, model_sql, columns, cfg) %}
        {% set chunk_ranges = cdc_merge.history_chunk_ranges(target_relation, raw_changes_view, cfg, stored_truncates) %}
        {% if chunk_ranges is not none %}
            {% do chunk_ranges.update({'added_defaults': cdc_merge.history_range_defaults(cfg, run_cache, model_sql, columns)}) %}
        {% endif %}
        {% for bucket in range(chunk.buckets) %}
            {% do run_query(cdc_merge.create_history_batch_view_sql(batch_view, raw_changes_view, cfg.source_table, bucket, chunk.buckets)) %}
            {% set batch = cdc_merge.history_batch_facts(target_relation, batch_view, model_sql, columns) %}
            {% set counts = cdc_merge.apply_history_batch(target_relation, deletes_relation, scratch, batch_view, model_sql, columns, cfg, batch.unsent_columns,
                chunk_ranges, batch.deletes) %}
            {% do stats.update({'events_read': stats.events_read + batch.events, 'inserted': stats.inserted + counts.added, 'deleted': stats.deleted + counts.removed}) %}
            {% if batch['max_source_ts'] and batch['max_source_ts'] != 'NULL' and (stats.max_source_ts is none or batch['max_source_ts'] > stats.max_source_ts) %}
                {% do stats.update({'max_source_ts': batch['max_source_ts']}) %}
            {% endif %}
        {% endfor %}
        {#- Online snapshot ranges: the batches closed their keys; after them, current versions of the ranges' other keys. -#}
        {% set ranged = cdc_merge.apply_history_ranges(target_relation, deletes_relation, scratch, chunk_ranges, model_sql, columns, cfg) %}
        {% do stats.update({'inserted': stats.inserted + ranged.added, 'deleted': stats.deleted + ranged.removed}) %}
        {% do cdc_merge.record_history_truncates(target_relation, chunk_ranges, cfg) %}
        {#- Columns the source added with a value for its rows then: the versions older than that hold it (column_defaults.sql). -#}
        {% do cdc_merge.apply_history_column_defaults(target_relation, raw_changes_view, cfg, schema_events, model_sql, columns, run_cache, chunk) %}
        {% for truncate in (chunk_ranges.record if chunk_ranges is not none else []) %}
            {% do stored_truncates.append([truncate.seq, truncate.time]) %}
        {% endfor %}
        {% set ordinal.value = ordinal.value + 1 %}
        {% do run_query(cdc_merge.append_offset_sql(offsets, target_relation, cfg, ordinal.value, chunk.through, stats)) %}
        {% do cdc_merge.keep_applied_column_defaults(target_relation, cfg, chunk, chunk.through, run_cache, schema_events) %}
        {% do totals.update({'events': totals.events + stats.events_read, 'added': totals.added + stats.inserted, 'removed': totals.removed + stats.deleted}) %}
        {% if stats.max_source_ts and (totals.max_source_ts is none or stats.max_source_ts > totals.max_source_ts) %}
            {% do totals.update({'max_source_ts': stats.max_source_ts}) %}
        {% endif %}
        {{ log("cdc_history " ~ target_relation ~ ": chunk " ~ loop.index ~ "/" ~ loop.length ~ ": " ~ stats.events_read ~ " events, "
            ~ stats.inserted ~ " version rows written, " ~ stats.deleted ~ " replaced; offset -> snapshot " ~ chunk.through, info=True) }}
    {% endfor %}
    {% do cdc_merge.drop_scratch(raw_changes_view) %}
    {% do run_query('drop view if exists ' ~ batch_view) %}
    {% if run.build_aside %}
        {% set counts = cdc_merge.no_counts() %}
        {% do counts.update({'events_read': totals.events, 'inserted': totals.added, 'deleted': totals.removed,
            'max_source_ts': totals.max_source_ts}) %}
        {% do cdc_merge.put_history_rebuild_in_place(target_relation, history, cfg, offsets,
            chunks[-1].through if chunks | length else none, counts) %}
        {% set target_relation = history.relation %}
        {% set deletes_relation = history.deletes %}
    {% endif %}
    {#- Only now, with every applied chunk's offset recorded, as a mirror's run (maintenance.sql): its table and deletes table. -#}
    {% set maintained = cdc_merge.maintain_after_run(target_relation, deletes_relation, offsets, cfg, is_history=true) %}
    {#- Its cdc_merge_runs row, as a mirror's (metrics.sql), written with the invocation's other rows (kept_rows.sql). -#}
    {% set run_totals = cdc_merge.history_run_counts(totals, chunks | length) %}
    {% set newest_offset = chunks[-1].through if chunks | length else offset_snapshot %}
    {% if cdc_merge.capabilities().keeps_run_rows %}
        {% do cdc_merge.keep_run(offsets, target_relation, cfg, run_totals, run_started, maintained, newest_offset) %}
        {% do cdc_merge.finish_mirror_run() %}
    {% else %}
        {% do cdc_merge.record_run(offsets, target_relation, cfg, run_totals, run_started, maintained, newest_offset) %}
    {% endif %}

    {{ log("cdc_history " ~ target_relation ~ ": " ~ chunks | length ~ " chunk(s), " ~ totals.events ~ " events: "
        ~ totals.added ~ " version rows written, " ~ totals.removed ~ " replaced", info=True) }}
    {#- As a mirror's: 'OK' and the rows written on every engine (a statement's response read 'adapter response -1' on Databend). -#}
    {% do store_raw_result('main', message='OK', code='OK', rows_affected=totals.added + totals.removed) %}

    {#- The model's description as the table's comment, where persist_docs asks for it: nothing of ours is kept there. -#}
    {% do cdc_merge.persist_model_docs(target_relation, model) %}
    {% do cdc_merge.unlock_mirror(target_relation) %}
    {{ run_hooks(post_hooks) }}
    {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}


{% macro history_run_counts(totals, chunks) %}
    {#-
        A history run's counts as a mirror's runs row holds them: a version row replaced by one of the
        same key (a version closed, a chain rebuilt) is an update; the rest of the rows written are
        inserts, of those removed deletes. So inserted - deleted is the change in the table's rows.
    -#}
    {% set rewritten = [totals.added, totals.removed] | min %}
    {% set counts = cdc_merge.no_counts(chunks) %}
    {% do counts.update({'events_read': totals.events, 'inserted': totals.added - rewritten, 'updated': rewritten,
                         'deleted': totals.removed - rewritten, 'max_source_ts': totals.max_source_ts}) %}
    {{ return(counts) }}
{% endmacro %}
