{#
    The cdc_merge_runs table (metrics.sql writes its rows): its columns on each engine, and the
    columns a table made by an earlier version gets on the next run.
#}

{% macro create_runs_table(relation) %}
    {{ return(adapter.dispatch('create_runs_table', 'cdc_merge')(relation)) }}
{% endmacro %}

{% macro spark__create_runs_table(relation) %}
    create table if not exists {{ relation }} (
        target_table string,
        invocation_id string,
        raw_table string,
        source_table string,
        started_at timestamp,
        finished_at timestamp,
        run_seconds double,
        chunks bigint,
        events_read bigint,
        rows_inserted bigint,
        rows_updated bigint,
        rows_deleted bigint,
        events_skipped bigint,
        lines_quarantined bigint,
        offset_snapshot string,
        newest_source_ts timestamp,
        lag_seconds double,
        maintenance string,
        files_added bigint,
        files_removed bigint,
        snapshots_expired bigint,
        orphan_files_removed bigint,
        raw_events_removed bigint,
        tombstones_removed bigint,
        offsets_removed bigint,
        consistency_group string,
        cut_lag_seconds double
    )
    using iceberg
    tblproperties ({{ cdc_merge.bookkeeping_table_properties() }})
{% endmacro %}

{% macro databend__create_runs_table(relation) %}
    create table if not exists {{ relation }} (
        target_table string null,
        invocation_id string null,
        raw_table string null,
        source_table string null,
        started_at timestamp null,
        finished_at timestamp null,
        run_seconds double null,
        chunks bigint null,
        events_read bigint null,
        rows_inserted bigint null,
        rows_updated bigint null,
        rows_deleted bigint null,
        events_skipped bigint null,
        lines_quarantined bigint null,
        offset_snapshot string null,
        newest_source_ts timestamp null,
        lag_seconds double null,
        maintenance string null,
        files_added bigint null,
        files_removed bigint null,
        snapshots_expired bigint null,
        orphan_files_removed bigint null,
        raw_events_removed bigint null,
        tombstones_removed bigint null,
        offsets_removed bigint null,
        consistency_group string null,
        cut_lag_seconds double null
    )
{% endmacro %}


{% macro runs_columns_added() %}
    {#- Columns cdc_merge_runs got after its first version, in order: an older table gets them (upgrade_runs_table). -#}
    {{ return([('consistency_group', 'string'), ('cut_lag_seconds', 'double')]) }}
{% endmacro %}


{% macro upgrade_runs_table(relation) %}
    {#-
        A cdc_merge_runs made before the newer columns gets them, checked once per process (a warm
        cdc-run process checks once; on adapters without the plugin's state, every run). Only a
        table the invocation found (dbt's relation cache): one created since has them all.
    -#}
    {% if not cdc_merge.first_time_in_process('runs-columns:' ~ relation)
        or adapter.get_relation(database=relation.database, schema=relation.schema, identifier=relation.identifier) is none %}
        {{ return(none) }}
    {% endif %}
    {#- In dbt's own SparkSession from Iceberg's metadata, without a statement. -#}
    {% set names = adapter.cdc_column_names(relation) if cdc_merge.in_process_session() else none %}
    {% if names is none %}
        {% set names = adapter.get_columns_in_relation(relation) | map(attribute='name') | list %}
    {% endif %}
    {% set present = names | map('lower') | list %}
    {% for column, data_type in cdc_merge.runs_columns_added() if column not in present %}
        {% do run_query(cdc_merge.add_column_sql(relation, column, data_type)) %}
    {% endfor %}
{% endmacro %}


{% macro first_time_in_process(key) %}
    {#- True for the first caller with this key in this process (run_state.py); always on adapters without the plugin's state. -#}
    {{ return(adapter.cdc_first_time_in_process(key)) }}
{% endmacro %}
