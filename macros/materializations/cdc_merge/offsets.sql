{#
    Offsets log: one appended row per applied chunk, never updated, so parallel models
    never conflict on it. The newest row of a target says where it stands; the others
    are its history (events read, rows changed, lag). offset_snapshot is a string so
    Databend can store its own snapshot ids in the same design; null means the start of the
    raw log (a rebuild writes it first: rebuild_aside.sql). Offsets of one mirror are
    written by one process at a time (run_guard.sql); rows of different mirrors are appends,
    which Iceberg's optimistic commit retries on top of each other.
#}

{% macro offsets_relation(cfg) %}
    {{ return(api.Relation.create(schema=cfg.offsets_schema, identifier='cdc_merge_offsets', type='table')) }}
{% endmacro %}


{% macro create_offsets_table(relation) %}
    {{ return(adapter.dispatch('create_offsets_table', 'cdc_merge')(relation)) }}
{% endmacro %}

{% macro spark__create_offsets_table(relation) %}
    create table if not exists {{ relation }} (
        target_table string,
        offset_ordinal bigint,
        raw_table string,
        source_table string,
        offset_snapshot string,
        events_read bigint,
        rows_inserted bigint,
        rows_updated bigint,
        rows_deleted bigint,
        events_skipped bigint,
        max_source_ts timestamp,
        committed_at timestamp,
        invocation_id string
    )
    using iceberg
    tblproperties ({{ cdc_merge.bookkeeping_table_properties() }})
{% endmacro %}


{% macro databend__create_offsets_table(relation) %}
    create table if not exists {{ relation }} (
        target_table string null,
        offset_ordinal bigint null,
        raw_table string null,
        source_table string null,
        offset_snapshot string null,
        events_read bigint null,
        rows_inserted bigint null,
        rows_updated bigint null,
        rows_deleted bigint null,
        events_skipped bigint null,
        max_source_ts timestamp null,
        committed_at timestamp null,
        invocation_id string null
    )
{% endmacro %}


{% macro latest_offset_sql(offsets, target_relation) %}
    {#- '' for null, the start of the log: the embedded Databend's driver hands a NULL over as the string 'NULL'. -#}
    select
        coalesce(cast(offset_snapshot as string), '') as offset_snapshot,
        offset_ordinal
    from {{ offsets }}
    where target_table = '{{ target_relation }}'
    order by offset_ordinal desc
    limit 1
{% endmacro %}


{% macro newest_offset(offsets, target_relation) %}
    {#-
        Where the mirror stands: {'offset_snapshot': none at the start of the log, 'offset_ordinal': 0
        when it has no row}. In dbt's own SparkSession from the invocation's one read of every
        mirror's (run_state.py), read again whenever any process wrote an offset since; elsewhere a query.
    -#}
    {% set known = adapter.cdc_newest_offset(invocation_id, offsets | string, target_relation | string) if cdc_merge.capabilities().iceberg_helpers else none %}
    {% if known is not none %}
        {{ return(known) }}
    {% endif %}
    {% set rows = run_query(cdc_merge.latest_offset_sql(offsets, target_relation)).rows %}
    {{ return({'offset_snapshot': (rows[0]['offset_snapshot'] or none) if rows | length else none,
               'offset_ordinal': (rows[0]['offset_ordinal'] | int) if rows | length else 0}) }}
{% endmacro %}


{% macro keep_offset(offsets, target_relation, cfg, offset_snapshot, stats, ordinal=none) %}
    {#- The mirror's last offset of the run, written with the other mirrors' in one INSERT (append_offsets_sql).
        ordinal: the row's, where the run knows it from the offset it read (an appended row would take it). -#}
    {% do adapter.cdc_keep_row('offset', invocation_id, offsets | string, target_relation | string, {
        'raw_table': cfg.raw_relation | string,
        'source_table': cfg.source_table,
        'offset_snapshot': offset_snapshot,
        'events_read': stats.events_read,
        'inserted': stats.inserted,
        'updated': stats.updated,
        'deleted': stats.deleted,
        'skipped': stats.skipped,
        'max_source_ts': (stats.max_source_ts | string) if stats.max_source_ts else none,
        'offset_ordinal': ordinal,
    }) %}
{% endmacro %}


{% macro append_offsets_sql(offsets, rows, ordinals=none) %}
    {#- Kept offset rows of several mirrors (keep_offset) in one INSERT. -#}
    insert into {{ offsets }}
    {{ cdc_merge.kept_offsets_sql(offsets, rows, ordinals) }}
{% endmacro %}


{% macro kept_offsets_sql(offsets, rows, ordinals=none) %}
    {#-
        The rows of append_offsets_sql: each takes the ordinal after its mirror's newest one in
        offsets, in the order kept; or, given ordinals (one per row, kept_rows_in_driver.py), those,
        and offsets is not read: a projection of constants, which Spark computes without a job.
    -#}
    with

    kept as (
        {#- (values ...) as kept (...): the form both Spark and Databend read. -#}
        select * from (values
        {%- for row in rows %}
            ('{{ row.target_table }}', {{ ordinals[loop.index0] if ordinals is not none else loop.index }},
             '{{ row.raw_table }}', '{{ row.source_table }}',
             {{ "'" ~ row.offset_snapshot ~ "'" if row.offset_snapshot is not none else 'cast(null as string)' }},
             {{ row.events_read }}, {{ row.inserted }}, {{ row.updated }}, {{ row.deleted }}, {{ row.skipped }},
             {{ "timestamp'" ~ row.max_source_ts ~ "'" if row.max_source_ts else 'cast(null as timestamp)' }},
             '{{ row.invocation_id }}'){{ ',' if not loop.last }}
        {%- endfor %}
        ) as kept (
            target_table, {{ 'offset_ordinal' if ordinals is not none else 'kept_order' }}, raw_table, source_table,
            offset_snapshot, events_read, rows_inserted, rows_updated, rows_deleted, events_skipped, max_source_ts,
            invocation_id
        )
    ),
    {%- if ordinals is none %}

    newest as (
        select
            target_table,
            max(offset_ordinal) as offset_ordinal
        from {{ offsets }}
        where target_table in (select target_table from kept)
        group by target_table
    ),
    {%- endif %}

    final as (
        select
            kept.target_table,
            {% if ordinals is not none -%}
            cast(kept.offset_ordinal as bigint)
            {%- else -%}
            coalesce(newest.offset_ordinal, 0)
            + row_number() over (partition by kept.target_table order by kept.kept_order)
            {%- endif %} as offset_ordinal,
            kept.raw_table,
            kept.source_table,
            kept.offset_snapshot,
            cast(kept.events_read as bigint) as events_read,
            cast(kept.rows_inserted as bigint) as rows_inserted,
            cast(kept.rows_updated as bigint) as rows_updated,
            cast(kept.rows_deleted as bigint) as rows_deleted,
            cast(kept.events_skipped as bigint) as events_skipped,
            kept.max_source_ts,
            current_timestamp() as committed_at,
            kept.invocation_id
        from kept
        {%- if ordinals is none %}
        left join newest
            on kept.target_table = newest.target_table
        {%- endif %}
    )

    select * from final
{% endmacro %}


{% macro append_offset_sql(offsets, target_relation, cfg, offset_ordinal, offset_snapshot, stats) %}
    insert into {{ offsets }}
    select
        '{{ target_relation }}' as target_table,
        {{ offset_ordinal }} as offset_ordinal,
        '{{ cfg.raw_relation }}' as raw_table,
        '{{ cfg.source_table }}' as source_table,
        {{ "'" ~ offset_snapshot ~ "'" if offset_snapshot is not none else 'cast(null as string)' }} as offset_snapshot,
        {{ stats.events_read }} as events_read,
        {{ stats.inserted }} as rows_inserted,
        {{ stats.updated }} as rows_updated,
        {{ stats.deleted }} as rows_deleted,
        {{ stats.skipped }} as events_skipped,
        {{ "timestamp'" ~ stats.max_source_ts ~ "'" if stats.max_source_ts else 'cast(null as timestamp)' }} as max_source_ts,
        current_timestamp() as committed_at,
        '{{ invocation_id }}' as invocation_id
{% endmacro %}


{% macro bookkeeping_table_properties() -%}
    {#-
        Deletes from the offsets and runs tables (maintenance's trims) remove old rows that no
        writer appends again, so an append committed meanwhile (another mirror's rows) is no
        conflict: snapshot isolation, not Iceberg's default serializable, which fails the trim.
        Every mirror of a run appends to them at once: Iceberg's default of four commit retries
        failed an append of eight dbt threads (an append never conflicts, it only retries);
        twenty retries, each backing off at most two seconds. Old metadata files deleted on commit (metadata_log.sql).
    -#}
    'format-version' = '2', 'write.delete.isolation-level' = 'snapshot',
    'commit.retry.num-retries' = '20', 'commit.retry.max-wait-ms' = '2000',
    {{ cdc_merge.metadata_log_tblproperties() }}
{%- endmacro %}


{% macro ensure_bookkeeping_tables(offsets, with_runs=true) %}
    {#-
        The offsets table (and cdc_merge_runs), created if missing. dbt's relation cache, filled when the
        invocation starts, answers whether they exist: once they do, a mirror spends no statement on them.
        (Not added to the cache when created here: that would make dbt take its schema as fully listed.)
    -#}
    {% set tables = [(offsets, cdc_merge.create_offsets_table)] %}
    {% if with_runs %}
        {% do tables.append((cdc_merge.runs_relation(offsets), cdc_merge.create_runs_table)) %}
    {% endif %}
    {% for relation, create in tables %}
        {% if adapter.get_relation(database=relation.database, schema=relation.schema, identifier=relation.identifier) is none %}
            {% set statements = [cdc_merge.create_schema_if_missing(relation), create(relation)] %}
            {#- Every mirror of a first run gets here at once: one thread creates the table, the others find it. -#}
            {% do adapter.cdc_execute_one_at_a_time('create ' ~ relation, statements) %}
        {% elif cdc_merge.capabilities().iceberg_helpers and adapter.cdc_first_time_in_process('properties:' ~ relation) %}
            {#- A table made by an earlier version gets the properties too; once per process. -#}
            {% do run_query('alter table ' ~ relation ~ ' set tblproperties (' ~ cdc_merge.bookkeeping_table_properties() ~ ')') %}
        {% endif %}
    {% endfor %}
{% endmacro %}
