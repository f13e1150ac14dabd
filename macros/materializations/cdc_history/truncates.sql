{#
    Truncates of the source table in a history (python_jobs/apply/history_closes.py): each is a range
    over every key at its own position (ranges.sql closes the keys), and once applied it is kept in
    cdc_merge_truncates (target_table = the history), as a mirror keeps its watermark, so that an
    older event of a key landing after it is closed by it too. A history built again forgets them
    (cdc_merge's forget_truncates) and finds them in the log again.
#}

{% macro history_stored_truncates(target_relation, cfg) %}
    {#- [seq, source time as text] of the truncates the history applied (cdc_merge_truncates, as a mirror's watermark). -#}
    {% set relation = cdc_merge.truncates_relation(cfg) %}
    {% if load_relation(relation) is none %}
        {{ return([]) }}
    {% endif %}
    {% set rows = run_query("select truncate_seq, cast(truncate_source_ts as string) as truncate_source_ts from " ~ relation
        ~ " where target_table = '" ~ target_relation ~ "'").rows %}
    {{ return(rows | map('list') | list) }}
{% endmacro %}


{% macro record_history_truncates(target_relation, chunk_ranges, cfg) %}
    {#- The chunk's truncates, once its versions are closed by them: an older event landing later is closed by them too. -#}
    {% if chunk_ranges is none or not chunk_ranges.record %}
        {{ return(none) }}
    {% endif %}
    {% set relation = cdc_merge.truncates_relation(cfg) %}
    {% do run_query(cdc_merge.create_truncates_table(relation)) %}
    {% set record_sql %}
        insert into {{ relation }}
        {%- for truncate in chunk_ranges.record %}
        select
            '{{ target_relation }}' as target_table,
            '{{ truncate.seq }}' as truncate_seq,
            {{ cdc_merge.history_range_time_sql(chunk_ranges.times, truncate) }} as truncate_source_ts,
            cast(null as bigint) as rows_truncated,
            current_timestamp() as committed_at,
            '{{ invocation_id }}' as invocation_id
        {{ 'union all' if not loop.last }}
        {%- endfor %}
    {% endset %}
    {% do run_query(record_sql) %}
    {{ log("cdc_history " ~ target_relation ~ ": " ~ chunk_ranges.record | length ~ " truncate(s) of " ~ cfg.source_table
        ~ " closed every older version", info=True) }}
{% endmacro %}
