{#
    Run metrics: one row per mirror (and per cdc_history) per run in cdc_merge_runs, next to
    cdc_merge_offsets.

    A table of its own rather than more columns on the offsets: the offsets log has one row per
    applied chunk and none for a run that found nothing new, every run reads it to learn where it
    stands, and maintenance trims it to offsets_history rows; a run's metrics are one row per run
    (idle runs included, which is what a lag check needs to see), carry what the run's maintenance
    did, and are kept by age (runs_history_days).
#}

{% macro runs_relation(offsets) %}
    {{ return(offsets.incorporate(path={'identifier': 'cdc_merge_runs'})) }}
{% endmacro %}


{% macro seconds_since_sql(moment) %}
    {{ return(adapter.dispatch('seconds_since_sql', 'cdc_merge')(moment)) }}
{% endmacro %}

{% macro spark__seconds_since_sql(moment) -%}
    (unix_micros(current_timestamp()) - unix_micros({{ moment }})) / 1000000.0
{%- endmacro %}

{% macro databend__seconds_since_sql(moment) -%}
    (to_unix_timestamp(now()) - to_unix_timestamp({{ moment }}))
{%- endmacro %}


{% macro keep_run(offsets, target_relation, cfg, totals, run_started, maintained, offset_snapshot) %}
    {#- The run's row as record_run writes it, kept to be written with the other mirrors' (kept_rows.sql). -#}
    {% set finished = modules.datetime.datetime.utcnow() %}
    {% set quarantine = adapter.get_relation(database=none, schema=cfg.raw_relation.schema, identifier='quarantine') %}
    {% set counts = maintained if maintained is not none else {} %}
    {% set values = {
        'quarantine': (quarantine | string) if quarantine is not none else none,
        'raw_table': cfg.raw_relation | string,
        'source_table': cfg.source_table,
        'started_at': run_started.strftime('%Y-%m-%d %H:%M:%S.%f'),
        'finished_at': finished.strftime('%Y-%m-%d %H:%M:%S.%f'),
        'run_seconds': (finished - run_started).total_seconds() | round(3),
        'chunks': totals.chunks,
        'events_read': totals.events_read,
        'inserted': totals.inserted,
        'updated': totals.updated,
        'deleted': totals.deleted,
        'skipped': totals.skipped,
        'offset_snapshot': offset_snapshot,
        'newest_source_ts': (totals.max_source_ts | string) if totals.max_source_ts else none,
        'maintenance': 'maintained' if maintained is not none else '',
        'consistency_group': cfg.get('consistency_group'),
        'cut_lag_seconds': cdc_merge.run_cut_lag(cfg, totals),
    } %}
    {% for name in cdc_merge.maintenance_count_columns() %}
        {% do values.update({name: counts.get(name, 0) | int}) %}
    {% endfor %}
    {% do adapter.cdc_keep_row('run', invocation_id, cdc_merge.runs_relation(offsets) | string, target_relation | string, values) %}
{% endmacro %}


{% macro run_cut_lag(cfg, totals) %}
    {#-
        A group mirror's cut lag: the newest landed source commit minus the newest its run applied
        (the horizon's, the group's cut once every mirror of the group applied it); 0 for a run that
        found nothing new, as then no transaction waits. None outside a group.
    -#}
    {% if cfg.get('consistency_group') is none %}
        {{ return(none) }}
    {% endif %}
    {{ return(totals.get('cut_lag_seconds', 0)) }}
{% endmacro %}


{% macro string_or_null(value) -%}
    {{ "'" ~ value ~ "'" if value is not none else 'cast(null as string)' }}
{%- endmacro %}


{% macro double_or_null(value) -%}
    {{ 'cast(' ~ value ~ ' as double)' if value is not none else 'cast(null as double)' }}
{%- endmacro %}


{% macro maintenance_count_columns() %}
    {{ return(['files_added', 'files_removed', 'snapshots_expired', 'orphan_files_removed', 'raw_events_removed', 'tombstones_removed', 'offsets_removed']) }}
{% endmacro %}


{% macro append_runs_sql(runs, quarantine, rows) %}
    {#- Kept runs rows (keep_run) in one INSERT. -#}
    insert into {{ runs }}
    {{ cdc_merge.kept_runs_sql(runs, quarantine, rows) }}
{% endmacro %}


{% macro kept_runs_sql(runs, quarantine, rows, lines=none) %}
    {#-
        The rows of append_runs_sql. lines_quarantined as record_run counts it, from runs (each
        mirror's previous run) and quarantine; or, given lines (one per row, kept_rows_in_driver.py),
        those, and neither is read: a projection of constants, which Spark computes without a job.
        lag_seconds from the newest source commit to the mirror's commit, which was
        seconds_since_kept before now.
    -#}
    with

    kept as (
        {#- (values ...) as kept (...): the form both Spark and Databend read. -#}
        select * from (values
        {%- for row in rows %}
            ('{{ row.target_table }}', '{{ row.invocation_id }}', '{{ row.raw_table }}', '{{ row.source_table }}',
             timestamp '{{ row.started_at }}', timestamp '{{ row.finished_at }}', cast({{ row.run_seconds }} as double),
             {{ row.chunks }}, {{ row.events_read }}, {{ row.inserted }}, {{ row.updated }}, {{ row.deleted }}, {{ row.skipped }},
             {{ "'" ~ row.offset_snapshot ~ "'" if row.offset_snapshot is not none else 'cast(null as string)' }},
             {{ "timestamp '" ~ row.newest_source_ts ~ "'" if row.newest_source_ts else 'cast(null as timestamp)' }},
             cast({{ row.seconds_since_kept }} as double), '{{ row.maintenance }}'
             {%- for name in cdc_merge.maintenance_count_columns() %}, {{ row[name] }}{% endfor %},
             {{ cdc_merge.string_or_null(row.consistency_group) }}, {{ cdc_merge.double_or_null(row.cut_lag_seconds) }}
             {%- if lines is not none %}, cast({{ lines[loop.index0] if lines[loop.index0] is not none else 'null' }} as bigint){% endif %}){{ ',' if not loop.last }}
        {%- endfor %}
        ) as kept (
            target_table, invocation_id, raw_table, source_table, started_at, finished_at, run_seconds,
            chunks, events_read, rows_inserted, rows_updated, rows_deleted, events_skipped, offset_snapshot,
            newest_source_ts, seconds_since_kept, maintenance, {{ cdc_merge.maintenance_count_columns() | join(', ') }},
            consistency_group, cut_lag_seconds{{ ', lines_quarantined' if lines is not none }}
        )
    ),
    {%- if lines is none %}

    previous as (
        select
            kept.target_table,
            coalesce(max(runs.started_at), cast('1970-01-01 00:00:00' as timestamp)) as previous_start
        from kept
        left join {{ runs }} as runs on kept.target_table = runs.target_table
        group by kept.target_table
    ),

    quarantined as (
        select
            previous.target_table,
            {% if quarantine is not none -%}
            count(quarantine.landed_at)
            {%- else -%}
            cast(null as bigint)
            {%- endif %} as lines
        from previous
        {% if quarantine is not none -%}
        left join {{ quarantine }} as quarantine on quarantine.landed_at > previous.previous_start
        {%- endif %}
        group by previous.target_table
    ),
    {%- endif %}

    final as (
        select
            kept.target_table,
            kept.invocation_id,
            kept.raw_table,
            kept.source_table,
            kept.started_at,
            kept.finished_at,
            kept.run_seconds,
            cast(kept.chunks as bigint) as chunks,
            cast(kept.events_read as bigint) as events_read,
            cast(kept.rows_inserted as bigint) as rows_inserted,
            cast(kept.rows_updated as bigint) as rows_updated,
            cast(kept.rows_deleted as bigint) as rows_deleted,
            cast(kept.events_skipped as bigint) as events_skipped,
            {{ 'kept.lines_quarantined' if lines is not none else 'quarantined.lines' }} as lines_quarantined,
            kept.offset_snapshot,
            kept.newest_source_ts,
            {{ cdc_merge.seconds_since_sql('kept.newest_source_ts') }} - kept.seconds_since_kept as lag_seconds,
            kept.maintenance,
            {%- for name in cdc_merge.maintenance_count_columns() %}
            cast(kept.{{ name }} as bigint) as {{ name }},
            {%- endfor %}
            kept.consistency_group,
            kept.cut_lag_seconds
        from kept
        {%- if lines is none %}
        left join quarantined on kept.target_table = quarantined.target_table
        {%- endif %}
    )

    select * from final
{% endmacro %}


{% macro record_run(offsets, target_relation, cfg, totals, run_started, maintained, offset_snapshot) %}
    {#-
        lag_seconds: from the newest source commit the run applied to the run's end, when the
        mirror commits it; none when the run applied nothing. lines_quarantined: lines the landing
        put in quarantine since the mirror's previous run (a line that cannot be read names no
        table, so every mirror of the raw table counts it). offset_snapshot: the mirror's newest offset.
    -#}
    {% set runs = cdc_merge.runs_relation(offsets) %}
    {% do cdc_merge.upgrade_runs_table(runs) %}
    {% set quarantine = adapter.get_relation(database=none, schema=cfg.raw_relation.schema, identifier='quarantine') %}
    {% set seconds = (modules.datetime.datetime.utcnow() - run_started).total_seconds() %}
    {% set counts = maintained if maintained is not none else {} %}
    {% set newest = "timestamp '" ~ totals.max_source_ts ~ "'" if totals.max_source_ts else 'cast(null as timestamp)' %}
    {#- The figures cdc-run's status endpoint shows; keep_run's rows get there as they are kept. -#}
    {% do adapter.cdc_observe_run(target_relation | string, {
        'source_table': cfg.source_table,
        'finished_at': modules.datetime.datetime.utcnow().strftime('%Y-%m-%d %H:%M:%S.%f'),
        'run_seconds': seconds | round(3),
        'events_read': totals.events_read,
        'inserted': totals.inserted,
        'updated': totals.updated,
        'deleted': totals.deleted,
        'skipped': totals.skipped,
        'newest_source_ts': (totals.max_source_ts | string) if totals.max_source_ts else none,
        'consistency_group': cfg.get('consistency_group'),
        'cut_lag_seconds': cdc_merge.run_cut_lag(cfg, totals),
    }) %}
    {% call statement('record_run') %}
        insert into {{ runs }}
        select
            '{{ target_relation }}' as target_table,
            '{{ invocation_id }}' as invocation_id,
            '{{ cfg.raw_relation }}' as raw_table,
            '{{ cfg.source_table }}' as source_table,
            {{ cdc_merge.seconds_ago_sql(seconds) }} as started_at,
            current_timestamp() as finished_at,
            {{ seconds | round(3) }} as run_seconds,
            {{ totals.chunks }} as chunks,
            {{ totals.events_read }} as events_read,
            {{ totals.inserted }} as rows_inserted,
            {{ totals.updated }} as rows_updated,
            {{ totals.deleted }} as rows_deleted,
            {{ totals.skipped }} as events_skipped,
            {% if quarantine is not none -%}
            (
                select count(*) from {{ quarantine }}
                where landed_at > coalesce(
                    (select max(started_at) from {{ runs }} where target_table = '{{ target_relation }}'),
                    cast('1970-01-01 00:00:00' as timestamp))
            )
            {%- else -%}
            cast(null as bigint)
            {%- endif %} as lines_quarantined,
            {{ "'" ~ offset_snapshot ~ "'" if offset_snapshot is not none else 'cast(null as string)' }} as offset_snapshot,
            {{ newest }} as newest_source_ts,
            {{ cdc_merge.seconds_since_sql(newest) if totals.max_source_ts else 'cast(null as double)' }} as lag_seconds,
            '{{ 'maintained' if maintained is not none else '' }}' as maintenance,
            {%- for name in cdc_merge.maintenance_count_columns() %}
            {{ counts.get(name, 0) }} as {{ name }},
            {%- endfor %}
            {{ cdc_merge.string_or_null(cfg.get('consistency_group')) }} as consistency_group,
            {{ cdc_merge.double_or_null(cdc_merge.run_cut_lag(cfg, totals)) }} as cut_lag_seconds
    {% endcall %}
{% endmacro %}


{% macro trim_runs(runs, target_relation, settings) %}
    {% do cdc_merge.delete_from_shared_table(runs, "delete from " ~ runs ~ " where target_table = '" ~ target_relation ~ "' and finished_at < "
        ~ cdc_merge.timestamp_literal(cdc_merge.seconds_ago_sql(settings.runs_history_days * 86400))) %}
{% endmacro %}
