{#
    Every config of a cdc_history model is checked here, before any SQL runs.
    Each error names the model and says what to change.
#}

{% macro cdc_history_validated_config() %}
    {% set fail_prefix = "cdc_history model '" ~ model.name ~ "': " %}
    {% set common = cdc_merge.raw_log_model_config('cdc_history', 'records') %}

    {% set deletes = config.get('deletes', 'hard') %}
    {% if deletes not in ['hard', 'soft'] %}
        {% do exceptions.raise_compiler_error(fail_prefix ~ "deletes must be 'hard' (a delete closes the key's current version) or 'soft' (a delete adds a version with is_deleted = true), got " ~ deletes ~ ".") %}
    {% endif %}

    {% set track_columns = config.get('track_columns') %}
    {% if track_columns is string %}
        {% set track_columns = [track_columns] %}
    {% endif %}
    {% if track_columns is not none %}
        {% if track_columns is not sequence or track_columns | length == 0 %}
            {% do exceptions.raise_compiler_error(fail_prefix ~ "track_columns must be a non-empty list of the model's columns whose changes open a new version, e.g. track_columns=['status'], or be left out (every change opens a version).") %}
        {% endif %}
        {% for column in track_columns %}
            {% if column is not string or not modules.re.match('^[A-Za-z_][A-Za-z0-9_]*$', column) %}
                {% do exceptions.raise_compiler_error(fail_prefix ~ "track_columns entry " ~ column ~ " is not a column name.") %}
            {% endif %}
        {% endfor %}
    {% endif %}

    {% set allow_trimmed_log = config.get('allow_trimmed_log', false) %}
    {% if allow_trimmed_log is not boolean %}
        {% do exceptions.raise_compiler_error(fail_prefix ~ "allow_trimmed_log must be true or false, got " ~ allow_trimmed_log ~ ".") %}
    {% endif %}

    {{ return({
        'unique_key': common.unique_key,
        'source_table': common.source_table,
        'deletes': deletes,
        'track_columns': track_columns,
        'max_events_per_chunk': common.max_events_per_chunk,
        'table_properties': common.table_properties,
        'offsets_schema': common.offsets_schema,
        'allow_trimmed_log': allow_trimmed_log,
        'raw_relation': common.raw_relation,
    }) }}
{% endmacro %}


{% macro cdc_history_validate_columns(model_columns, cfg) %}
    {#- Runs on the model's output columns, still before anything is written. -#}
    {% set fail_prefix = "cdc_history model '" ~ model.name ~ "': " %}
    {% set lowered = model_columns | map('lower') | list %}
    {% for required in ['_cdc_key', '_cdc_action', '_cdc_seq', '_cdc_source_ts'] %}
        {% if required not in lowered %}
            {% do exceptions.raise_compiler_error(fail_prefix ~ "the model must select " ~ required ~ ": add {{ cdc_merge.cdc_metadata_columns() }} to its final select.") %}
        {% endif %}
    {% endfor %}
    {% for column in cfg.unique_key + (cfg.track_columns or []) %}
        {% if column | lower not in lowered %}
            {% do exceptions.raise_compiler_error(fail_prefix ~ "column " ~ column ~ " (unique_key or track_columns) is not selected by the model (it selects " ~ model_columns | join(', ') ~ ").") %}
        {% endif %}
    {% endfor %}
    {% for reserved in ['valid_from', 'valid_to', 'is_current', 'is_deleted', '_cdc_updated_seq'] %}
        {% if reserved in lowered %}
            {% do exceptions.raise_compiler_error(fail_prefix ~ reserved ~ " is kept by the materialization; do not select it (rename the column).") %}
        {% endif %}
    {% endfor %}
{% endmacro %}
