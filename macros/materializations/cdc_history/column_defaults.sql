{#
    The source's schema change events in a history, as in a mirror (cdc_merge's column_defaults.sql,
    apply_chunk.sql). Before a chunk is applied: a column the source retyped to values the history's
    column cannot hold stops the run, naming the column and what to change (retype_check.py), since
    its versions would hold them rounded or null. After it: columns the source added with a value for
    the rows it already had (ALTER TABLE ... ADD COLUMN ... DEFAULT 0), which no row change carries,
    are set in the versions whose values are older than the event (those of their newest event,
    history_values_seq_sql) where they hold none, and in the current ones whatever they hold (a column
    dropped and added again), so a key not changed since holds what the source's
    row holds; a 32-bit float the source widened to a double is the float's exact value there. A
    version older than such an event that lands in a later chunk takes it too.
#}

{% macro history_schema_events(raw_changes_view, cfg) %}
    {{ return(cdc_merge.column_default_events(raw_changes_view, cfg.source_table, "_change_type = 'INSERT'")) }}
{% endmacro %}


{% macro history_column_types(model_sql, columns) %}
    {% set column_types = {} %}
    {% set written_names = columns | map('lower') | list %}
    {% for name, data_type in cdc_merge.lower_names(cdc_merge.cdc_query_columns(model_sql)) if name in written_names %}
        {% do column_types.update({name: data_type}) %}
    {% endfor %}
    {{ return(column_types) }}
{% endmacro %}


{% macro check_history_retypes(events, model_sql, columns, cfg) %}
    {% set retyped = adapter.cdc_retype_problem(events, cdc_merge.history_column_types(model_sql, columns), cfg.source_table,
        model.name, true) if events else none %}
    {% if retyped %}
        {% do exceptions.raise_compiler_error(retyped) %}
    {% endif %}
{% endmacro %}


{% macro apply_history_column_defaults(target_relation, raw_changes_view, cfg, events, model_sql, columns, run_cache, chunk) %}
    {#- The chunk's events and the raw log's newer than its oldest, as a mirror's (column_defaults.sql: a late version is older than them). -#}
    {{ return(cdc_merge.apply_chunk_column_defaults(target_relation, raw_changes_view, cfg, events, cdc_merge.history_column_types(model_sql, columns),
        run_cache, chunk, kept_unless='is_current', values_seq=cdc_merge.history_values_seq_sql())) }}
{% endmacro %}


{% macro history_values_seq_sql() %}
    {#- A version's position for the source's schema events: that of the event whose values it holds, its newest
        (track_columns: one it took in place may be newer than an ALTER its opening event is older than). -#}
    {{ return('coalesce(_cdc_updated_seq, _cdc_seq)') }}
{% endmacro %}


{#
    A version a range or a truncate closes (ranges.sql, range_deletes.sql) holds the values of the
    version it closes, as of the delete: a column the source added with a value for its rows between
    the closed version's event and the delete holds that value there, where the closed one holds none.
    Computed as the row is made, in a chunk's chain, its range deletes and an added column's fill, so
    that a history built in one chunk or in many, or taking the column later, holds the same.
#}

{% macro history_added_defaults(events, column_types) %}
    {#- events: [seq, raw_data] of schema events; column_types: {column (lower): type}. Returns {column (lower): [[seq, value SQL], ...]}, oldest first. -#}
    {% set defaults = {} %}
    {% for event in (adapter.cdc_column_defaults(events, column_types.keys() | list, model.unique_id) if events else []) %}
        {% for column in event.columns %}
            {% do defaults.setdefault(column.name | lower, []).append([event.seq,
                cdc_merge.cdc_value(cdc_merge.json_literal(column.image), column.field, column_types[column.name | lower])]) %}
        {% endfor %}
    {% endfor %}
    {{ return(defaults) }}
{% endmacro %}


{% macro history_range_defaults(cfg, run_cache, model_sql, columns) %}
    {#- history_added_defaults of the raw log's schema events, read once a run (run_cache). -#}
    {% if 'history_range_defaults' not in run_cache %}
        {% if 'column_default_events' not in run_cache %}
            {% do run_cache.update({'column_default_events': cdc_merge.column_default_events(cfg.raw_relation, cfg.source_table)}) %}
        {% endif %}
        {% set events = run_cache['column_default_events'] %}
        {% do run_cache.update({'history_range_defaults': cdc_merge.history_added_defaults(events,
            cdc_merge.history_column_types(model_sql, columns) if events else {})}) %}
    {% endif %}
    {{ return(run_cache['history_range_defaults']) }}
{% endmacro %}


{% macro history_range_value_sql(column, value_sql, closed_seq_sql, row_seq_sql, defaults) %}
    {#- column's value in a closing row: value_sql, or where it is null the value of the newest addition between the two seqs. -#}
    {% set value = namespace(sql=value_sql) %}
    {% for seq, default_sql in (defaults or {}).get(column | lower, []) %}
        {% set value.sql = 'case when ' ~ value_sql ~ ' is null and ' ~ closed_seq_sql ~ " < '" ~ seq ~ "' and " ~ row_seq_sql
            ~ " > '" ~ seq ~ "' then " ~ default_sql ~ ' else ' ~ value.sql ~ ' end' %}
    {% endfor %}
    {{ return(value.sql) }}
{% endmacro %}
