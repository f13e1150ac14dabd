{#
    Each mirror compared with its live source table (python_jobs/verify/; docs/operating.md, "Verify"):

        dbt run-operation cdc_merge.cdc_verify                      (every row, by key ranges)
        dbt run-operation cdc_merge.cdc_verify --args '{sample: 100}'   (counts and a sample)
        cdc-verify [--sample 100]           (the same, with its exit status)

    Every row: the key space in segments, each side's row count and checksum of each segment
    computed by its own engine, segments that differ split again down to ranges of at most
    leaf_rows rows, which are compared row by row (python_jobs/verify/ranges.py). With sample: row
    counts and a random sample of rows from each side instead. The source is
    the var cdc_merge_source ({postgres: DSN} or {mysql: user@host:port}); the check reads it with
    the capture's own rendering of values. A mirror that differs fails the operation (unless
    fail_on_difference is false). Each check
    compares at the source's log position: the statements at the end of this file tell how far the
    mirror has applied the raw log and which keys changed after the position (in_flight.py).
#}

{% macro cdc_verify(select=none, sample=none, source=none, segments=64, leaf_rows=2000, wait_seconds=60, fail_on_difference=true,
    capture_state=none) %}
    {% if not execute %}
        {{ return(none) }}
    {% endif %}
    {% do cdc_merge.require_cdc_adapter("cdc_verify") %}
    {% set names = [select] if select is string else select %}
    {% set mirrors = [] %}
    {#- Any mirror's table: an event of one of them after a position shows the capture landed past it (python_jobs/verify/in_flight.py). -#}
    {% set source_tables = [] %}
    {% for node in graph.nodes.values() if node.resource_type == 'model' and node.config.materialized in ('cdc_merge', 'cdc_history') %}
        {% do source_tables.append(node.config.source_table) %}
    {% endfor %}
    {% for node in graph.nodes.values() if node.resource_type == 'model'
        and node.config.materialized in ('cdc_merge', 'cdc_history') and (names is none or node.name in names) %}
        {% set relation = api.Relation.create(database=node.database, schema=node.schema, identifier=node.alias, type='table') %}
        {% if load_relation(relation) is none %}
            {{ log("cdc_verify " ~ relation ~ ": not built yet, not checked", info=True) }}
        {% else %}
            {#- A history mirror is compared by its current versions, a soft-delete mirror by its live rows. -#}
            {% set history = node.config.materialized == 'cdc_history' %}
            {% set soft = 'history' if history else node.config.get('deletes') == 'soft' %}
            {% set unique_key = node.config.get('unique_key') %}
            {% set key = ([unique_key] if unique_key is string else unique_key or []) | map('lower') | list %}
            {% set columns = [] %}
            {% for column in adapter.get_columns_in_relation(relation)
                if not (history and (column.name | lower) in cdc_merge.history_columns()) %}
                {% do columns.append([column.name | lower, column.dtype]) %}
            {% endfor %}
            {#- A column kept though its model no longer selects it is null in rows written since: not compared. -#}
            {% set kept = cdc_merge.verify_kept_columns(node, relation) %}
            {% set columns = columns | rejectattr('0', 'in', kept) | list %}
            {#- The key with its types: a decimal key is sampled as its text, not as a double (verify_row_json). -#}
            {% set key_columns = [] %}
            {% for name in key %}
                {% do key_columns.append((columns | selectattr('0', 'equalto', name) | first) or name) %}
            {% endfor %}
            {% set raw_relation = cdc_merge.verify_raw_relation(node) %}
            {% set offsets = api.Relation.create(database=node.database, schema=node.config.get('offsets_schema') or node.schema,
                identifier='cdc_merge_offsets', type='table') %}
            {% do mirrors.append({
                'relation': relation | string,
                'database': relation.database,
                'schema': relation.schema,
                'identifier': relation.identifier,
                'source_table': node.config.source_table,
                'engine': adapter.dispatch('verify_engine', 'cdc_merge')(),
                'columns': columns,
                'kept_columns': kept,
                'count_sql': cdc_merge.verify_count_sql(relation, soft),
                'unkeyed_sql': cdc_merge.verify_unkeyed_sql(relation),
                'keys_sql': cdc_merge.verify_keys_sql(relation, sample or 100, soft),
                'rows_sql': cdc_merge.verify_rows_sql(relation, columns | rejectattr('0', 'in', cdc_merge.bookkeeping_columns()) | list, soft),
                'key': key,
                'range_keys_sql': cdc_merge.verify_range_keys_sql(relation, key_columns, soft),
                'range_rows_sql': cdc_merge.verify_range_rows_sql(relation, columns | rejectattr('0', 'in', cdc_merge.bookkeeping_columns()) | list, soft),
                'range_stats_sql': cdc_merge.verify_range_stats_sql(relation, soft),
                'at_snapshot_sql': adapter.dispatch('verify_at_snapshot', 'cdc_merge')('__CDC_MERGE_SNAPSHOT__'),
                'applied_offset_sql': cdc_merge.latest_offset_sql(offsets, relation),
                'raw_current_sql': cdc_merge.current_raw_snapshot_sql(raw_relation),
                'mirror_current_sql': cdc_merge.current_raw_snapshot_sql(relation),
                'passed_sql': cdc_merge.verify_passed_sql(raw_relation, source_tables | unique | list),
                'landed_commit_sql': adapter.dispatch('verify_landed_commit_sql', 'cdc_merge')(raw_relation),
                'newer_sql': cdc_merge.verify_newer_events_sql(raw_relation, node.config.source_table),
                'in_flight_sql': cdc_merge.verify_in_flight_sql(raw_relation, node.config.source_table),
                'refresh_sql': adapter.dispatch('verify_refresh_sql', 'cdc_merge')([offsets, raw_relation, relation]),
                'in_flight_view_sql': adapter.dispatch('verify_in_flight_view_sql', 'cdc_merge')(
                    cdc_merge.verify_in_flight_sql(raw_relation, node.config.source_table)),
            }) %}
        {% endif %}
    {% endfor %}
    {% set report = adapter.cdc_verify_mirrors(mirrors, source if source is not none else var('cdc_merge_source', none),
        sample, {'segments': segments, 'leaf_rows': leaf_rows, 'wait_seconds': wait_seconds, 'capture_state': capture_state}) %}
    {% for line in report.lines %}
        {{ log(line, info=True) }}
    {% endfor %}
    {% do cdc_merge.record_verify_checks(report.checks) %}
    {#- cdc-verify passes fail_on_difference=false: it reads the report and sets its exit status itself. -#}
    {% if report.differing and fail_on_difference %}
        {% do exceptions.raise_compiler_error(report.summary) %}
    {% endif %}
{% endmacro %}


{% macro spark__verify_engine() %}
    {#- The engine's name in python_jobs/verify/ (row_hash.py, compare.py): the values its mirror holds. -#}
    {{ return('spark') }}
{% endmacro %}

{% macro databend__verify_engine() %}
    {{ return('databend') }}
{% endmacro %}


{% macro verify_live_rows(soft) %}
    {#- soft: true (a soft-delete mirror), 'history' (a history mirror's current versions) or false;
        a row without a _cdc_key was not written by the apply and is counted apart (verify_unkeyed_sql). -#}
    {%- if soft == 'history' -%}
        where is_current and not is_deleted and _cdc_key is not null
    {%- elif soft -%}
        where not _cdc_deleted and _cdc_key is not null
    {%- else -%}
        where _cdc_key is not null
    {%- endif -%}
{% endmacro %}

{% macro verify_unkeyed_sql(relation) %}
    select count(*) as unkeyed from {{ relation }} where _cdc_key is null
{% endmacro %}

{% macro verify_count_sql(relation, soft) %}
    select count(*) as mirror_rows from {{ relation }} {{ cdc_merge.verify_live_rows(soft) }}
{% endmacro %}

{% macro verify_keys_sql(relation, sample, soft) %}
    select _cdc_key from {{ relation }} {{ cdc_merge.verify_live_rows(soft) }} order by rand() limit {{ sample | int }}
{% endmacro %}

{% macro verify_rows_sql(relation, columns, soft) %}
    {#- Each row as one JSON text, which no result reader retypes; __CDC_MERGE_KEYS__: the keys' literals (check.py). -#}
    select
        _cdc_key,
        {{ adapter.dispatch('verify_row_json', 'cdc_merge')(columns) }} as _row
    from {{ relation }}
    {{ cdc_merge.verify_live_rows(soft) }}
        and _cdc_key in (__CDC_MERGE_KEYS__)
{% endmacro %}

{% macro spark__verify_row_json(columns) -%}
    {#- columns: names, or (name, type) pairs. -#}
    to_json(
        named_struct({% for column in columns %}{% set name = column if column is string else column[0] %}'{{ name }}', {{ name }}{{ ', ' if not loop.last }}{% endfor %}),
        map('timestampFormat', "yyyy-MM-dd'T'HH:mm:ss.SSSSSS", 'ignoreNullFields', 'false', 'timeZone', 'UTC')
    )
{%- endmacro %}

{% macro databend__verify_row_json(columns) -%}
    {#- columns: names, or (name, type) pairs; a decimal as its text, which json_object would make a double
        (a nullable column's type as Databend names it: Nullable(Decimal(38, 10))). -#}
    to_string(json_object_keep_null(
        {%- for column in columns %}{% set name = column if column is string else column[0] %}
        '{{ name }}', {{ name ~ '::string' if column is not string and modules.re.match('^(nullable\\()?(decimal|numeric)', column[1] | lower) else name }}{{ ',' if not loop.last }}
        {%- endfor %}
    ))
{%- endmacro %}

{% macro verify_range_keys_sql(relation, key, soft) %}
    {#- A sample of the keys in a range, each as one JSON text; the placeholders: python_jobs/verify/mirror_ranges.py. -#}
    select {{ adapter.dispatch('verify_row_json', 'cdc_merge')(key) }} as _key
    from {{ relation }} __CDC_MERGE_AT__
    {{ cdc_merge.verify_live_rows(soft) }}
        and (__CDC_MERGE_RANGE__)
    order by rand()
    limit __CDC_MERGE_LIMIT__
{% endmacro %}

{% macro verify_range_rows_sql(relation, columns, soft) %}
    select
        _cdc_key,
        {{ adapter.dispatch('verify_row_json', 'cdc_merge')(columns) }} as _row
    from {{ relation }} __CDC_MERGE_AT__
    {{ cdc_merge.verify_live_rows(soft) }}
        and (__CDC_MERGE_RANGE__)
{% endmacro %}

{% macro verify_range_stats_sql(relation, soft) %}
    {#- Each segment's rows and checksum (python_jobs/verify/row_hash.py); __CDC_MERGE_STAGES__: the
        CTEs from live rows to staged rows (the steps of a float's text on Databend), each ending in a comma. -#}
    with live as (
        select *
        from {{ relation }} __CDC_MERGE_AT__
        {{ cdc_merge.verify_live_rows(soft) }}
            and (__CDC_MERGE_RANGE__)
    ),

    __CDC_MERGE_STAGES__

    ranged as (
        select
            __CDC_MERGE_SEGMENT__ as segment,
            __CDC_MERGE_DIGEST__ as _cdc_digest
        from staged
    )

    select
        segment,
        count(*) as segment_rows,
        sum(__CDC_MERGE_NUMBER__) as checksum
    from ranged
    group by segment
{% endmacro %}


{#- Rows in flight (python_jobs/verify/in_flight.py): how far a mirror has applied the raw log. -#}

{% macro verify_raw_relation(node) %}
    {#- The raw table a mirror reads: its one upstream model or source. -#}
    {% set upstream = node.depends_on.nodes[0] %}
    {% if upstream in graph.sources %}
        {% set raw = graph.sources[upstream] %}
        {{ return(api.Relation.create(database=raw.database, schema=raw.schema, identifier=raw.identifier, type='table')) }}
    {% endif %}
    {% set raw = graph.nodes[upstream] %}
    {{ return(api.Relation.create(database=raw.database, schema=raw.schema, identifier=raw.alias, type='table')) }}
{% endmacro %}

{% macro spark__verify_at_snapshot(snapshot) -%}
    version as of {{ snapshot }}
{%- endmacro %}

{% macro databend__verify_at_snapshot(snapshot) -%}
    at (snapshot => '{{ snapshot }}')
{%- endmacro %}

{% macro spark__verify_landed_commit_sql(raw_relation) %}
    {#- 1 when the raw table holds an event committed at or after a time (epoch ms): the newest commit its capture wrote. -#}
    select count(*) as landed
    from (
        select 1 as found
        from {{ raw_relation }}
        where source_ts >= timestamp_millis(__CDC_MERGE_COMMIT_MS__)
        limit 1
    ) as found_events
{% endmacro %}

{% macro databend__verify_landed_commit_sql(raw_relation) %}
    select count(*) as landed
    from (
        select 1 as found
        from {{ raw_relation }}
        where to_int64(source_ts) >= __CDC_MERGE_COMMIT_MS__ * 1000
        limit 1
    ) as found_events
{% endmacro %}

{% macro verify_passed_sql(raw_relation, source_tables) %}
    {#- 1 when the raw table at a snapshot holds an event of the source at or after a position. -#}
    select count(*) as passed
    from (
        select 1 as found
        from {{ raw_relation }} {{ adapter.dispatch('verify_at_snapshot', 'cdc_merge')('__CDC_MERGE_SNAPSHOT__') }}
        where table_name in ({% for table in source_tables %}'{{ table }}'{{ ', ' if not loop.last }}{% endfor %})
            and seq >= '__CDC_MERGE_POSITION__'
        limit 1
    ) as found_events
{% endmacro %}

{% macro verify_newer_events_sql(raw_relation, source_table) %}
    {#- 1 when the raw table holds an event of the table newer than every one it held at a snapshot (a compaction adds none). -#}
    select count(*) as newer
    from (
        select 1 as found
        from {{ raw_relation }}
        where table_name = '{{ source_table }}'
            and seq > (
                select coalesce(max(seq), '')
                from {{ raw_relation }} {{ adapter.dispatch('verify_at_snapshot', 'cdc_merge')('__CDC_MERGE_SNAPSHOT__') }}
                where table_name = '{{ source_table }}'
            )
        limit 1
    ) as newer_events
{% endmacro %}

{% macro verify_in_flight_sql(raw_relation, source_table) %}
    {#- The keys of a table changed at or after a position, as landed by now; not the table's own key ('[]') of its range records and schema events. -#}
    select distinct key
    from {{ raw_relation }}
    where table_name = '{{ source_table }}'
        and seq >= '__CDC_MERGE_POSITION__'
        and key <> '[]'
{% endmacro %}

{% macro spark__verify_in_flight_view_sql(in_flight_sql) %}
    {#- The keys in flight kept as they are now, for every query of the check to leave out without a list of literals. -#}
    {{ return(['drop view if exists cdc_verify_in_flight', 'cache table cdc_verify_in_flight as ' ~ in_flight_sql]) }}
{% endmacro %}

{% macro databend__verify_in_flight_view_sql(in_flight_sql) %}
    {{ return([]) }}
{% endmacro %}

{% macro spark__verify_refresh_sql(relations) %}
    {#- The session's catalog caches a table's metadata for a while: read the tables as they are now. -#}
    {% set statements = [] %}
    {% for relation in relations %}
        {% do statements.append('refresh table ' ~ relation) %}
    {% endfor %}
    {{ return(statements) }}
{% endmacro %}

{% macro databend__verify_refresh_sql(relations) %}
    {{ return([]) }}
{% endmacro %}


{% macro verify_kept_columns(node, relation) %}
    {#- The mirror's columns whose newest change in cdc_merge_schema_changes is 'kept' (schema_change.sql). -#}
    {% set changes = api.Relation.create(database=node.database, schema=node.config.get('offsets_schema') or node.schema,
        identifier='cdc_merge_schema_changes', type='table') %}
    {% if node.config.materialized != 'cdc_merge' or load_relation(changes) is none %}
        {{ return([]) }}
    {% endif %}
    {% set newest = cdc_merge.pending_backfills(changes, relation).newest %}
    {{ return(newest.items() | selectattr('1', 'equalto', 'kept') | map(attribute='0') | map('lower') | list) }}
{% endmacro %}
