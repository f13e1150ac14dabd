{#
    What maintenance reads of a table's metadata: its files and snapshots now
    (table_maintenance_state), its snapshot history (snapshot_history_sql), and points in
    time as the engine writes them (seconds_ago_sql, timestamp_literal).
#}

{% macro table_maintenance_state(relation, keep_seconds=0) %}
    {#-
        What the thresholds look at, as numbers: small_data_files (data files compaction would
        rewrite: Iceberg files under 3/4 of its 512 MB target size, Databend blocks under 50 MB),
        data_files, delete_files, snapshots, and of the snapshots that expiry may remove (older
        than keep_seconds, not the current one) how many (expirable_snapshots) and the age of the
        oldest (oldest_expirable_age_seconds). A maintained table is below every threshold however
        big it is and however long it stays idle.
    -#}
    {% set rows = run_query(adapter.dispatch('table_maintenance_state_sql', 'cdc_merge')(relation, keep_seconds)).rows %}
    {% set state = {} %}
    {% for name in ['small_data_files', 'data_files', 'delete_files', 'snapshots', 'expirable_snapshots', 'oldest_expirable_age_seconds'] %}
        {#- No row: a Databend table nothing was ever written to has no snapshot. -#}
        {% set value = rows[0][name] if rows | length else none %}
        {% do state.update({name: (value | int) if value not in [none, '', 'NULL'] else 0}) %}
    {% endfor %}
    {{ return(state) }}
{% endmacro %}

{% macro spark__table_maintenance_state_sql(relation, keep_seconds) %}
    select
        files.small_data_files,
        files.data_files,
        files.delete_files,
        snapshots.snapshots,
        snapshots.expirable_snapshots,
        snapshots.oldest_expirable_age_seconds
    from (
        select
            count_if(content = 0 and file_size_in_bytes < 402653184) as small_data_files,
            count_if(content = 0) as data_files,
            count_if(content != 0) as delete_files
        from {{ relation }}.files
    ) as files
    cross join (
        select
            count(*) as snapshots,
            count_if(history.expirable) as expirable_snapshots,
            coalesce(max(case when history.expirable then unix_timestamp(current_timestamp()) - unix_timestamp(history.committed_at) end), 0)
                as oldest_expirable_age_seconds
        from (
            select
                committed_at,
                committed_at < {{ cdc_merge.seconds_ago_sql(keep_seconds) }}
                and snapshot_id != (select snapshot_id from {{ relation }}.refs where name = 'main') as expirable
            from {{ relation }}.snapshots
        ) as history
    ) as snapshots
{% endmacro %}

{% macro databend__table_maintenance_state_sql(relation, keep_seconds) %}
    {#- Databend rewrites blocks on delete: it has no delete files. -#}
    select
        blocks.small_data_files,
        blocks.data_files,
        0 as delete_files,
        count(*) as snapshots,
        count_if(history.timestamp < {{ cdc_merge.seconds_ago_sql(keep_seconds) }} and history.snapshot_id != current_snapshot.snapshot_id)
            as expirable_snapshots,
        coalesce(max(case when history.timestamp < {{ cdc_merge.seconds_ago_sql(keep_seconds) }} and history.snapshot_id != current_snapshot.snapshot_id
            then to_unix_timestamp(now()) - to_unix_timestamp(history.timestamp) end), 0) as oldest_expirable_age_seconds
    from fuse_snapshot('{{ relation.schema }}', '{{ relation.identifier }}') as history
    cross join ({{ cdc_merge.current_raw_snapshot_sql(relation) }}) as current_snapshot
    cross join (
        select
            count_if(block_size < 52428800) as small_data_files,
            count(*) as data_files
        from fuse_block('{{ relation.schema }}', '{{ relation.identifier }}')
    ) as blocks
    group by blocks.small_data_files, blocks.data_files
{% endmacro %}


{% macro snapshot_history_sql(relation, keep_seconds) %}
    {#- Every snapshot of relation: snapshot_id, parent_id, and recent = 1 if made in the last keep_seconds. -#}
    {{ return(adapter.dispatch('snapshot_history_sql', 'cdc_merge')(relation, keep_seconds)) }}
{% endmacro %}

{% macro spark__snapshot_history_sql(relation, keep_seconds) %}
    select
        cast(snapshot_id as string) as snapshot_id,
        cast(parent_id as string) as parent_id,
        case when committed_at >= {{ cdc_merge.seconds_ago_sql(keep_seconds) }} then 1 else 0 end as recent
    from {{ relation }}.snapshots
{% endmacro %}

{% macro databend__snapshot_history_sql(relation, keep_seconds) %}
    select
        snapshot_id,
        previous_snapshot_id as parent_id,
        case when timestamp >= {{ cdc_merge.seconds_ago_sql(keep_seconds) }} then 1 else 0 end as recent
    from fuse_snapshot('{{ relation.schema }}', '{{ relation.identifier }}')
{% endmacro %}


{% macro seconds_ago_sql(seconds) %}
    {{ return(adapter.dispatch('seconds_ago_sql', 'cdc_merge')(seconds)) }}
{% endmacro %}

{% macro spark__seconds_ago_sql(seconds) -%}
    {#- Whole seconds: timestampadd takes an int, which microseconds of a day overflow. -#}
    timestampadd(SECOND, -{{ seconds | round | int }}, current_timestamp())
{%- endmacro %}

{% macro databend__seconds_ago_sql(seconds) -%}
    subtract_seconds(now(), {{ seconds | round | int }})
{%- endmacro %}


{% macro timestamp_literal(sql) %}
    {#- The value of a timestamp expression, now, as a literal the engine reads back the same (same zone). -#}
    {% set text = run_query('select cast(' ~ sql ~ ' as string) as moment').rows[0]['moment'] %}
    {{ return("timestamp '" ~ text ~ "'") }}
{% endmacro %}
