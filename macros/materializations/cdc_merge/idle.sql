{#
    The idle check: a mirror with nothing new costs one cheap check, not the statements of a run.

    Where the adapter reads the facts once per invocation (capabilities().idle_state:
    nothing_new_by_state), an idle mirror runs no statement of its own. In dbt's own SparkSession
    (run_state.py) the newest offset of every mirror is one query per invocation, and the raw
    table's current snapshot and the mirror's files, snapshots and model checksum come from
    Iceberg's metadata in the JVM. On Databend (cdc_databend/mirror_facts.py) one query of
    system.tables and one over the fuse_snapshot of every mirror of the invocation give the same,
    with the model checksum in the table comment. A mirror whose offset is the raw table's current
    snapshot is done; so is one whose source has no event in the raw snapshots after its offset (a
    quiet source: its offset moves to the current snapshot, kept with the other mirrors' offsets).
    Unless it is missing, a view, being full-refreshed, its model SQL is not the one its columns were
    last checked against, or one of its maintenance thresholds is crossed: those take the full path.
    The idle run's cdc_merge_runs row is written with the invocation's other rows in one INSERT, by
    the last mirror of the invocation to finish (finish_mirror_run, kept_rows.sql).

    Elsewhere (a Thrift server) the same conditions take a few
    small statements of the mirror's own (nothing_new_by_queries): its newest offset, the raw
    table's current snapshot, the model checksum (a table property on Iceberg, the table comment
    on Databend) and its maintenance state; its cdc_merge_runs row is kept with the invocation's
    others. A mirror that takes the full path uses the offset and the snapshot read here.

    Both ask the adapter plugin for the decision (python_jobs/apply/idle_decision.py, with unit
    tests).
#}

{% macro nothing_new(existing_relation, target_relation, offsets, cfg, model_sql, run_started, read={}) %}
    {#- True when the mirror had nothing to apply and its run is done. read: filled with what the check's
        queries read ('offset' as newest_offset gives it, 'current_snapshot'), for the full path to use
        instead of reading them again: the mirror is locked, so its offset stays what it was. -#}
    {% if cdc_merge.capabilities().idle_state %}
        {{ return(cdc_merge.nothing_new_by_state(existing_relation, target_relation, offsets, cfg, model_sql, run_started)) }}
    {% endif %}
    {{ return(cdc_merge.nothing_new_by_queries(existing_relation, target_relation, offsets, cfg, model_sql, run_started, read)) }}
{% endmacro %}


{% macro nothing_new_by_state(existing_relation, target_relation, offsets, cfg, model_sql, run_started) %}
    {#- The adapter's facts, read once per invocation for all its mirrors: no statement of the mirror's own. -#}
    {% do cdc_merge.write_kept_rows(adapter.cdc_kept_rows_left_unwritten(invocation_id)) %}
    {% if cdc_merge.full_path_before_offsets(existing_relation, cfg) %}
        {{ return(false) }}
    {% endif %}
    {% set state = adapter.cdc_idle_state(invocation_id, offsets | string, cfg.raw_relation | string, target_relation | string, selected_resources, graph.nodes) %}
    {% if state is none %}
        {{ return(false) }}
    {% endif %}
    {#- None of the source's events after the offset (chunk_plan.py quiet_through): the offset moves to the current raw snapshot, nothing is read. -#}
    {% set quiet_through = adapter.cdc_quiet_through(cfg.raw_relation.schema ~ '.' ~ cfg.raw_relation.identifier, cfg.source_table,
        state.offset_snapshot, state.current_snapshot, cfg.consistency_group) %}
    {% if cdc_merge.full_path_at_offsets(target_relation, quiet_through or state.offset_snapshot, state.current_snapshot, state.mirror.model_checksum, model_sql, cfg) %}
        {{ return(false) }}
    {% endif %}
    {% if cfg.maintenance.maintenance == 'auto' and cdc_merge.maintenance_due(target_relation, cfg.maintenance, state.mirror) %}
        {{ return(false) }}
    {% endif %}
    {% set nothing = cdc_merge.no_counts(0) %}
    {% if quiet_through is not none %}
        {% do cdc_merge.keep_offset(offsets, target_relation, cfg, quiet_through, nothing) %}
        {% do cdc_merge.keep_applied_column_defaults(target_relation, cfg, {'after': state.offset_snapshot}, quiet_through, {}, []) %}
        {{ log("cdc_merge " ~ target_relation ~ ": none of " ~ cfg.source_table ~ "'s events after offset " ~ state.offset_snapshot
            ~ "; offset -> snapshot " ~ quiet_through, info=True) }}
    {% else %}
        {{ log("cdc_merge " ~ target_relation ~ ": nothing new (offset = current raw snapshot " ~ state.current_snapshot ~ ")", info=True) }}
    {% endif %}
    {% do cdc_merge.keep_run(offsets, target_relation, cfg, nothing, run_started, none, quiet_through or state.offset_snapshot) %}
    {{ return(true) }}
{% endmacro %}


{% macro nothing_new_by_queries(existing_relation, target_relation, offsets, cfg, model_sql, run_started, read={}) %}
    {% if cdc_merge.full_path_before_offsets(existing_relation, cfg) %}
        {{ return(false) }}
    {% endif %}
    {#- Bookkeeping tables a mirror from before them lacks: its full path creates them. -#}
    {% for identifier in [offsets.identifier, cdc_merge.runs_relation(offsets).identifier] %}
        {% if adapter.get_relation(database=none, schema=offsets.schema, identifier=identifier) is none %}
            {{ return(false) }}
        {% endif %}
    {% endfor %}
    {% set latest = run_query(cdc_merge.latest_offset_sql(offsets, target_relation)).rows %}
    {% set offset_snapshot = (latest[0]['offset_snapshot'] or none) if latest | length else none %}
    {% do read.update({'offset': {'offset_snapshot': offset_snapshot,
                                  'offset_ordinal': (latest[0]['offset_ordinal'] | int) if latest | length else 0}}) %}
    {% if offset_snapshot is none %}
        {{ return(false) }}
    {% endif %}
    {% set current = run_query(cdc_merge.current_raw_snapshot_sql(cfg.raw_relation)).rows %}
    {% set current_snapshot = current[0]['snapshot_id'] if current | length else none %}
    {% do read.update({'current_snapshot': current_snapshot}) %}
    {% set stored_checksum = cdc_merge.stored_model_checksum(target_relation) if (offset_snapshot | string) == (current_snapshot | string) else none %}
    {% if cdc_merge.full_path_at_offsets(target_relation, offset_snapshot, current_snapshot, stored_checksum, model_sql, cfg) %}
        {{ return(false) }}
    {% endif %}
    {% if cfg.maintenance.maintenance == 'auto' and cdc_merge.maintenance_due(target_relation, cfg.maintenance) %}
        {{ return(false) }}
    {% endif %}
    {% set nothing = cdc_merge.no_counts(0) %}
    {% if cdc_merge.capabilities().keeps_run_rows %}
        {% do cdc_merge.keep_run(offsets, target_relation, cfg, nothing, run_started, none, offset_snapshot) %}
    {% else %}
        {% do cdc_merge.record_run(offsets, target_relation, cfg, nothing, run_started, none, offset_snapshot) %}
    {% endif %}
    {{ log("cdc_merge " ~ target_relation ~ ": nothing new (offset = current raw snapshot " ~ offset_snapshot ~ ")", info=True) }}
    {{ return(true) }}
{% endmacro %}


{% macro full_path_before_offsets(existing_relation, cfg) %}
    {#- Why the mirror takes the full path whatever its offsets say, or none (python_jobs/apply/idle_decision.py). -#}
    {% set kind = none if existing_relation is none else ('view' if existing_relation.is_view else 'table') %}
    {{ return(adapter.cdc_full_path_before_offsets(kind, should_full_refresh(), cfg.change_source)) }}
{% endmacro %}


{% macro full_path_at_offsets(target_relation, offset_snapshot, current_snapshot, stored_checksum, model_sql, cfg) %}
    {#- Why the mirror takes the full path at its offset and the raw table's current snapshot, or none (idle_decision.py). -#}
    {% set model_checksum = cdc_merge.model_checksum(model_sql, cfg) %}
    {% set reason = adapter.cdc_full_path_at_offsets(offset_snapshot, current_snapshot, stored_checksum, model_checksum) %}
    {% if reason %}
        {{ log("cdc_merge " ~ target_relation ~ ": " ~ reason ~ ": full path", info=False) }}
    {% endif %}
    {{ return(reason) }}
{% endmacro %}


{% macro stored_model_checksum(target_relation) %}
    {#- The checksum remember_model_checksum stored on the mirror, or none. -#}
    {{ return(adapter.dispatch('stored_model_checksum', 'cdc_merge')(target_relation)) }}
{% endmacro %}

{% macro spark__stored_model_checksum(target_relation) %}
    {% for row in run_query("show tblproperties " ~ target_relation).rows if row['key'] == 'cdc-merge.model-sql-md5' %}
        {{ return(row['value']) }}
    {% endfor %}
    {{ return(none) }}
{% endmacro %}

{% macro databend__stored_model_checksum(target_relation) %}
    {#- Databend keeps no table properties of a user's choosing: the checksum is the mirror's comment. -#}
    {% set rows = run_query("select comment from system.tables where database = '" ~ target_relation.schema
        ~ "' and name = '" ~ target_relation.identifier ~ "'").rows %}
    {% set comment = (rows[0]['comment'] or '') if rows | length else '' %}
    {{ return(comment[('cdc-merge.model-sql-md5=' | length):] if comment.startswith('cdc-merge.model-sql-md5=') else none) }}
{% endmacro %}


{% macro store_model_checksum_sql(target_relation, checksum, model_columns) %}
    {{ return(adapter.dispatch('store_model_checksum_sql', 'cdc_merge')(target_relation, checksum, model_columns)) }}
{% endmacro %}

{% macro spark__store_model_checksum_sql(target_relation, checksum, model_columns) %}
    {#- The model's columns beside it (model_columns.sql), in the same statement. -#}
    alter table {{ target_relation }} set tblproperties (
        'cdc-merge.model-sql-md5' = '{{ checksum }}', '{{ cdc_merge.model_columns_setting() }}' = '{{ model_columns | join(',') }}')
{% endmacro %}

{% macro databend__store_model_checksum_sql(target_relation, checksum, model_columns) %}
    alter table {{ target_relation }} comment = 'cdc-merge.model-sql-md5={{ checksum }}'
{% endmacro %}

{% macro model_checksum(model_sql, cfg) %}
    {#- What the mirror's columns depend on: the model's compiled SQL, the delete mode and on_schema_change. -#}
    {{ return(local_md5(model_sql ~ '|deletes=' ~ cfg.deletes ~ '|on_schema_change=' ~ cfg.on_schema_change)) }}
{% endmacro %}


{% macro checked_model_checksum(target_relation, cfg) %}
    {#- The checksum of the model SQL the stored mirror was last checked against, or none (no mirror, or a stream's). -#}
    {% if cfg.change_source != 'changes' or target_relation is none %}
        {{ return(none) }}
    {% endif %}
    {{ return(adapter.cdc_model_checksum(target_relation | string) if cdc_merge.in_process_session()
        else cdc_merge.stored_model_checksum(target_relation)) }}
{% endmacro %}


{% macro remember_model_checksum(target_relation, model_sql, cfg, stored, offsets, model_columns) %}
    {#-
        After the mirror's columns were checked against the model: the checksum the idle check compares
        (stored: checked_model_checksum's), and with it the model's output columns (model_columns.sql).
    -#}
    {% if cfg.change_source != 'changes' %}
        {{ return(none) }}
    {% endif %}
    {% set checksum = cdc_merge.model_checksum(model_sql, cfg) %}
    {% if stored != checksum %}
        {% do run_query(cdc_merge.store_model_checksum_sql(target_relation, checksum, model_columns)) %}
        {% do cdc_merge.remember_model_columns(target_relation, offsets, model_columns) %}
    {% endif %}
{% endmacro %}


{% macro finish_mirror_run() %}
    {#- The last mirror of the invocation to finish writes the kept rows of all (kept_rows.sql). -#}
    {% set can = cdc_merge.capabilities() %}
    {% if can.keeps_offset_rows or can.keeps_run_rows %}
        {% do cdc_merge.write_kept_rows(adapter.cdc_kept_rows_to_write(invocation_id, selected_resources, graph.nodes)) %}
    {% endif %}
{% endmacro %}

