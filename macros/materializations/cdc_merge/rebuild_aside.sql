{#
    A rebuild built aside (python_jobs/apply/run_plan.py build_aside): `--full-refresh` of a stored
    mirror applies the whole raw log to <mirror>__cdc_rebuild, with tombstones, unsent columns, offsets
    and truncates of its own, while readers go on reading the mirror as it was. Only once every event
    is applied does the rebuilt table take the mirror's place. A rebuild that stops (a value the new
    model cannot read, a crash) leaves the mirror and its offset as they were; the next run applies
    to it what is new, and the next rebuild starts again from the start of the log.

    The steps of taking its place, each safe to die after:
    1. the mirror, its tombstones and unsent columns replaced by the rebuild's (on Iceberg one
       `create or replace table ... as select` each: one commit, the mirror's old snapshots kept;
       on Databend `create or replace table`). Dying here leaves the rebuilt rows under the mirror's
       old offset: the next run applies the events after it again, which the seq guards make harmless;
    2. the model's checksum and the rebuild's truncates, as the mirror's;
    3. the mirror's offset: the rebuild's last, in one row of the mirror's;
    4. the rebuild's tables and bookkeeping rows dropped.
    What a rebuild that stopped left is dropped by the mirror's next run, or by the next rebuild.

    A consistency group's mirror on a catalog with transactions (the cluster's) is built aside
    outside the group's transaction and joins it before step 1 (catalog_transaction.sql): steps 1-3
    are commits the group's cut publishes with its other mirrors, and until then readers see the
    old mirror. Step 4 is left to the mirror's next run: dropping is not part of the transaction,
    the cut may not publish (then they are a rebuild that stopped), and the transaction may only
    append to the tables the mirrors share (the group's other rebuilds append to them meanwhile),
    so the rebuild's truncates are added to the mirror's, not put in their place (the newest is the
    mirror's watermark; the rebuild found every one of them again).

    A history (cdc_history) is rebuilt aside the same way (put_history_rebuild_in_place): its deletes
    table in the tombstones' place, its deletes mode in the model's checksum's.
#}

{% macro rebuild_aside_relation(target_relation) %}
    {{ return(target_relation.incorporate(path={'identifier': target_relation.identifier ~ '__cdc_rebuild'})) }}
{% endmacro %}


{% macro start_rebuild_aside(mirror, cfg, offsets, is_history=false) %}
    {#- The relation to build, with what a rebuild that stopped left dropped. -#}
    {% set aside = cdc_merge.rebuild_aside_relation(mirror) %}
    {% do cdc_merge.forget_rebuild(aside, cfg, offsets, is_history) %}
    {{ log(('cdc_history ' if is_history else 'cdc_merge ') ~ mirror ~ ": rebuilding from the whole raw log in " ~ aside
        ~ "; the " ~ ('history' if is_history else 'mirror') ~ " stays as it is until the rebuild takes its place", info=True) }}
    {{ return(aside) }}
{% endmacro %}


{% macro start_rebuild_offset(run_state) %}
    {#- Once the rebuild's table exists (prepare_mirror.sql), so that the mirror's next run finds what a rebuild that
        stops leaves: an offset row at the start of the log, by which maintenance keeps what the rebuild still needs
        (retention.sql applied_offsets). -#}
    {% set ordinal = run_state.ordinal %}
    {% set ordinal.value = ordinal.value + 1 %}
    {% do run_query(cdc_merge.append_offset_sql(run_state.offsets, run_state.target_relation, run_state.cfg, ordinal.value, none,
        cdc_merge.no_counts())) %}
{% endmacro %}


{% macro drop_stopped_rebuild(mirror, cfg, offsets, is_history=false) %}
    {#- What a rebuild that stopped left beside the mirror, dropped by the mirror's next run: with the mirror's lock
        taken, none is under way, and its offset would hold the raw log's retention back. dbt's relation cache
        answers whether there is one: no statement when there is none. -#}
    {% set aside = cdc_merge.rebuild_aside_relation(mirror) %}
    {% if load_cached_relation(aside) is none %}
        {{ return(none) }}
    {% endif %}
    {% set kind = 'history' if is_history else 'mirror' %}
    {% set prefix = 'cdc_history ' if is_history else 'cdc_merge ' %}
    {#- A group's rebuild whose swap its cut published (put_rebuild_in_place) left it too: the mirror has an offset row
        of the rebuild's invocation then. -#}
    {% set swapped = run_query("select count(*) as swapped from " ~ offsets ~ " where target_table = '" ~ mirror
        ~ "' and invocation_id in (select invocation_id from " ~ offsets ~ " where target_table = '" ~ aside ~ "')").rows[0]['swapped'] | int %}
    {% if swapped %}
        {{ log(prefix ~ mirror ~ ": dropping " ~ aside ~ ", left by a --full-refresh that took the " ~ kind ~ "'s place", info=True) }}
    {% else %}
        {% do exceptions.warn(prefix ~ mirror ~ ": dropping " ~ aside ~ ", left by a --full-refresh"
            ~ " that stopped before it took the " ~ kind ~ "'s place (the " ~ kind ~ " was not changed by it)") %}
    {% endif %}
    {% do cdc_merge.forget_rebuild(aside, cfg, offsets, is_history) %}
{% endmacro %}


{% macro put_rebuild_in_place(run_state, mirror, transaction=none) %}
    {#- mirror: {'relation', 'tombstones', 'changes', 'offset_ordinal'}, the mirror's as the run found them;
        transaction: the group's catalog transaction the swap joins (catalog_transaction.sql), else none. Points
        run_state at the mirror again, for the run's last steps (finish_run.sql). -#}
    {% set aside = run_state.target_relation %}
    {% set cfg = run_state.cfg %}
    {% set offsets = run_state.offsets %}
    {% set ordinal = run_state.ordinal %}
    {% set unsent = cdc_merge.unsent_relation(mirror.relation) %}
    {% set aside_unsent = cdc_merge.existing_unsent_relation(aside) %}
    {% do cdc_merge.crash_point('rebuild-before-swap') %}
    {% if transaction is not none %}
        {% set replaced = [(mirror.tombstones, run_state.tombstones)] if mirror.tombstones is not none else [] %}
        {% do cdc_merge.join_catalog_transaction_for_swap(transaction, cfg, replaced + ([(unsent, aside_unsent)] if aside_unsent is not none else [])) %}
    {% endif %}
    {% do cdc_merge.replace_table(mirror.relation, aside) %}
    {% if mirror.tombstones is not none %}
        {% do cdc_merge.replace_table(mirror.tombstones, run_state.tombstones) %}
    {% endif %}
    {% if aside_unsent is not none %}
        {% do cdc_merge.replace_table(unsent, aside_unsent) %}
        {% do adapter.cache_added(unsent) %}
    {% elif transaction is none %}
        {% do adapter.drop_relation(unsent) %}
    {% elif load_relation(unsent) is not none %}
        {#- Emptied, a commit the cut publishes: dropped, the old mirror would lose its entries before the cut. -#}
        {% do run_query('delete from ' ~ unsent) %}
    {% endif %}
    {% do cdc_merge.crash_point('rebuild-after-swap') %}
    {% do cdc_merge.remember_model_checksum(mirror.relation, compiled_code, cfg, cdc_merge.checked_model_checksum(mirror.relation, cfg),
        offsets, run_state.model_columns) %}
    {% do cdc_merge.take_truncates(cfg, aside, mirror.relation, replace_own=transaction is none) %}
    {% set ordinal.value = mirror.offset_ordinal + 1 %}
    {% do run_query(cdc_merge.append_offset_sql(offsets, mirror.relation, cfg, ordinal.value, ordinal.snapshot, run_state.totals)) %}

    {% if transaction is none %}
        {% do cdc_merge.forget_rebuild(aside, cfg, offsets) %}
    {% endif %}
    {% do run_state.update({'target_relation': mirror.relation, 'tombstones': mirror.tombstones, 'changes': mirror.changes}) %}
    {% if transaction is none %}
        {{ log("cdc_merge " ~ mirror.relation ~ ": the rebuild took the mirror's place", info=True) }}
    {% else %}
        {{ log("cdc_merge " ~ mirror.relation ~ ": the rebuild takes the mirror's place when group " ~ cfg.consistency_group
            ~ "'s catalog transaction is published; the mirror's next run drops " ~ aside, info=True) }}
    {% endif %}
{% endmacro %}


{% macro put_history_rebuild_in_place(aside, history, cfg, offsets, through, counts) %}
    {#- history: {'relation', 'deletes', 'offset_ordinal'}, the history's as the run found them (deletes: its deletes
        table with deletes='hard', else none); through: the rebuild's last offset snapshot; counts: the run's. -#}
    {% do cdc_merge.crash_point('rebuild-before-swap') %}
    {% do cdc_merge.replace_table(history.relation, aside) %}
    {% set deletes = cdc_merge.history_deletes_relation(history.relation) %}
    {% if history.deletes is not none %}
        {% do cdc_merge.replace_table(deletes, cdc_merge.history_deletes_relation(aside)) %}
        {% do adapter.cache_added(deletes) %}
    {% else %}
        {#- Built with deletes='hard' before, if a rebuild changed its mode. -#}
        {% do adapter.drop_relation(deletes) %}
    {% endif %}
    {% do cdc_merge.crash_point('rebuild-after-swap') %}
    {#- On Iceberg the mode came with the rebuild's table properties; on Databend it is a row of the settings table. -#}
    {% do cdc_merge.record_history_deletes(history.relation, offsets, cfg.deletes, created=true) %}
    {% do cdc_merge.take_truncates(cfg, aside, history.relation) %}
    {% do run_query(cdc_merge.append_offset_sql(offsets, history.relation, cfg, history.offset_ordinal + 1, through, counts)) %}
    {% do cdc_merge.forget_rebuild(aside, cfg, offsets, is_history=true) %}
    {{ log("cdc_history " ~ history.relation ~ ": the rebuild took the history's place", info=True) }}
{% endmacro %}


{% macro forget_rebuild(aside, cfg, offsets, is_history=false) %}
    {#- The rebuild's offset, truncate and settings rows deleted, then its tables dropped: the table goes last, as
        drop_stopped_rebuild finds a stopped rebuild by it. -#}
    {% do cdc_merge.delete_from_shared_table(offsets, "delete from " ~ offsets ~ " where target_table = '" ~ aside ~ "'") %}
    {% do cdc_merge.forget_truncates(cfg, aside) %}
    {% set settings = cdc_merge.table_settings_relation(offsets) %}
    {% if load_relation(settings) is not none %}
        {% do cdc_merge.delete_from_shared_table(settings, "delete from " ~ settings ~ " where target_table = '" ~ aside ~ "'") %}
    {% endif %}
    {% set own = [cdc_merge.history_deletes_relation(aside), cdc_merge.history_scratch_relation(aside)] if is_history
        else [cdc_merge.tombstones_relation(aside), cdc_merge.unsent_relation(aside)] %}
    {% for relation in own + [aside] %}
        {% do cdc_merge.drop_table_and_files(relation) %}
    {% endfor %}
{% endmacro %}


{% macro replace_table(relation, source) %}
    {#- relation's rows and columns replaced by source's, in one statement readers see whole. -#}
    {% do run_query(adapter.dispatch('replace_table_sql', 'cdc_merge')(relation, source)) %}
{% endmacro %}

{% macro spark__replace_table_sql(relation, source) %}
    {#- Iceberg keeps the table's history and properties, and adds source's (its model checksum among them);
        show tblproperties lists some that a CREATE may not set. -#}
    {%- set properties = {} -%}
    {%- for row in run_query('show tblproperties ' ~ source).rows
        if row['key'] not in ['current-snapshot-id', 'format', 'location', 'provider', 'owner', 'sort-order', 'identifier-fields'] -%}
        {%- do properties.update({row['key']: row['value']}) -%}
    {%- endfor -%}
    create or replace table {{ relation }}
    using iceberg
    {%- if properties %}
    tblproperties ({{ cdc_merge.metadata_log_tblproperties(properties) }})
    {%- endif %}
    as select * from {{ source }}
{% endmacro %}

{% macro databend__replace_table_sql(relation, source) %}
    {#- Of the same columns, the table keeps its snapshots: a group mirror's view at the cut reads the previous
        cut's until the new cut is written (cut_views.sql); `create or replace` made it a table without them,
        and the view failed ('No historical data found at given point'). -#}
    {%- set existing = load_relation(relation) -%}
    {%- if existing is not none and cdc_merge.relation_column_types(existing) == cdc_merge.relation_column_types(source) %}
    insert overwrite {{ relation }} select * from {{ source }}
    {%- else %}
    create or replace table {{ relation }} as select * from {{ source }}
    {%- endif %}
{% endmacro %}


{% macro drop_table_and_files(relation) %}
    {% do run_query(adapter.dispatch('drop_table_and_files_sql', 'cdc_merge')(relation)) %}
    {% do adapter.cache_dropped(relation) %}
{% endmacro %}

{% macro spark__drop_table_and_files_sql(relation) %}
    {#- Purged: without, a JDBC catalog (the cluster's) leaves the rebuild's files behind. -#}
    drop table if exists {{ relation }} purge
{% endmacro %}

{% macro databend__drop_table_and_files_sql(relation) %}
    drop table if exists {{ relation }}
{% endmacro %}
