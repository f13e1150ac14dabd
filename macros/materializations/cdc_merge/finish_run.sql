{#
    After a cdc_merge run's chunks: its scratch dropped; with change_source='stream', the stream that
    takes over created; then, with every chunk's offset recorded, maintenance when due
    (maintenance.sql), the run's cdc_merge_runs row (metrics.sql), the group's cut (consistency.sql)
    and the summary line.
#}

{% macro finish_run(run, run_state, transaction, stream, current_snapshot) %}
    {% set target_relation = run_state.target_relation %}
    {% set tombstones = run_state.tombstones %}
    {% set offsets = run_state.offsets %}
    {% set cfg = run_state.cfg %}
    {% set raw_changes_view = run_state.raw_changes_view %}
    {% set batch_view = run_state.batch_view %}
    {% set horizon = run_state.horizon %}
    {% set run_started = run_state.run_started %}
    {% set ordinal = run_state.ordinal %}
    {% set truncated = run_state.truncated %}
    {% set defaulted = run_state.defaulted %}
    {% set ranged = run_state.ranged %}
    {% set notes = run_state.notes %}
    {% set totals = run_state.totals %}
    {% set can = cdc_merge.capabilities() %}
    {% do cdc_merge.drop_scratch(raw_changes_view) %}
    {% do cdc_merge.drop_newest_events_view(raw_changes_view) %}
    {% if horizon is not none %}
        {% do cdc_merge.drop_scratch(raw_changes_view ~ '__whole') %}
        {% do totals.update({'cut_lag_seconds': horizon.lag_seconds}) %}
    {% endif %}
    {% if run.start_stream %}
        {% do run_query('drop stream if exists ' ~ stream) %}
        {% do run_query(cdc_merge.create_change_stream_sql(stream, cfg.raw_relation, current_snapshot)) %}
        {% set ordinal.value = ordinal.value + 1 %}
        {% do run_query(cdc_merge.append_offset_sql(offsets, target_relation, cfg, ordinal.value, 'stream', cdc_merge.no_counts())) %}
        {% set ordinal.snapshot = 'stream' %}
    {% endif %}
    {% do cdc_merge.drop_temporary_view(batch_view) %}
    {#- Only now, with every applied chunk's offset recorded: maintenance.sql, metrics.sql. -#}
    {% set maintained = transaction.maintained if transaction.joined else cdc_merge.maintain_after_run(target_relation, tombstones, offsets, cfg) %}
    {% if can.keeps_run_rows and not transaction.joined %}
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
{% endmacro %}
