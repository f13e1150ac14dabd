{#
    Every config of a cdc_history model is checked before any SQL runs, as a cdc_merge model's
    (cdc_merge/validate.sql, python_jobs/apply/mirror_config.py); each error names the model and
    says what to change. Its output columns are checked here.
#}

{% macro cdc_history_validated_config() %}
    {{ return(cdc_merge.checked_model_config('cdc_history', "cdc_history model '" ~ model.name ~ "': ")) }}
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
    {% for reserved in ['valid_from', 'valid_to', 'is_current', 'is_deleted', '_cdc_updated_seq', '_cdc_unsent_columns'] %}
        {% if reserved in lowered %}
            {% do exceptions.raise_compiler_error(fail_prefix ~ reserved ~ " is kept by the materialization; do not select it (rename the column).") %}
        {% endif %}
    {% endfor %}
{% endmacro %}
