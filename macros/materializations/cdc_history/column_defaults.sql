{#
    Columns the source added with a value for the rows it already had (ALTER TABLE ... ADD COLUMN
    ... DEFAULT 0), which no row change carries, in a history: as in a mirror (cdc_merge's
    column_defaults.sql), after the chunk that holds the schema change event, its versions older than
    the event take the value where they hold none, and the current ones whatever they hold (a column
    dropped and added again), so a key not changed since holds what the source's row holds. A 32-bit
    float the source widened to a double is the float's exact value in those versions, as in a mirror.
#}

{% macro apply_history_column_defaults(target_relation, raw_changes_view, model_sql, columns, cfg) %}
    {% set events = cdc_merge.column_default_events(raw_changes_view, cfg.source_table, "_change_type = 'INSERT'") %}
    {% if not events %}
        {{ return([]) }}
    {% endif %}
    {% set column_types = {} %}
    {% set written_names = columns | map('lower') | list %}
    {% for name, data_type in cdc_merge.lower_names(cdc_merge.cdc_query_columns(model_sql)) if name in written_names %}
        {% do column_types.update({name: data_type}) %}
    {% endfor %}
    {{ return(cdc_merge.apply_column_defaults(target_relation, events, column_types, kept_unless='is_current')) }}
{% endmacro %}
