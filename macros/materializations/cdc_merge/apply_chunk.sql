{#
    One chunk of a cdc_merge run (cdc_merge.sql runs it for each): its raw events read, its truncates
    applied, each bucket and round applied as a batch (apply_batch.sql), the source's added columns
    and online snapshot ranges applied, then its offset written; of a quiet chunk (none of the
    source's events: chunk_plan.py), only its offset. run_state: the run's relations,
    config and columns, and what the chunks add up (ordinal, truncated, batch_view_sql, ranged:
    namespaces; defaulted: a list; totals: the run's counts), changed in place.
#}

{% macro apply_chunk(chunk, index, count, run_state) %}
    {% set target_relation = run_state.target_relation %}
    {% set tombstones = run_state.tombstones %}
    {% set changes = run_state.changes %}
    {% set offsets = run_state.offsets %}
    {% set cfg = run_state.cfg %}
    {% set model_sql = run_state.model_sql %}
    {% set columns = run_state.columns %}
    {% set by_position = run_state.by_position %}
    {% set column_types = run_state.column_types %}
    {% set raw_changes_view = run_state.raw_changes_view %}
    {% set batch_view = run_state.batch_view %}
    {% set horizon = run_state.horizon %}
    {% set pending = run_state.pending %}
    {% set run_started = run_state.run_started %}
    {% set ordinal = run_state.ordinal %}
    {% set truncated = run_state.truncated %}
    {% set batch_view_sql = run_state.batch_view_sql %}
    {% set defaulted = run_state.defaulted %}
    {% set ranged = run_state.ranged %}
    {% set totals = run_state.totals %}
    {% set chunk_stats = cdc_merge.no_counts() %}
    {% if chunk.stream is defined %}
        {#- Consuming the stream and applying what it held commit together, or not at all. -#}
        {% do run_query('begin') %}
    {% endif %}
    {#- A quiet chunk holds none of the source's events (chunk_plan.py): applying it would write nothing, so only its offset is written. -#}
    {% if not chunk.get('quiet') %}
        {% if not (index == 1 and chunk.stream is not defined) %}
            {#- The first chunk's raw events were read above, for the model's columns. -#}
            {% do cdc_merge.read_chunk(chunk, raw_changes_view, cfg) %}
        {% endif %}
        {% set waiting_ranges = cdc_merge.ranges_waiting_for_deferred(raw_changes_view, cfg, horizon) %}
        {% set chunk_view = cdc_merge.keep_whole_transactions(raw_changes_view, horizon) %}
        {#- The chunk's counts, key range, placeholders, truncate and fields, when one pass over the range gave them for every mirror. -#}
        {% set chunk_plan = cdc_merge.chunk_plan(chunk, cfg, raw_changes_view, chunk_view) %}
        {#- The same facts from one query where no pass gave them (raw_log.sql chunk_facts); the first chunk's read already for the model's columns. -#}
        {% set facts = run_state.first_facts if (index == 1 and chunk_plan is none and chunk_view == raw_changes_view
            and run_state.get('first_facts') is not none) else cdc_merge.chunk_facts(chunk_plan, chunk_view, cfg) %}
        {#- The chunk's schema events; a column the source retyped beyond what its mirror column holds stops the run here (retype_check.py). -#}
        {% set schema_events = cdc_merge.chunk_column_defaults(chunk_view, cfg, facts) %}
        {% set retyped = adapter.cdc_retype_problem(schema_events, column_types, cfg.source_table, model.name) if schema_events else none %}
        {% if retyped %}
            {% do exceptions.raise_compiler_error(retyped) %}
        {% endif %}
        {% set newest_view = cdc_merge.newest_events_view(chunk, raw_changes_view, cfg, chunk_plan, horizon is none, [target_relation, tombstones]) %}
        {#- A truncate applies before the events, which it leaves only the newer of; with soft deletes after them all (truncate_plan.py). -#}
        {% set truncate = cdc_merge.chunk_truncate_plan(chunk_view, cfg, truncated.seq, facts) %}
        {% if truncate.seq is not none and not truncate.after_events %}
            {% do cdc_merge.apply_chunk_truncates(target_relation, tombstones, chunk_view, cfg, truncate, truncated, chunk_stats) %}
        {% endif %}
        {#- TOAST values an update left unsent, for an older event arriving later to fill (unsent_columns.sql). -#}
        {% set applied_sql = cdc_merge.after_truncate_sql(model_sql, truncated.seq) %}
        {#- The whole chunk's counts, asked once where no facts gave them: its one bucket's plan too. -#}
        {% set whole_plan = facts if facts is not none else (run_query(cdc_merge.bucket_plan_sql(chunk_view, cfg.source_table, 0, 1)).rows[0]
            if chunk.buckets == 1 else none) %}
        {% set may_fill = cdc_merge.unsent_fill_may_apply(target_relation, tombstones, chunk_view, cfg, facts) %}
        {% do cdc_merge.record_unsent_columns(target_relation, tombstones, chunk_view, cfg, applied_sql, columns, batch_view, whole_plan, batch_view_sql) %}
        {% for bucket in range(chunk.buckets) %}
            {% set plan = whole_plan if (whole_plan is not none and chunk.buckets == 1) else run_query(cdc_merge.bucket_plan_sql(chunk_view, cfg.source_table, bucket, chunk.buckets)).rows[0] %}
            {% set rounds = cdc_merge.bucket_rounds(chunk_view, cfg.source_table, bucket, chunk.buckets, plan, newest_view is not none) %}
            {% set key_range = adapter.cdc_key_range(plan, model.name) %}
            {% if key_range.error %}
                {% do exceptions.raise_compiler_error(key_range.error) %}
            {% endif %}
            {% set key_range = key_range.range if cdc_merge.key_range_skips_files(target_relation, key_range.range) else none %}
            {% set batch_keys_sql = cdc_merge.batch_keys_sql(chunk_view, cfg.source_table, bucket, chunk.buckets) %}
            {#- A small batch goes to the mirror in one commit on main, not through a branch (one_commit.py). -#}
            {% set one_commit = adapter.cdc_one_commit(by_position, chunk_plan, chunk.buckets) %}
            {% set rounds_started = modules.datetime.datetime.utcnow() %}
            {% for round in range(1, rounds + 1) %}
                {% if rounds > 25 and round % 25 == 1 and round > 1 %}
                    {#- A key changed many times with its TOAST values unsent is applied an event a round: say how far it is. -#}
                    {{ log(adapter.cdc_progress_line("cdc_merge " ~ target_relation ~ " applying events with unchanged TOAST values a round each",
                        round - 1, rounds, "rounds", rounds_started), info=True) }}
                {% endif %}
                {% if one_commit and newest_view is none %}
                    {#- A small batch's own dedup (TOAST placeholders, a group's deferred transactions) computed once, into the
                        driver: the key hashes, the stored rows and the classification each read it. Rows, not a view of the
                        chunk, so made again for every round and chunk. -#}
                    {% do adapter.create_checkpoint_view(batch_view, cdc_merge.batch_events_sql(chunk_view, cfg.source_table, bucket, chunk.buckets,
                        round, rounds), none, true) %}
                    {% set batch_view_sql.value = none %}
                {% else %}
                    {% set view_sql = cdc_merge.create_batch_view_sql(batch_view, newest_view or chunk_view, cfg.source_table, bucket, chunk.buckets,
                        round, rounds, newest_view is not none) %}
                    {% if view_sql != batch_view_sql.value %}
                        {% do run_query(view_sql) %}
                        {% set batch_view_sql.value = view_sql %}
                    {% endif %}
                {% endif %}
                {% set counts = cdc_merge.apply_batch(target_relation, tombstones, changes, applied_sql, batch_keys_sql, key_range, columns, cfg, by_position, one_commit) %}
                {% do cdc_merge.add_counts(chunk_stats, counts) %}
            {% endfor %}
            {% if rounds > 25 %}
                {{ log(adapter.cdc_progress_line("cdc_merge " ~ target_relation ~ " applying events with unchanged TOAST values a round each",
                    rounds, rounds, "rounds", rounds_started), info=True) }}
            {% endif %}
        {% endfor %}
        {% if truncate.seq is not none and truncate.after_events %}
            {% do cdc_merge.apply_chunk_truncates(target_relation, tombstones, chunk_view, cfg, truncate, truncated, chunk_stats) %}
            {% set applied_sql = cdc_merge.after_truncate_sql(model_sql, truncated.seq) %}
        {% endif %}
        {% do cdc_merge.fill_unsent_columns(target_relation, chunk_view, cfg, applied_sql, columns, batch_view, batch_view_sql, may_fill, facts) %}
        {% do defaulted.extend(cdc_merge.apply_chunk_column_defaults(target_relation, chunk_view, cfg, schema_events or [], column_types, run_state, chunk, facts)) %}
        {% set range_rows = cdc_merge.apply_snapshot_ranges(target_relation, tombstones, cdc_merge.chunk_snapshot_ranges(chunk_view, cfg, facts), column_types, cfg, chunk_view, waiting_ranges) %}
        {% set ranged.rows = ranged.rows + range_rows %}
        {% do chunk_stats.update({'deleted': chunk_stats.deleted + range_rows}) %}
    {% endif %}
    {% set ordinal.value = ordinal.value + 1 %}
    {% do cdc_merge.crash_point('apply-before-offset') %}
    {#- A group's mirror never goes past the group's tail start: the next run reads the deferred transactions again. -#}
    {% set offset_to = adapter.cdc_group_offset(pending | map(attribute='snapshot_id') | list, horizon.tail_start, chunk.through)
        if horizon is not none else chunk.through %}
    {% if adapter.cdc_offset_row(index == count, chunk.stream is defined, run_state.in_catalog_transaction, run_state.building_aside) == 'keep' %}
        {% do cdc_merge.keep_offset(offsets, target_relation, cfg, offset_to, chunk_stats, ordinal.value) %}
    {% else %}
        {% do run_query(cdc_merge.append_offset_sql(offsets, target_relation, cfg, ordinal.value, offset_to, chunk_stats)) %}
    {% endif %}
    {% set ordinal.snapshot = offset_to %}
    {% do cdc_merge.keep_applied_column_defaults(target_relation, cfg, chunk, offset_to, run_state, schema_events) %}
    {% if chunk.stream is defined %}
        {% do run_query('commit') %}
    {% endif %}
    {% do cdc_merge.add_counts(totals, chunk_stats) %}
    {{ log("cdc_merge " ~ target_relation ~ ": chunk " ~ index ~ "/" ~ count ~ (" (none of " ~ cfg.source_table ~ "'s events): "
        if chunk.get('quiet') else " (" ~ chunk.buckets ~ " bucket(s)): ")
        ~ chunk_stats.events_read ~ " keys changed, " ~ chunk_stats.inserted ~ " inserted, " ~ chunk_stats.updated ~ " updated, "
        ~ chunk_stats.deleted ~ " deleted, " ~ chunk_stats.skipped ~ " skipped; offset -> snapshot " ~ offset_to, info=True) }}
    {% if count > 1 %}
        {#- A long catch-up: how fast it goes and when it will be done. -#}
        {{ log(adapter.cdc_progress_line("cdc_merge " ~ target_relation ~ " catching up", index, count, "chunks", run_started), info=True) }}
    {% endif %}
{% endmacro %}
