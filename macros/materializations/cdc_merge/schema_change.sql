{#
    A stored mirror whose columns differ from the model's: applied as on_schema_change says
    (validate.sql checks the setting), without a rebuild. evolve_mirror asks what differs and what
    to do (python_jobs/apply/schema_plan.py), alters the mirror, backfills added columns from the
    raw log's retained events, and returns the columns the run writes and the model's SQL shaped to them.

        ignore              the mirror keeps its columns: new model columns are not written,
                            columns the model no longer selects are null in rows written from now on
        fail                any difference stops the run before anything is written
        append_new_columns  new columns are added (and backfilled), types widened in place,
                            columns the model no longer selects are kept (null in rows written from now on)
        sync_all_columns    as append_new_columns, and columns the model no longer selects are dropped

    Every change is appended to cdc_merge_schema_changes (schema_changes_log.sql); the types and
    ALTER statements are in column_types.sql. A widened column is computed again from the raw log
    too: the narrower cast may have lost values (Spark's from_json gives null for a number its type
    cannot hold).
#}

{% macro shaped_model_sql(model_sql, written, model_types) %}
    {#-
        The model's output with exactly the columns written (written: [(name, mirror type)]): a column
        the model does not select is null, one whose type differs is cast to the mirror's type.
    -#}
    select
        {%- for name, data_type in written %}
        {%- if name not in model_types %}
        cast(null as {{ data_type }}) as {{ name }},
        {%- elif model_types[name] != data_type %}
        cast({{ name }} as {{ data_type }}) as {{ name }},
        {%- else %}
        {{ name }},
        {%- endif %}
        {%- endfor %}
        {#- Not cdc_metadata_columns(): the model's own already names its columns in _cdc_unavailable. #}
        _cdc_key,
        _cdc_action,
        _cdc_seq,
        _cdc_source_ts,
        _cdc_unavailable
    from ({{ model_sql }}) as model_output
{% endmacro %}


{% macro evolve_mirror(target_relation, model_sql, model_described, cfg) %}
    {#-
        model_described: the model's output columns and types (cdc_query_columns).
        Returns {'columns': the mirror's columns the run writes, 'model_sql': the model shaped to them,
        'note': what changed, for the run's summary ('' when nothing did), 'batch_view_replaced': whether
        a backfill defined the batch view anew}.
    -#}
    {% set bookkeeping = cdc_merge.bookkeeping_columns() %}
    {% set stored_types = cdc_merge.relation_column_types(target_relation) %}
    {% set mode_error = adapter.cdc_deletes_mode_error(model.name, target_relation | string, cfg.deletes, stored_types | map(attribute='0') | list) %}
    {% if mode_error %}
        {% do exceptions.raise_compiler_error(mode_error) %}
    {% endif %}
    {% set mirror_types = stored_types | rejectattr('0', 'in', bookkeeping) | list %}
    {% set model_types = cdc_merge.lower_names(model_described) | rejectattr('0', 'in', ['_cdc_key', '_cdc_action', '_cdc_seq', '_cdc_source_ts', '_cdc_unavailable']) | list %}
    {% set changes_relation = cdc_merge.schema_changes_relation(cfg) %}
    {% set history = {'columns': [], 'ordinal': 0, 'newest': {}} %}
    {% if load_relation(changes_relation) is not none %}
        {% set history = cdc_merge.pending_backfills(changes_relation, target_relation) %}
    {% endif %}
    {#- What changes, decided in python_jobs/apply/schema_plan.py; a column kept earlier is recorded once. -#}
    {% set kept_before = [] %}
    {% for name, change in history.newest.items() if change == 'kept' %}
        {% do kept_before.append(name) %}
    {% endfor %}
    {% set plan = adapter.cdc_schema_plan(mirror_types, model_types, cfg.on_schema_change, kept_before, model.name,
        target_relation | string, target.type) %}
    {% if plan.error %}
        {% do exceptions.raise_compiler_error(plan.error) %}
    {% endif %}

    {% set notes = plan.notes | list %}
    {% set ordinal = namespace(value=history.ordinal) %}
    {% set to_backfill = history.columns | list + plan.to_backfill %}
    {% if plan.steps %}
        {% do run_query(cdc_merge.create_schema_changes_table(changes_relation)) %}
    {% endif %}
    {% for step in plan.steps %}
        {% if step.change == 'drop' %}
            {% do run_query(cdc_merge.drop_column_sql(target_relation, step.column)) %}
        {% endif %}
        {% set ordinal.value = ordinal.value + 1 %}
        {% do run_query(cdc_merge.record_schema_change_sql(changes_relation, target_relation, ordinal.value, step.column, step.change,
            step.old_type, step.new_type, none)) %}
        {% if step.change == 'add_pending' %}
            {% do run_query(cdc_merge.add_column_sql(target_relation, step.column, step.new_type)) %}
        {% elif step.change == 'widen_pending' %}
            {% do run_query(cdc_merge.widen_column_sql(target_relation, step.column, step.new_type)) %}
        {% endif %}
    {% endfor %}
    {% if plan.ignored %}
        {{ log("cdc_merge " ~ target_relation ~ ": on_schema_change='ignore': the mirror keeps its columns (" ~ plan.ignored ~ ")", info=True) }}
    {% endif %}

    {#- The columns written: the mirror's, as they are now. -#}
    {% set model_names = dict(model_types) %}
    {% set written = plan.written %}
    {% set shaped_sql = cdc_merge.shaped_model_sql(model_sql, written, model_names) if plan.changed else model_sql %}

    {% set pending = to_backfill | select('in', model_names) | list %}
    {% if pending %}
        {% set backfilled = cdc_merge.backfill_columns(target_relation, shaped_sql, pending, cfg) %}
        {#- Columns the source added with a value for the rows it had: those rows older than the addition (column_defaults.sql). -#}
        {% set pending_types = {} %}
        {% for name in pending %}
            {% do pending_types.update({name: model_names[name]}) %}
        {% endfor %}
        {% do cdc_merge.apply_column_defaults(target_relation, cdc_merge.column_default_events(cfg.raw_relation, cfg.source_table), pending_types) %}
        {% for name in pending %}
            {% set ordinal.value = ordinal.value + 1 %}
            {% do run_query(cdc_merge.record_schema_change_sql(changes_relation, target_relation, ordinal.value, name, 'backfilled', none, model_names[name], backfilled.rows)) %}
        {% endfor %}
        {% do notes.insert(0, pending | join(', ') ~ ': ' ~ backfilled.rows ~ ' of ' ~ backfilled.mirror_rows
            ~ ' rows backfilled from the raw log, the others as they were (an added column null) until their next event') %}
    {% endif %}
    {% set note = ('schema change: ' ~ notes | join('; ')) if notes else '' %}
    {% if note %}
        {{ log("cdc_merge " ~ target_relation ~ ": " ~ note, info=True) }}
    {% endif %}
    {{ return({'columns': written | map(attribute='0') | list, 'model_sql': shaped_sql, 'note': note, 'batch_view_replaced': pending | length > 0}) }}
{% endmacro %}


{% macro backfill_columns(target_relation, model_sql, new_columns, cfg) %}
    {#-
        Each row of the mirror whose newest applied event is still in the raw log (found by its key and
        _cdc_seq) gets new_columns computed by the model from that event (a value the event did not send
        keeps the stored one). Returns {'rows': rows backfilled, 'mirror_rows': rows in the mirror}.
    -#}
    {% set scratch = model.name ~ '__cdc_backfill_raw' %}
    {% do run_query(cdc_merge.create_applied_events_sql(scratch, cfg.raw_relation, target_relation, cfg.source_table)) %}
    {% do run_query(cdc_merge.create_batch_view_sql(cdc_merge.batch_view_name(model.name), scratch, cfg.source_table, 0, 1)) %}
    {% set counted %}
        select
            (select count(*) from ({{ model_sql }}) as model_output) as backfilled,
            (select count(*) from {{ target_relation }}) as mirror_rows
    {% endset %}
    {% set counts = run_query(counted).rows[0] %}
    {% if (counts['backfilled'] | int) > 0 %}
        {% set backfill_sql %}
            merge into {{ target_relation }} as mirror
            using ({{ model_sql }}) as change
                on mirror._cdc_key = change._cdc_key
                and mirror._cdc_seq = change._cdc_seq
            when matched then update set
                {%- for column in new_columns %}
                {{ column }} = case when {{ cdc_merge.is_unavailable_sql(column) }} then mirror.{{ column }} else change.{{ column }} end{{ ',' if not loop.last }}
                {%- endfor %}
        {% endset %}
        {% do run_query(backfill_sql) %}
    {% endif %}
    {% do cdc_merge.drop_scratch(scratch) %}
    {{ return({'rows': counts['backfilled'] | int, 'mirror_rows': counts['mirror_rows'] | int}) }}
{% endmacro %}


{% macro create_applied_events_sql(scratch, raw_relation, target_relation, source_table, every_event=false) %}
    {#- The raw events the mirror's rows were last written from (same key and seq), shaped as a chunk's raw changes.
        every_event: all the raw log's events of the keys it holds (a history's added columns, cdc_history/added_columns.sql). -#}
    {{ return(adapter.dispatch('create_applied_events_sql', 'cdc_merge')(scratch, raw_relation, target_relation, source_table, every_event)) }}
{% endmacro %}

{% macro spark__create_applied_events_sql(scratch, raw_relation, target_relation, source_table, every_event) %}
    create or replace temporary view {{ scratch }} as
    select
        raw.*,
        'INSERT' as _change_type
    from {{ raw_relation }} as raw
    left semi join {{ target_relation }} as stored
        on raw.key = stored._cdc_key
        {%- if not every_event %}
        and raw.seq = stored._cdc_seq
        {%- endif %}
    where raw.table_name = '{{ source_table }}'
{% endmacro %}

{% macro databend__create_applied_events_sql(scratch, raw_relation, target_relation, source_table, every_event) %}
    create or replace transient table {{ scratch }} as
    select
        raw.table_name,
        raw.key,
        raw.action,
        raw.raw_data,
        raw.before_data,
        raw.seq,
        raw.source_ts,
        raw.landed_file,
        raw.landed_line,
        'INSERT' as _change_type
    from {{ raw_relation }} as raw
    {%- if every_event %}
    where
        raw.table_name = '{{ source_table }}'
        and raw.key in (select _cdc_key from {{ target_relation }})
    {%- else %}
    inner join {{ target_relation }} as stored
        on raw.key = stored._cdc_key
        and raw.seq = stored._cdc_seq
    where raw.table_name = '{{ source_table }}'
    {%- endif %}
{% endmacro %}
