{#
    DDL of the tables the landing job writes. python_jobs/landing/schemas.py holds the same
    columns as StructType constants; tests/test_landing.py checks they agree.
#}

{#
    dbt run-operation create_raw_tables: the raw log and quarantine table of every cdc_landing model
    of the project, for a standalone landing job (cdc-land) that writes them before any dbt run.
#}
{% macro create_raw_tables() %}
    {% set landing_models = [] %}
    {% for node in graph.nodes.values() if node.resource_type == 'model' and node.config.materialized == 'cdc_landing' %}
        {% do landing_models.append(node) %}
    {% endfor %}
    {% if landing_models | length == 0 %}
        {% do exceptions.raise_compiler_error("create_raw_tables: the project has no enabled model with materialized='cdc_landing' (the landing model, e.g. models/landing/raw_events.py; docs/your_project.md).") %}
    {% endif %}
    {% for node in landing_models %}
        {% set raw_events = ref(node.package_name, node.name) %}
        {% set quarantine_table = node.config.get('quarantine_table') or (raw_events.schema ~ '.quarantine') %}
        {% set quarantine = api.Relation.create(database=raw_events.database, schema=quarantine_table.split('.')[0], identifier=quarantine_table.split('.')[1], type='table') %}
        {% do run_query(cdc_merge.create_schema_if_missing(raw_events)) %}
        {% do run_query(cdc_merge.raw_events_ddl(raw_events)) %}
        {% do run_query(cdc_merge.create_schema_if_missing(quarantine)) %}
        {% do run_query(cdc_merge.quarantine_ddl(quarantine)) %}
        {{ log('cdc_merge: raw tables ready: ' ~ raw_events ~ ', ' ~ quarantine, info=True) }}
    {% endfor %}
{% endmacro %}


{% macro create_schema_if_missing(relation) %}
    {{ return(adapter.dispatch('create_schema_if_missing', 'cdc_merge')(relation)) }}
{% endmacro %}

{% macro spark__create_schema_if_missing(relation) %}
    create namespace if not exists {{ relation.schema }}
{% endmacro %}


{% macro raw_events_ddl(relation) %}
    {{ return(adapter.dispatch('raw_events_ddl', 'cdc_merge')(relation)) }}
{% endmacro %}

{#
    Each landing task writes its own file per source table (fanout, no shuffle): with hash
    distribution all events of one table went through one task, and a batch of 1M events of
    one table took 1.5 s longer on 2 cores. No Parquet dictionaries: images, keys and seqs are
    nearly all distinct, so building one only to drop it made the write 20% slower
    (BENCHMARKS.md, landing).
#}
{% macro spark__raw_events_ddl(relation) %}
    create table if not exists {{ relation }} (
        table_name string comment 'schema-qualified source table',
        key string comment 'canonical JSON array of the primary-key values',
        action string comment 'insert, update, delete or read',
        raw_data string comment 'after image, exact JSON text',
        before_data string comment 'before image, exact JSON text',
        seq string comment 'sortable source position, see docs/ordering.md',
        source_ts timestamp comment 'commit time in the source',
        landed_file string comment 'input file',
        landed_line int comment 'line in the input file, from 1',
        landed_at timestamp comment 'when the landing job appended the event',
        tx_id string comment 'source transaction id, where the format gives it',
        tx_order bigint comment 'order of the event in its transaction, where the format gives it',
        tx_events bigint comment 'on a transaction end marker: its event count, where known'
    )
    using iceberg
    partitioned by (table_name)
    tblproperties (
        'format-version' = '2',
        'write.distribution-mode' = 'none',
        'write.spark.fanout.enabled' = 'true',
        'parquet.enable.dictionary' = 'false',
        {{ cdc_merge.metadata_log_tblproperties() }}
    )
{% endmacro %}


{% macro quarantine_ddl(relation) %}
    {{ return(adapter.dispatch('quarantine_ddl', 'cdc_merge')(relation)) }}
{% endmacro %}

{% macro spark__quarantine_ddl(relation) %}
    create table if not exists {{ relation }} (
        landed_file string,
        landed_line int,
        raw_text string,
        reason string,
        landed_at timestamp
    )
    using iceberg
    tblproperties ('format-version' = '2', {{ cdc_merge.metadata_log_tblproperties() }})
{% endmacro %}


{#
    Databend: raw_data and before_data as VARIANT, and change tracking on, so that
    CHANGES(...) AT (SNAPSHOT => ...) reads only what later snapshots appended.
#}

{% macro databend__create_schema_if_missing(relation) %}
    create database if not exists {{ relation.schema }}
{% endmacro %}

{% macro databend__raw_events_ddl(relation) %}
    create table if not exists {{ relation }} (
        table_name string null comment 'schema-qualified source table',
        key string null comment 'canonical JSON array of the primary-key values',
        action string null comment 'insert, update, delete or read',
        raw_data variant null comment 'after image',
        before_data variant null comment 'before image',
        seq string null comment 'sortable source position, see docs/ordering.md',
        source_ts timestamp null comment 'commit time in the source',
        landed_file string null comment 'input file',
        landed_line int null comment 'line in the input file, from 1',
        landed_at timestamp null comment 'when the landing job appended the event',
        tx_id string null comment 'source transaction id, where the format gives it',
        tx_order bigint null comment 'order of the event in its transaction, where the format gives it',
        tx_events bigint null comment 'on a transaction end marker: its event count, where known'
    )
    change_tracking = true
{% endmacro %}

{% macro databend__quarantine_ddl(relation) %}
    create table if not exists {{ relation }} (
        landed_file string null,
        landed_line int null,
        raw_text string null,
        reason string null,
        landed_at timestamp null
    )
{% endmacro %}
