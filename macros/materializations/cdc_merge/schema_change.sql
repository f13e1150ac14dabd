{#
    A stored mirror whose columns differ from the model's: applied as on_schema_change says
    (validate.sql checks the setting), without a rebuild. evolve_mirror compares the two
    shapes (names and types), alters the mirror, backfills added columns from the raw log's
    retained events, and returns the columns the run writes and the model's SQL shaped to them.

        ignore              the mirror keeps its columns: new model columns are not written,
                            columns the model no longer selects are null in rows written from now on
        fail                any difference stops the run before anything is written
        append_new_columns  new columns are added (and backfilled), types widened in place,
                            columns the model no longer selects are kept (null in rows written from now on)
        sync_all_columns    as append_new_columns, and columns the model no longer selects are dropped

    Every change is appended to cdc_merge_schema_changes (next to cdc_merge_offsets). An added or
    widened column is recorded as pending before the ALTER and as backfilled after its values are
    computed again from the raw log, so a run that dies in between does it next time. A widened
    column is computed again because the narrower cast may have lost values (Spark's from_json
    gives null for a number its type cannot hold).
#}

{% macro bookkeeping_columns() %}
    {{ return(['_cdc_deleted', '_cdc_key', '_cdc_seq', '_cdc_source_ts']) }}
{% endmacro %}


{% macro schema_changes_relation(cfg) %}
    {{ return(api.Relation.create(schema=cfg.offsets_schema, identifier='cdc_merge_schema_changes', type='table')) }}
{% endmacro %}


{% macro create_schema_changes_table(relation) %}
    {{ return(adapter.dispatch('create_schema_changes_table', 'cdc_merge')(relation)) }}
{% endmacro %}

{% macro spark__create_schema_changes_table(relation) %}
    create table if not exists {{ relation }} (
        target_table string,
        change_ordinal bigint,
        column_name string,
        change string,
        old_type string,
        new_type string,
        rows_backfilled bigint,
        committed_at timestamp,
        invocation_id string
    )
    using iceberg
    tblproperties ('format-version' = '2')
{% endmacro %}

{% macro databend__create_schema_changes_table(relation) %}
    create table if not exists {{ relation }} (
        target_table string null,
        change_ordinal bigint null,
        column_name string null,
        change string null,
        old_type string null,
        new_type string null,
        rows_backfilled bigint null,
        committed_at timestamp null,
        invocation_id string null
    )
{% endmacro %}


{% macro record_schema_change_sql(relation, target_relation, ordinal, column, change, old_type, new_type, rows_backfilled) %}
    {#- change: add_pending, widen_pending, backfilled, drop, kept (dropped from the model, kept in the mirror). -#}
    insert into {{ relation }}
    select
        '{{ target_relation }}' as target_table,
        {{ ordinal }} as change_ordinal,
        '{{ column }}' as column_name,
        '{{ change }}' as change,
        {{ "'" ~ old_type ~ "'" if old_type else 'cast(null as string)' }} as old_type,
        {{ "'" ~ new_type ~ "'" if new_type else 'cast(null as string)' }} as new_type,
        {{ rows_backfilled if rows_backfilled is not none else 'cast(null as bigint)' }} as rows_backfilled,
        current_timestamp() as committed_at,
        '{{ invocation_id }}' as invocation_id
{% endmacro %}


{% macro pending_backfills(relation, target_relation) %}
    {#-
        Columns whose newest change is add_pending or widen_pending: not yet backfilled. Returns {'columns',
        'ordinal': the newest change_ordinal, 'newest': {column: its newest change}}.
    -#}
    {% set pending_sql %}
        with

        changes as (
            select
                column_name,
                change,
                change_ordinal,
                row_number() over (partition by column_name order by change_ordinal desc) as newest
            from {{ relation }}
            where target_table = '{{ target_relation }}'
        )

        select
            column_name,
            change,
            change_ordinal
        from changes
        where newest = 1
    {% endset %}
    {% set pending = [] %}
    {% set newest = {} %}
    {% set ordinal = namespace(value=0) %}
    {% for row in run_query(pending_sql).rows %}
        {% do newest.update({row['column_name']: row['change']}) %}
        {% if row['change'] in ['add_pending', 'widen_pending'] %}
            {% do pending.append(row['column_name']) %}
        {% endif %}
        {% set ordinal.value = [ordinal.value, row['change_ordinal'] | int] | max %}
    {% endfor %}
    {{ return({'columns': pending, 'ordinal': ordinal.value, 'newest': newest}) }}
{% endmacro %}


{% macro column_types(describe_rows) %}
    {#- [(name, type)] from the rows of a describe, up to the first blank or '#' row (Spark's partitioning section). -#}
    {% set columns = [] %}
    {% set done = namespace(value=false) %}
    {% for row in describe_rows %}
        {% set name = row[0] | string %}
        {% if name == '' or name.startswith('#') %}
            {% set done.value = true %}
        {% endif %}
        {% if not done.value %}
            {% do columns.append((name | lower, cdc_merge.normalized_type(row[1] | string))) %}
        {% endif %}
    {% endfor %}
    {{ return(columns) }}
{% endmacro %}


{% macro relation_column_types(relation) %}
    {{ return(adapter.dispatch('relation_column_types', 'cdc_merge')(relation)) }}
{% endmacro %}

{% macro spark__relation_column_types(relation) %}
    {#- dbt-spark's own describe of the table, the one it runs for any relation's columns. -#}
    {% set columns = [] %}
    {% for column in adapter.get_columns_in_relation(relation) %}
        {% do columns.append((column.name | lower, cdc_merge.normalized_type(column.dtype))) %}
    {% endfor %}
    {{ return(columns) }}
{% endmacro %}

{% macro databend__relation_column_types(relation) %}
    {{ return(cdc_merge.column_types(run_query('desc ' ~ relation).rows)) }}
{% endmacro %}


{% macro query_column_types(sql) %}
    {#- The names and types of a query's output columns, without running it. -#}
    {{ return(adapter.dispatch('query_column_types', 'cdc_merge')(sql)) }}
{% endmacro %}

{% macro spark__query_column_types(sql) %}
    {{ return(cdc_merge.column_types(run_query('describe query ' ~ sql).rows)) }}
{% endmacro %}

{% macro databend__query_column_types(sql) %}
    {#- Databend describes tables and views, not queries. -#}
    {% set shape_view = model.name ~ '__cdc_shape' %}
    {% do run_query('create or replace view ' ~ shape_view ~ ' as ' ~ sql) %}
    {% set columns = cdc_merge.column_types(run_query('desc ' ~ shape_view).rows) %}
    {% do run_query('drop view if exists ' ~ shape_view) %}
    {{ return(columns) }}
{% endmacro %}


{% macro normalized_type(data_type) %}
    {#- One spelling per type, so both engines' describes compare: lower case, no spaces, strings as string. -#}
    {% set spelled = data_type | lower | replace(' ', '') %}
    {% set spelled = modules.re.sub('^nullable\\((.*)\\)$', '\\1', spelled) %}
    {% set spelled = modules.re.sub('^(varchar|char|text)(\\([0-9]+\\))?$', 'string', spelled) %}
    {% set spelled = {'integer': 'int', 'int32': 'int', 'int64': 'bigint', 'long': 'bigint', 'real': 'float',
                      'float32': 'float', 'float64': 'double', 'decimal': 'decimal(10,0)', 'numeric': 'decimal(10,0)'}.get(spelled, spelled) %}
    {% set spelled = modules.re.sub('^numeric', 'decimal', spelled) %}
    {{ return(adapter.dispatch('stored_type', 'cdc_merge')(spelled)) }}
{% endmacro %}

{% macro spark__stored_type(data_type) %}
    {#- Iceberg has no 8- or 16-bit integers: Spark stores them as int. -#}
    {{ return('int' if data_type in ['tinyint', 'smallint', 'byte', 'short'] else data_type) }}
{% endmacro %}

{% macro databend__stored_type(data_type) %}
    {{ return(data_type) }}
{% endmacro %}


{% macro type_change(old_type, new_type) %}
    {#- 'widen' where every old value fits the new type and the engine changes it in place; else 'incompatible'. -#}
    {% set integers = ['tinyint', 'smallint', 'int', 'bigint'] %}
    {% if old_type in integers and new_type in integers and integers.index(new_type) > integers.index(old_type) %}
        {{ return('widen') }}
    {% elif old_type == 'float' and new_type == 'double' %}
        {{ return('widen') }}
    {% endif %}
    {% set old_decimal = modules.re.fullmatch('decimal\\(([0-9]+),([0-9]+)\\)', old_type) %}
    {% set new_decimal = modules.re.fullmatch('decimal\\(([0-9]+),([0-9]+)\\)', new_type) %}
    {% if old_decimal and new_decimal and old_decimal.group(2) == new_decimal.group(2)
        and (new_decimal.group(1) | int) > (old_decimal.group(1) | int) %}
        {{ return('widen') }}
    {% endif %}
    {{ return('incompatible') }}
{% endmacro %}


{% macro add_column_sql(relation, column, data_type) %}
    {{ return(adapter.dispatch('add_column_sql', 'cdc_merge')(relation, column, data_type)) }}
{% endmacro %}

{% macro spark__add_column_sql(relation, column, data_type) %}
    alter table {{ relation }} add columns ({{ column }} {{ data_type }})
{% endmacro %}

{% macro databend__add_column_sql(relation, column, data_type) %}
    alter table {{ relation }} add column {{ column }} {{ data_type }} null
{% endmacro %}


{% macro widen_column_sql(relation, column, data_type) %}
    {{ return(adapter.dispatch('widen_column_sql', 'cdc_merge')(relation, column, data_type)) }}
{% endmacro %}

{% macro spark__widen_column_sql(relation, column, data_type) %}
    alter table {{ relation }} alter column {{ column }} type {{ data_type }}
{% endmacro %}

{% macro databend__widen_column_sql(relation, column, data_type) %}
    alter table {{ relation }} modify column {{ column }} {{ data_type }} null
{% endmacro %}


{% macro drop_column_sql(relation, column) %}
    alter table {{ relation }} drop column {{ column }}
{% endmacro %}


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
        {{ cdc_merge.cdc_metadata_columns() | trim }}
    from ({{ model_sql }}) as model_output
{% endmacro %}


{% macro schema_differences(mirror_types, model_types) %}
    {#- What differs between the mirror's and the model's columns (both [(name, type)], bookkeeping left out). -#}
    {% set mirror = dict(mirror_types) %}
    {% set modelled = dict(model_types) %}
    {% set differences = {'added': [], 'removed': [], 'widened': [], 'incompatible': []} %}
    {% for name, data_type in model_types %}
        {% if name not in mirror %}
            {% do differences.added.append((name, data_type)) %}
        {% elif mirror[name] != data_type %}
            {% set kind = 'widened' if cdc_merge.type_change(mirror[name], data_type) == 'widen' else 'incompatible' %}
            {% do differences[kind].append((name, mirror[name], data_type)) %}
        {% endif %}
    {% endfor %}
    {% for name, data_type in mirror_types %}
        {% if name not in modelled %}
            {% do differences.removed.append((name, data_type)) %}
        {% endif %}
    {% endfor %}
    {{ return(differences) }}
{% endmacro %}


{% macro describe_differences(differences) %}
    {% set parts = [] %}
    {% for name, data_type in differences.added %}
        {% do parts.append('new column ' ~ name ~ ' ' ~ data_type) %}
    {% endfor %}
    {% for name, old_type, new_type in differences.widened + differences.incompatible %}
        {% do parts.append('column ' ~ name ~ ' ' ~ old_type ~ ' -> ' ~ new_type) %}
    {% endfor %}
    {% for name, data_type in differences.removed %}
        {% do parts.append('column ' ~ name ~ ' no longer selected') %}
    {% endfor %}
    {{ return(parts | join('; ')) }}
{% endmacro %}


{% macro evolve_mirror(target_relation, model_sql, model_columns, cfg) %}
    {#-
        Returns {'columns': the mirror's columns the run writes, 'model_sql': the model shaped to them,
        'note': what changed, for the run's summary ('' when nothing did)}.
    -#}
    {% set fail_prefix = "cdc_merge model '" ~ model.name ~ "': " %}
    {% set bookkeeping = cdc_merge.bookkeeping_columns() %}
    {% set mirror_types = cdc_merge.relation_column_types(target_relation) | rejectattr('0', 'in', bookkeeping) | list %}
    {% set model_types = cdc_merge.query_column_types(model_sql) | rejectattr('0', 'in', ['_cdc_key', '_cdc_action', '_cdc_seq', '_cdc_source_ts', '_cdc_unavailable']) | list %}
    {% set differences = cdc_merge.schema_differences(mirror_types, model_types) %}
    {% set changed = (differences.added + differences.removed + differences.widened + differences.incompatible) | length > 0 %}
    {% set mode = cfg.on_schema_change %}
    {% set changes_relation = cdc_merge.schema_changes_relation(cfg) %}
    {% set history = {'columns': [], 'ordinal': 0, 'newest': {}} %}
    {% if load_relation(changes_relation) is not none %}
        {% set history = cdc_merge.pending_backfills(changes_relation, target_relation) %}
    {% endif %}

    {% if changed and mode == 'fail' %}
        {% do exceptions.raise_compiler_error(fail_prefix ~ "the model's columns differ from " ~ target_relation ~ "'s ("
            ~ cdc_merge.describe_differences(differences) ~ ") and on_schema_change is 'fail'. Set on_schema_change='append_new_columns'"
            ~ " (adds new columns, backfilled from the raw log; widens types; keeps columns no longer selected) or 'sync_all_columns'"
            ~ " (also drops them), or rebuild the mirror: dbt run --full-refresh --select " ~ model.name) %}
    {% endif %}
    {% if differences.incompatible and mode != 'ignore' %}
        {% set problems = [] %}
        {% for name, old_type, new_type in differences.incompatible %}
            {% do problems.append('column ' ~ name ~ ' is ' ~ old_type ~ ' in ' ~ target_relation ~ ' and ' ~ new_type ~ ' in the model') %}
        {% endfor %}
        {% do exceptions.raise_compiler_error(fail_prefix ~ problems | join('; ') ~ ": " ~ target.type ~ " cannot change that type in place"
            ~ " (it widens int to bigint, float to double, and decimal precision at the same scale). Cast the column in the model"
            ~ " to a type that widens the stored one, or select it under a new name (a new column, backfilled) and stop selecting"
            ~ " the old one, or rebuild the mirror: dbt run --full-refresh --select " ~ model.name) %}
    {% endif %}

    {% set notes = [] %}
    {% set ordinal = namespace(value=history.ordinal) %}
    {% set to_backfill = history.columns | list %}
    {% if changed and mode in ['append_new_columns', 'sync_all_columns'] %}
        {% do run_query(cdc_merge.create_schema_changes_table(changes_relation)) %}
        {% for name, data_type in differences.added %}
            {% set ordinal.value = ordinal.value + 1 %}
            {% do run_query(cdc_merge.record_schema_change_sql(changes_relation, target_relation, ordinal.value, name, 'add_pending', none, data_type, none)) %}
            {% do run_query(cdc_merge.add_column_sql(target_relation, name, data_type)) %}
            {% do to_backfill.append(name) %}
        {% endfor %}
        {% for name, old_type, new_type in differences.widened %}
            {% set ordinal.value = ordinal.value + 1 %}
            {% do run_query(cdc_merge.record_schema_change_sql(changes_relation, target_relation, ordinal.value, name, 'widen_pending', old_type, new_type, none)) %}
            {% do run_query(cdc_merge.widen_column_sql(target_relation, name, new_type)) %}
            {% do to_backfill.append(name) %}
            {% do notes.append(name ~ ' widened ' ~ old_type ~ ' -> ' ~ new_type) %}
        {% endfor %}
        {#- A column kept earlier is kept again by every run: recorded once. -#}
        {% for name, data_type in differences.removed if not (mode == 'append_new_columns' and history.newest.get(name) == 'kept') %}
            {% if mode == 'sync_all_columns' %}
                {% do run_query(cdc_merge.drop_column_sql(target_relation, name)) %}
            {% endif %}
            {% set ordinal.value = ordinal.value + 1 %}
            {% do run_query(cdc_merge.record_schema_change_sql(changes_relation, target_relation, ordinal.value, name,
                'drop' if mode == 'sync_all_columns' else 'kept', data_type, none, none)) %}
            {% do notes.append(name ~ (' dropped' if mode == 'sync_all_columns' else ' kept, null in rows written from now on')) %}
        {% endfor %}
    {% elif changed %}
        {{ log("cdc_merge " ~ target_relation ~ ": on_schema_change='ignore': the mirror keeps its columns ("
            ~ cdc_merge.describe_differences(differences) ~ ")", info=True) }}
        {% do notes.append("model's column changes ignored") %}
    {% endif %}

    {#- The columns written: the mirror's, as they are now. -#}
    {% set model_names = dict(model_types) %}
    {% if mode == 'ignore' %}
        {% set written = mirror_types %}
    {% elif mode == 'append_new_columns' %}
        {% set written = model_types + differences.removed %}
    {% else %}
        {% set written = model_types %}
    {% endif %}
    {% set shaped_sql = model_sql %}
    {% if changed %}
        {% set shaped_sql = cdc_merge.shaped_model_sql(model_sql, written, model_names) %}
    {% endif %}

    {% set pending = to_backfill | select('in', model_names) | list %}
    {% if pending %}
        {% set backfilled = cdc_merge.backfill_columns(target_relation, shaped_sql, pending, cfg) %}
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
    {{ return({'columns': written | map(attribute='0') | list, 'model_sql': shaped_sql, 'note': note}) }}
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


{% macro create_applied_events_sql(scratch, raw_relation, target_relation, source_table) %}
    {#- The raw events the mirror's rows were last written from (same key and seq), shaped as a chunk's raw changes. -#}
    {{ return(adapter.dispatch('create_applied_events_sql', 'cdc_merge')(scratch, raw_relation, target_relation, source_table)) }}
{% endmacro %}

{% macro spark__create_applied_events_sql(scratch, raw_relation, target_relation, source_table) %}
    create or replace temporary view {{ scratch }} as
    select
        raw.*,
        'INSERT' as _change_type
    from {{ raw_relation }} as raw
    left semi join {{ target_relation }} as stored
        on raw.key = stored._cdc_key
        and raw.seq = stored._cdc_seq
    where raw.table_name = '{{ source_table }}'
{% endmacro %}

{% macro databend__create_applied_events_sql(scratch, raw_relation, target_relation, source_table) %}
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
    inner join {{ target_relation }} as stored
        on raw.key = stored._cdc_key
        and raw.seq = stored._cdc_seq
    where raw.table_name = '{{ source_table }}'
{% endmacro %}
