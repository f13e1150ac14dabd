{#
    Every config of a cdc_history model is checked here, before any SQL runs.
    Each error names the model and says what to change.
#}

{% macro cdc_history_validated_config() %}
    {% set fail_prefix = "cdc_history model '" ~ model.name ~ "': " %}

    {% if model.language != 'sql' %}
        {% do exceptions.raise_compiler_error(fail_prefix ~ "cdc_history runs SQL models only; this one is " ~ model.language ~ ".") %}
    {% endif %}

    {% set unique_key = config.get('unique_key') %}
    {% if unique_key is string %}
        {% set unique_key = [unique_key] %}
    {% endif %}
    {% if unique_key is none or unique_key is not sequence or unique_key | length == 0 %}
        {% do exceptions.raise_compiler_error(fail_prefix ~ "set unique_key to the primary-key column or a list of them, e.g. unique_key=['order_id', 'line_no'].") %}
    {% endif %}
    {% for column in unique_key %}
        {% if column is not string or not modules.re.match('^[A-Za-z_][A-Za-z0-9_]*$', column) %}
            {% do exceptions.raise_compiler_error(fail_prefix ~ "unique_key entry " ~ column ~ " is not a column name.") %}
        {% endif %}
    {% endfor %}

    {% set source_table = config.get('source_table') %}
    {% if source_table is not string or not modules.re.match('^[A-Za-z_][A-Za-z0-9_$]*\.[A-Za-z_][A-Za-z0-9_$]*$', source_table) %}
        {% do exceptions.raise_compiler_error(fail_prefix ~ "set source_table to the schema-qualified source table whose events this model records, e.g. source_table='inventory.products' (got " ~ source_table ~ ").") %}
    {% endif %}

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

    {% set max_events = config.get('max_events_per_chunk', 1000000) %}
    {% if max_events is string and modules.re.match('^[0-9]+$', max_events) %}
        {% set max_events = max_events | int %}
    {% endif %}
    {% if max_events is not number or max_events is string or max_events < 1 or max_events != max_events | int %}
        {% do exceptions.raise_compiler_error(fail_prefix ~ "max_events_per_chunk must be a positive whole number of raw events, got " ~ max_events ~ ".") %}
    {% endif %}

    {% set table_properties = config.get('table_properties', {}) %}
    {% if table_properties is not mapping %}
        {% do exceptions.raise_compiler_error(fail_prefix ~ "table_properties must be a mapping of Iceberg table properties.") %}
    {% endif %}

    {% set offsets_schema = config.get('offsets_schema', this.schema) %}
    {% if offsets_schema is not string or offsets_schema | length == 0 %}
        {% do exceptions.raise_compiler_error(fail_prefix ~ "offsets_schema must name the schema of the cdc_merge_offsets table.") %}
    {% endif %}

    {% set allow_trimmed_log = config.get('allow_trimmed_log', false) %}
    {% if allow_trimmed_log is not boolean %}
        {% do exceptions.raise_compiler_error(fail_prefix ~ "allow_trimmed_log must be true or false, got " ~ allow_trimmed_log ~ ".") %}
    {% endif %}

    {% set upstream = [] %}
    {% for source_name, table_name in model.sources %}
        {% do upstream.append(source(source_name, table_name)) %}
    {% endfor %}
    {% for model_ref in model.refs %}
        {% do upstream.append(ref(model_ref.name) if model_ref is mapping else ref(*model_ref)) %}
    {% endfor %}
    {% if upstream | length != 1 %}
        {% do exceptions.raise_compiler_error(fail_prefix ~ "a cdc_history model reads exactly one raw table, through {{ cdc_merge.cdc_events(ref('raw_events')) }}; it depends on " ~ upstream | length ~ " relations.") %}
    {% endif %}
    {% set raw_relation = upstream[0].incorporate(limit=none) if upstream[0].limit is not none else upstream[0] %}

    {{ return({
        'unique_key': unique_key,
        'source_table': source_table,
        'deletes': deletes,
        'track_columns': track_columns,
        'max_events_per_chunk': max_events | int,
        'table_properties': table_properties,
        'offsets_schema': offsets_schema,
        'allow_trimmed_log': allow_trimmed_log,
        'raw_relation': raw_relation,
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
