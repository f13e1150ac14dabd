{#
    cdc_merge: apply the new events of one source table from the raw log to its mirror.

    Steps: validate every config; find the raw snapshots added since this mirror's
    offset; for each bounded chunk of them, dedup to the newest event per key, classify
    it against the mirror, MERGE, and only then append the new offset. A run that dies
    half way repeats its last chunk next time, which the seq guards make harmless.

    This file runs the steps; what runs is decided in Python (python_jobs/apply/: run_plan.py,
    chunk_plan.py, write_plan.py, ...) and each step is a file of its own beside it, its spark__ and
    databend__ versions side by side (docs/architecture.md lists them). One batch: apply_batch.sql.
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

    {#- Another process applying this mirror (or, on a catalog with transactions, its group): wait for it, then apply
        what is new after it (run_guard.sql). -#}
    {% do cdc_merge.lock_mirror(target_relation, cfg.consistency_group) %}
    {#- A --full-refresh that stopped before taking the mirror's place left its rebuild beside it (rebuild_aside.sql). -#}
    {% do cdc_merge.drop_stopped_rebuild(target_relation, cfg, offsets) %}

    {#- Nothing new since the mirror's offset: one cheap check, no statement of its own (idle.sql). -#}
    {% set idle_read = {} %}
    {% if cdc_merge.nothing_new(existing_relation, target_relation, offsets, cfg, model_sql, run_started, idle_read) %}
        {% do store_raw_result('main', message='OK', code='OK', rows_affected=0) %}
        {#- A group's mirror counts as done at its offset: the group's other mirrors may write the cut (consistency.sql). -#}
        {% if cfg.consistency_group is not none %}
            {% do cdc_merge.finish_group_member(cfg, target_relation, offsets, none) %}
        {% endif %}
        {% do cdc_merge.persist_mirror_docs(target_relation, model) %}
        {% do cdc_merge.unlock_mirror(target_relation) %}
        {% do cdc_merge.finish_mirror_run() %}
        {{ run_hooks(post_hooks) }}
        {{ return({'relations': [target_relation]}) }}
    {% endif %}

    {% do cdc_merge.ensure_bookkeeping_tables(offsets) %}
    {% set existing_relation = cdc_merge.loadable_mirror(existing_relation) %}

    {#- The run's mode, decided in python_jobs/apply/run_plan.py from the mirror, the flags and its offset. -#}
    {% set latest = idle_read.get('offset') or cdc_merge.newest_offset(offsets, target_relation) %}
    {% set run = adapter.cdc_run_plan(none if existing_relation is none else ('view' if existing_relation.is_view else 'table'),
        should_full_refresh(), flags.EMPTY, cfg.change_source, latest.offset_snapshot,
        cfg.consistency_group is not none and adapter.cdc_catalog_has_transactions()) %}
    {#- On a catalog with transactions a group mirror's commits wait for the group's publish from here on, or, rebuilt
        aside, from the rebuild's swap on (catalog_transaction.sql). -#}
    {% set transaction = cdc_merge.join_catalog_transaction(run, cfg, target_relation, tombstones, offsets, existing_relation) %}
    {#- The offset goes back to the start of the log first: a mirror created again (rebuilt in place, or dropped by hand)
        that dies before its first offset row, or applies nothing (--empty), resumes from there. -#}
    {% if run.restart_offset %}
        {% do run_query(cdc_merge.append_offset_sql(offsets, target_relation, cfg, latest.offset_ordinal + 1, none, cdc_merge.no_counts())) %}
        {% set latest = cdc_merge.newest_offset(offsets, target_relation) %}
    {% endif %}
    {#- A stored mirror is rebuilt aside, and takes the rebuild's place once it is whole (rebuild_aside.sql): until then the
        run's steps build <mirror>__cdc_rebuild, with bookkeeping of its own. -#}
    {% if run.build_aside %}
        {% set mirror = {'relation': target_relation, 'tombstones': tombstones, 'changes': changes, 'offset_ordinal': latest.offset_ordinal} %}
        {% set target_relation = cdc_merge.start_rebuild_aside(target_relation, cfg, offsets) %}
        {% set tombstones = cdc_merge.tombstones_relation(target_relation) if cfg.deletes == 'hard' else none %}
        {% set changes = cdc_merge.changes_relation(target_relation) %}
        {% set latest = {'offset_snapshot': none, 'offset_ordinal': 0} %}
    {% elif run.rebuild %}
        {{ log("cdc_merge " ~ target_relation ~ ": rebuilding in place from the whole raw log", info=True) }}
        {% do adapter.drop_relation(existing_relation) %}
        {% if tombstones is not none %}
            {% do run_query('drop table if exists ' ~ tombstones) %}
        {% endif %}
        {% do adapter.drop_relation(cdc_merge.unsent_relation(target_relation)) %}
        {% set existing_relation = none %}
    {% endif %}
    {#- Truncates of the source table (truncate.sql): a mirror built from the start of the log finds them there again. -#}
    {% if run.create %}
        {% do cdc_merge.forget_truncates(cfg, target_relation) %}
    {% endif %}
    {% set truncated = namespace(seq=cdc_merge.truncate_watermark(cfg, target_relation), rows=0) %}
    {% set ordinal = namespace(value=latest.offset_ordinal, snapshot=latest.offset_snapshot) %}
    {% set offset_snapshot = none if run.read_from == 'start' else latest.offset_snapshot %}
    {% set stream = cdc_merge.change_stream_relation(target_relation) if cfg.change_source == 'stream' else none %}
    {#- A consistency group's mirrors apply whole source transactions only, through one horizon (consistency.sql). -#}
    {% set horizon = cdc_merge.group_horizon(cfg, offsets) if cfg.consistency_group is not none else none %}
    {% set pending = [] %}
    {% set current_snapshot = none %}
    {% if run.read_from == 'stream' %}
        {% set chunks = [{'after': none, 'through': 'stream', 'buckets': 1, 'stream': stream}] %}
    {% else %}
        {% set snapshot_log = cdc_merge.raw_snapshot_log(cfg.raw_relation, idle_read.get('current_snapshot')) %}
        {% if horizon is not none %}
            {% set snapshot_log = cdc_merge.group_snapshot_log(snapshot_log, horizon) %}
        {% endif %}
        {% set current_snapshot = snapshot_log.current %}
        {% set pending = cdc_merge.pending_raw_snapshots(cfg.raw_relation, offset_snapshot, snapshot_log) %}
        {% set chunks = cdc_merge.chunks_of(pending, cfg.max_events_per_chunk, offset_snapshot, cfg.raw_relation, cfg.source_table) %}
    {% endif %}
    {% if not run.apply_events %}
        {% set chunks = [] %}
    {% endif %}

    {#- What the steps share: the run's relations and config; the counts and positions its chunks add up, changed in place.
        The steps wrap the model's SQL in parentheses: its newline ends a `--` comment on the model's last line. -#}
    {% set run_state = {'target_relation': target_relation, 'tombstones': tombstones, 'changes': changes, 'offsets': offsets,
        'cfg': cfg, 'model_sql': model_sql ~ '\n', 'raw_changes_view': raw_changes_view, 'batch_view': batch_view, 'horizon': horizon,
        'pending': pending, 'run_started': run_started, 'ordinal': ordinal, 'truncated': truncated, 'in_catalog_transaction': transaction.joined,
        'building_aside': run.build_aside,
        'batch_view_sql': namespace(value=none), 'defaulted': [], 'ranged': namespace(rows=0), 'notes': [],
        'totals': cdc_merge.no_counts(chunks | length)} %}
    {#- The model's columns, and the mirror created or changed to match them (prepare_mirror.sql). -#}
    {% do cdc_merge.prepare_mirror(run, chunks, run_state) %}
    {% for chunk in chunks %}
        {% do cdc_merge.apply_chunk(chunk, loop.index, loop.length, run_state) %}
    {% endfor %}
    {% if run.build_aside %}
        {% do cdc_merge.put_rebuild_in_place(run_state, mirror, transaction if run.join_transaction else none) %}
        {% set target_relation = run_state.target_relation %}
    {% endif %}
    {#- Scratch dropped, a stream started, maintenance, the runs row, the group's cut, the summary line (finish_run.sql). -#}
    {% do cdc_merge.finish_run(run, run_state, transaction, stream, current_snapshot) %}
    {% set totals = run_state.totals %}
    {% do cdc_merge.persist_mirror_docs(target_relation, model) %}
    {% do cdc_merge.unlock_mirror(target_relation) %}
    {% do cdc_merge.finish_mirror_run() %}
    {#- The run's result without a statement; its counts are in the summary line above and in cdc_merge_runs. -#}
    {% do store_raw_result('main', message='OK', code='OK', rows_affected=totals.inserted + totals.updated + totals.deleted) %}

    {{ run_hooks(post_hooks) }}
    {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
