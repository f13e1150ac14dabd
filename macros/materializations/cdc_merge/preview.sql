{#
    What cdc_events() stands for outside a cdc_merge run. The materialization prepares the
    batch view before it runs the model's SQL; dbt show, dbt compile and dbt docs generate run
    no materialization, so there cdc_events() becomes (var cdc_merge_preview):
        mirror     the mirror's own rows as events, so that dbt show --select <mirror> shows the
                   mirror's rows through the model (the default of dbt show, once the mirror exists)
        pending    the batch view's own query over the raw events the mirror has not applied yet:
                   what the next run would write (the default of dbt compile and docs generate,
                   whose compiled SQL is then a query a reviewer can read and run)
        all        the same over the whole raw log
        batch_view the batch view's name, as in a run: sqlfluff (.sqlfluff) lints the model's own SQL so
    In a dbt unit test of a mirror or a history, the rows given for its raw table are the whole log.
#}

{% macro cdc_events_relation(raw_relation) %}
    {% set fail_prefix = "cdc_events() in model '" ~ model.name ~ "': " %}
    {% if not execute %}
        {{ return(cdc_merge.batch_view_name(model.name)) }}
    {% endif %}
    {% if model.resource_type == 'unit_test' %}
        {{ return(cdc_merge.unit_test_events_relation(raw_relation)) }}
    {% endif %}
    {% if model.resource_type == 'model' and model.config.materialized == 'cdc_history' %}
        {{ return(cdc_merge.history_events_relation(raw_relation)) }}
    {% endif %}
    {% if model.resource_type != 'model' or model.config.materialized != 'cdc_merge' %}
        {% do exceptions.raise_compiler_error(fail_prefix ~ "cdc_events() reads the batch that the cdc_merge materialization prepares,"
            ~ " so it works only in models materialized as 'cdc_merge' (this one is " ~ (model.config.materialized or model.resource_type)
            ~ "). Set materialized='cdc_merge' in the model's config, or read the raw table with ref()/source() instead.") %}
    {% endif %}
    {% if flags.WHICH in ['show', 'compile', 'generate'] and var('cdc_merge_preview', 'mirror') != 'batch_view' %}
        {{ return('(' ~ cdc_merge.preview_events_sql(raw_relation) ~ ') as cdc_events') }}
    {% endif %}
    {{ return(cdc_merge.batch_view_name(model.name)) }}
{% endmacro %}


{% macro preview_events_sql(raw_relation) %}
    {% set cfg = cdc_merge.cdc_merge_validated_config() %}
    {% set mirror = adapter.get_relation(database=this.database, schema=this.schema, identifier=this.identifier) %}
    {% set scope = var('cdc_merge_preview', 'mirror' if (flags.WHICH == 'show' and mirror is not none) else 'pending') %}
    {% if scope not in ['mirror', 'pending', 'all'] %}
        {% do exceptions.raise_compiler_error("var cdc_merge_preview must be 'mirror' (the mirror's rows), 'pending' (the events the mirror has not applied yet), 'all' (the whole raw log) or 'batch_view' (the batch view's name, as in a run), got " ~ scope ~ ".") %}
    {% endif %}
    {% if scope == 'mirror' %}
        {% if mirror is none %}
            {% do exceptions.raise_compiler_error("cdc_events() in model '" ~ model.name ~ "': the mirror " ~ this ~ " does not exist yet; dbt run builds it, or preview what it would hold with --vars '{cdc_merge_preview: pending}'.") %}
        {% endif %}
        {{ return(cdc_merge.mirror_events_sql(mirror, cfg.deletes == 'soft')) }}
    {% endif %}
    {% set offsets = cdc_merge.offsets_relation(cfg) %}
    {% set offsets_table = adapter.get_relation(database=offsets.database, schema=offsets.schema, identifier=offsets.identifier) %}
    {% set offset_snapshot = none %}
    {% if scope == 'pending' and mirror is not none and offsets_table is not none %}
        {% set latest = run_query(cdc_merge.latest_offset_sql(offsets, this.incorporate(type='table'))) %}
        {% set offset_snapshot = (latest.rows[0]['offset_snapshot'] or none) if latest.rows | length else none %}
    {% endif %}
    {% if offset_snapshot == 'stream' %}
        {#- A Databend stream is read once, by the run that applies it: a preview must not consume it. -#}
        {% do exceptions.raise_compiler_error("cdc_events() in model '" ~ model.name ~ "': this mirror reads a Databend stream, which a preview"
            ~ " would consume; preview the whole log instead with --vars '{cdc_merge_preview: all}'.") %}
    {% endif %}
    {% if offset_snapshot is none %}
        {{ return(cdc_merge.batch_events_sql(cdc_merge.raw_events_since_sql(cfg.raw_relation, none, []), cfg.source_table, 0, 1)) }}
    {% endif %}
    {% set pending = cdc_merge.pending_raw_snapshots(cfg.raw_relation, offset_snapshot, cdc_merge.raw_snapshot_log(cfg.raw_relation)) %}
    {% if pending | length == 0 %}
        {{ return(cdc_merge.empty_batch_events_sql()) }}
    {% endif %}
    {{ return(cdc_merge.batch_events_sql(cdc_merge.raw_events_since_sql(cfg.raw_relation, offset_snapshot, pending | map(attribute='snapshot_id') | list), cfg.source_table, 0, 1)) }}
{% endmacro %}


{% macro raw_events_since_sql(raw_relation, offset_snapshot, snapshot_ids) %}
    {#- The raw events the snapshots snapshot_ids appended (all of them when offset_snapshot is none), shaped like read_chunk's. -#}
    {{ return(adapter.dispatch('raw_events_since_sql', 'cdc_merge')(raw_relation, offset_snapshot, snapshot_ids)) }}
{% endmacro %}

{% macro spark__raw_events_since_sql(raw_relation, offset_snapshot, snapshot_ids) -%}
    (
        select
            *,
            'INSERT' as _change_type
        from {{ raw_relation }}
        {%- if offset_snapshot is not none %}
        {#- Iceberg's entries keep the id of the snapshot that added each data file. #}
        where _file in (
            select data_file.file_path
            from {{ raw_relation }}.entries
            where status != 2 and snapshot_id in ({{ snapshot_ids | join(', ') }})
        )
        {%- endif %}
    ) as raw_events
{%- endmacro %}

{% macro databend__raw_events_since_sql(raw_relation, offset_snapshot, snapshot_ids) -%}
    {#-
        Not a CHANGES scan, which Databend 1.2.453 cannot join with json_each (the batch query
        does): the rows of the table now that it did not have at the offset. A landed line is
        one row of the raw table (a retried batch is not loaded twice).
    -#}
    {%- if offset_snapshot is none %}
    (
        {{ cdc_merge.databend_raw_change_columns() }}
        from {{ raw_relation }}
    ) as raw_events
    {%- else %}
    (
        select
            {%- for column in ['table_name', 'key', 'action', 'raw_data', 'before_data', 'seq', 'source_ts', 'landed_file', 'landed_line'] %}
            pending.{{ column }},
            {%- endfor %}
            'INSERT' as _change_type
        from {{ raw_relation }} as pending
        left join (
            select
                landed_file,
                landed_line
            from {{ raw_relation }} at (snapshot => '{{ offset_snapshot }}')
        ) as applied
            on pending.landed_file = applied.landed_file and pending.landed_line = applied.landed_line
        where applied.landed_file is null
    ) as raw_events
    {%- endif %}
{%- endmacro %}


{% macro mirror_events_sql(mirror, soft_deletes) %}
    {#- The mirror's live rows as events (action 'read'), its columns as the row image: the model's own SQL reads them back. -#}
    {% set columns = adapter.get_columns_in_relation(mirror) | map(attribute='name') | map('lower')
        | reject('in', cdc_merge.bookkeeping_columns()) | list %}
    {{ return(adapter.dispatch('mirror_events_sql', 'cdc_merge')(mirror, columns, soft_deletes)) }}
{% endmacro %}

{% macro spark__mirror_events_sql(mirror, columns, soft_deletes) %}
    select
        _cdc_key,
        'read' as _cdc_action,
        _cdc_seq,
        _cdc_source_ts,
        to_json(
            named_struct({% for column in columns %}'{{ column }}', {{ column }}{{ ', ' if not loop.last }}{% endfor %}),
            map('timestampFormat', "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX")
        ) as _cdc_row,
        cast(array() as array<string>) as _cdc_unavailable
    from {{ mirror }}
    {{ 'where not _cdc_deleted' if soft_deletes }}
{% endmacro %}

{% macro databend__mirror_events_sql(mirror, columns, soft_deletes) %}
    select
        _cdc_key,
        'read' as _cdc_action,
        _cdc_seq,
        _cdc_source_ts,
        json_object_keep_null({% for column in columns %}'{{ column }}', {{ column }}{{ ', ' if not loop.last }}{% endfor %}) as _cdc_row,
        '' as _cdc_unavailable
    from {{ mirror }}
    {{ 'where not _cdc_deleted' if soft_deletes }}
{% endmacro %}


{% macro unit_test_events_relation(raw_relation) %}
    {#- A unit test's model and config are the unit test's own; the tested mirror's config is asked of the manifest. -#}
    {% set tested_config = adapter.cdc_tested_model_config(model.tested_node_unique_id) %}
    {% set materialized = tested_config.get('materialized') %}
    {% if materialized not in ['cdc_merge', 'cdc_history'] or not tested_config.get('source_table') %}
        {% do exceptions.raise_compiler_error("cdc_events() in unit test '" ~ model.name ~ "': it reads the raw events of a model"
            ~ " materialized as 'cdc_merge' or 'cdc_history' with a source_table config, and " ~ model.tested_node_unique_id
            ~ " is " ~ (materialized or 'neither') ~ ".") %}
    {% endif %}
    {% set raw_events = cdc_merge.raw_events_since_sql(raw_relation, none, []) %}
    {% if materialized == 'cdc_history' %}
        {{ return('(' ~ cdc_merge.history_batch_events_sql(raw_events, tested_config.source_table, 0, 1) ~ ') as cdc_events') }}
    {% endif %}
    {{ return('(' ~ cdc_merge.batch_events_sql(raw_events, tested_config.source_table, 0, 1) ~ ') as cdc_events') }}
{% endmacro %}
