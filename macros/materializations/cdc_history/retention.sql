{#
    The raw log is append-only until maintenance trims it (events older than a horizon that
    every mirror has applied are deleted). A history built from the start of a trimmed log, or
    a change query over a range it no longer holds, would silently miss what was deleted:
    both fail instead. The trim is seen in the raw table's own history (a snapshot that removed
    rows), and its horizon for one source table is the oldest source_ts the log still holds for it.
#}

{% macro raw_log_trimmed_sql(raw_relation) %}
    {#- One row, column trims: how many of the raw table's snapshots removed rows. -#}
    {{ return(adapter.dispatch('raw_log_trimmed_sql', 'cdc_merge')(raw_relation)) }}
{% endmacro %}

{% macro spark__raw_log_trimmed_sql(raw_relation) %}
    select count(*) as trims
    from {{ raw_relation }}.snapshots
    {#- Not 'replace': compaction (rewrite_data_files) rewrites rows and removes none. #}
    where operation in ('delete', 'overwrite')
{% endmacro %}

{% macro databend__raw_log_trimmed_sql(raw_relation) %}
    {#- Databend keeps no operation per snapshot: a snapshot with fewer rows than its parent removed some. -#}
    select count(*) as trims
    from fuse_snapshot('{{ raw_relation.schema }}', '{{ raw_relation.identifier }}') as snapshot
    join fuse_snapshot('{{ raw_relation.schema }}', '{{ raw_relation.identifier }}') as parent
        on snapshot.previous_snapshot_id = parent.snapshot_id
    where snapshot.row_count < parent.row_count
{% endmacro %}


{% macro raw_log_horizon(raw_relation, source_table) %}
    {#- none when the log was never trimmed; else the oldest source_ts it holds of source_table (a string, or none when it holds none). -#}
    {% if (run_query(cdc_merge.raw_log_trimmed_sql(raw_relation)).rows[0]['trims'] | int) == 0 %}
        {{ return(none) }}
    {% endif %}
    {% set oldest = run_query("select cast(min(source_ts) as string) as oldest from " ~ raw_relation ~ " where table_name = '" ~ source_table ~ "'").rows[0]['oldest'] %}
    {{ return({'oldest': (oldest if oldest not in [none, '', 'NULL'] else none)}) }}
{% endmacro %}
