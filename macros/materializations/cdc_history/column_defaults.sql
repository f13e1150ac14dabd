{#
    The source's schema change events in a history, as in a mirror (cdc_merge's column_defaults.sql,
    apply_chunk.sql). Before a chunk is applied: a column the source retyped to values the history's
    column cannot hold stops the run, naming the column and what to change (retype_check.py), since
    its versions would hold them rounded or null. After it: columns the source added with a value for
    the rows it already had (ALTER TABLE ... ADD COLUMN ... DEFAULT 0), which no row change carries,
    are set in the versions older than the event where they hold none, and in the current ones whatever
    they hold (a column dropped and added again), so a key not changed since holds what the source's
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
        run_cache, chunk, kept_unless='is_current')) }}
{% endmacro %}
