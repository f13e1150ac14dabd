{#
    Every config of a cdc_merge model is checked here, before any SQL runs.
    Each error names the model and says what to change.
#}

{% macro cdc_merge_validated_config() %}
    {% set fail_prefix = "cdc_merge model '" ~ model.name ~ "': " %}
    {% set common = cdc_merge.raw_log_model_config('cdc_merge', 'applies') %}

    {% set deletes = config.get('deletes', 'hard') %}
    {% if deletes not in ['hard', 'soft'] %}
        {% do exceptions.raise_compiler_error(fail_prefix ~ "deletes must be 'hard' (remove the row) or 'soft' (keep it with _cdc_deleted = true), got " ~ deletes ~ ".") %}
    {% endif %}

    {% set change_source = config.get('change_source', 'changes') %}
    {% if change_source not in ['changes', 'stream'] %}
        {% do exceptions.raise_compiler_error(fail_prefix ~ "change_source must be 'changes' (snapshot offsets, the default) or 'stream' (a Databend stream; needs Databend Cloud or an Enterprise licence), got " ~ change_source ~ ".") %}
    {% endif %}
    {% if change_source == 'stream' and target.type not in ['databend', 'cdc_databend'] %}
        {% do exceptions.raise_compiler_error(fail_prefix ~ "change_source='stream' is for Databend targets; on " ~ target.type ~ " remove it (the raw table's snapshots are read incrementally).") %}
    {% endif %}

    {#- Mirrors of one group are read together at their latest consistent cut (consistency.sql). -#}
    {% set consistency_group = config.get('consistency_group') %}
    {% if consistency_group is not none and (consistency_group is not string or not modules.re.match('^[A-Za-z_][A-Za-z0-9_]*$', consistency_group)) %}
        {% do exceptions.raise_compiler_error(fail_prefix ~ "consistency_group must be a name (letters, digits, _), e.g. consistency_group='shop', got " ~ consistency_group ~ ".") %}
    {% endif %}
    {% if consistency_group is not none and target.type not in ['cdc_spark', 'cdc_databend'] %}
        {% do exceptions.raise_compiler_error(fail_prefix ~ "consistency_group needs a cdc_spark or cdc_databend target (the adapter keeps the group's horizon for the run); this one is " ~ target.type ~ ".") %}
    {% endif %}
    {% if consistency_group is not none and change_source == 'stream' %}
        {% do exceptions.raise_compiler_error(fail_prefix ~ "consistency_group needs change_source='changes': a stream cannot leave a transaction's events for the next run.") %}
    {% endif %}

    {#- dbt's own setting for incremental models; the project sets append_new_columns for mirrors (dbt_project.yml). -#}
    {#-
        The package's default is append_new_columns wherever it is used: dbt gives every model
        'ignore' when nothing sets it, so only a setting the project or the model makes counts.
    -#}
    {% set on_schema_change = config.get('on_schema_change') if 'on_schema_change' in (model.unrendered_config or {}) else 'append_new_columns' %}
    {% if on_schema_change not in ['ignore', 'fail', 'append_new_columns', 'sync_all_columns'] %}
        {% do exceptions.raise_compiler_error(fail_prefix ~ "on_schema_change must be 'append_new_columns' (add new columns, backfilled from the raw log; widen types; keep columns no longer selected), 'sync_all_columns' (also drop them), 'fail' or 'ignore', got " ~ on_schema_change ~ ".") %}
    {% endif %}

    {{ return({
        'unique_key': common.unique_key,
        'source_table': common.source_table,
        'deletes': deletes,
        'max_events_per_chunk': common.max_events_per_chunk,
        'table_properties': common.table_properties,
        'offsets_schema': common.offsets_schema,
        'change_source': change_source,
        'consistency_group': consistency_group,
        'on_schema_change': on_schema_change,
        'raw_relation': common.raw_relation,
        'maintenance': cdc_merge.maintenance_validated_config(config, fail_prefix),
    }) }}
{% endmacro %}


{% macro cdc_merge_validate_columns(model_columns, cfg) %}
    {#- Runs on the model's output columns, still before anything is written. -#}
    {% set fail_prefix = "cdc_merge model '" ~ model.name ~ "': " %}
    {% set lowered = model_columns | map('lower') | list %}
    {% for required in ['_cdc_key', '_cdc_action', '_cdc_seq', '_cdc_source_ts', '_cdc_unavailable'] %}
        {% if required not in lowered %}
            {% do exceptions.raise_compiler_error(fail_prefix ~ "the model must select " ~ required ~ ": add {{ cdc_merge.cdc_metadata_columns() }} to its final select.") %}
        {% endif %}
    {% endfor %}
    {% for column in cfg.unique_key %}
        {% if column | lower not in lowered %}
            {% do exceptions.raise_compiler_error(fail_prefix ~ "unique_key column " ~ column ~ " is not selected by the model (it selects " ~ model_columns | join(', ') ~ ").") %}
        {% endif %}
    {% endfor %}
    {% if '_cdc_deleted' in lowered %}
        {% do exceptions.raise_compiler_error(fail_prefix ~ "_cdc_deleted is kept by the materialization; do not select it.") %}
    {% endif %}
{% endmacro %}


{% macro raw_log_model_config(materialization, purpose) %}
    {#-
        The configs every model that reads the raw log incrementally has (cdc_merge, and
        cdc_history's validate.sql): its key, source table, chunk size, table properties,
        offsets schema and the one raw table it reads. purpose: what the model does with
        the source table's events ('applies', 'records').
    -#}
    {% set fail_prefix = materialization ~ " model '" ~ model.name ~ "': " %}

    {% if model.language != 'sql' %}
        {% do exceptions.raise_compiler_error(fail_prefix ~ materialization ~ " runs SQL models only; this one is " ~ model.language ~ ".") %}
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
        {% do exceptions.raise_compiler_error(fail_prefix ~ "set source_table to the schema-qualified source table whose events this model " ~ purpose ~ ", e.g. source_table='inventory.products' (got " ~ source_table ~ ").") %}
    {% endif %}

    {#- With format: debezium the landing model's config lands only the tables under 'tables:' (Debezium values carry no key). -#}
    {% for node_id in model.depends_on.nodes %}
        {% set node_config = (graph.nodes.get(node_id) or {}).get('config', {}) %}
        {#- The landing model's own setting, or the project's var, as the cdc_landing materialization reads them. -#}
        {% set landing_config = node_config.get('landing_config') or (var('cdc_merge_landing_config', 'landing.yml')
            if node_config.get('materialized') == 'cdc_landing' else none) %}
        {% set landing = adapter.cdc_landing_tables(landing_config) if (landing_config and target.type in ['cdc_spark', 'cdc_databend']) else none %}
        {% if landing is not none and landing.format == 'debezium' and landing.tables and source_table | lower not in landing.tables %}
            {% do exceptions.raise_compiler_error(fail_prefix ~ "source_table " ~ source_table ~ " is not captured by the landing config " ~ landing.path ~ " (format debezium lands only the tables under 'tables:': " ~ landing.tables | join(', ') ~ "): add " ~ source_table ~ " there with its key columns, or fix source_table.") %}
        {% endif %}
    {% endfor %}

    {% set max_events = config.get('max_events_per_chunk', 1000000) %}
    {#- Values set in dbt_project.yml with Jinja arrive as strings. -#}
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

    {% set upstream = [] %}
    {% for source_name, table_name in model.sources %}
        {% do upstream.append(source(source_name, table_name)) %}
    {% endfor %}
    {% for model_ref in model.refs %}
        {% do upstream.append(ref(model_ref.name) if model_ref is mapping else ref(*model_ref)) %}
    {% endfor %}
    {% if upstream | length != 1 %}
        {% do exceptions.raise_compiler_error(fail_prefix ~ "a " ~ materialization ~ " model reads exactly one raw table, through {{ cdc_merge.cdc_events(ref('raw_events')) }}; it depends on " ~ upstream | length ~ " relations.") %}
    {% endif %}

    {#- dbt run --empty renders ref() as an empty subquery; the raw table itself is still read for its snapshots. -#}
    {% set raw_relation = upstream[0].incorporate(limit=none) if upstream[0].limit is not none else upstream[0] %}

    {{ return({
        'unique_key': unique_key,
        'source_table': source_table,
        'max_events_per_chunk': max_events | int,
        'table_properties': table_properties,
        'offsets_schema': offsets_schema,
        'raw_relation': raw_relation,
    }) }}
{% endmacro %}
