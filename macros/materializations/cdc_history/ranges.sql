{#
    Key ranges an online snapshot page read completely (docs/online_snapshots.md), applied to a
    history as cdc_merge's snapshot_ranges.sql applies them to a mirror: after a chunk's batches,
    each key in a range of the chunk whose current version (open, not deleted) holds no event as new
    as the page's low watermark is a row the source no longer has, whose delete the log never carried
    (python_jobs/apply/snapshot_ranges.py says why). It gets that delete: an event at the low
    watermark, with the range record's source time and, for deletes='soft', the version's values (a
    mirror's soft delete keeps them too). With deletes='hard' it goes to the deletes table first, as
    a delete event of the log does; then the keys' chains are rebuilt with it (chain.sql), which
    closes the version. So an older event arriving later is placed before the delete and opens
    nothing current, and a replay finds no current version older than the watermark: nothing written.
    Keys are compared in the range's own key order (cdc_merge's key_range_predicate).
#}

{% macro history_range_deletes_sql(target_relation, ranges, times, columns, column_types) %}
    {#-
        One delete event per key the ranges close: (columns, _cdc_key, _cdc_seq, _cdc_source_ts). A key
        in more than one range is closed by the first (in seq order): the later ones find it deleted.
        times: {range seq: its source time as text, or none}.
    -#}
    select
        {%- for column in columns %}
        {{ column }},
        {%- endfor %}
        _cdc_key,
        _cdc_seq,
        _cdc_source_ts
    from (
        select
            *,
            row_number() over (partition by _cdc_key order by _cdc_range) as _cdc_first
        from (
            {%- for range in ranges %}
            select
                {%- for column in columns %}
                {{ column }},
                {%- endfor %}
                _cdc_key,
                '{{ range.low }}' as _cdc_seq,
                {%- set time = times.get(range.seq) %}
                {%- if time %}
                cast('{{ time }}' as timestamp) as _cdc_source_ts,
                {%- else %}
                cast(null as timestamp) as _cdc_source_ts,
                {%- endif %}
                {{ loop.index }} as _cdc_range
            from {{ target_relation }}
            where
                is_current
                and not is_deleted
                and _cdc_updated_seq < '{{ range.low }}'
                and {{ cdc_merge.key_range_predicate(range, column_types) }}
            {{ 'union all' if not loop.last }}
            {%- endfor %}
        ) as in_ranges
    ) as closed
    where _cdc_first = 1
{% endmacro %}


{% macro apply_history_ranges(target_relation, deletes_relation, scratch, changes_view, model_sql, columns, cfg) %}
    {#- The ranges of the chunk in changes_view, after its batches; returns {'added': n, 'removed': n} rows. -#}
    {% set found = run_query(adapter.dispatch('range_events_sql', 'cdc_merge')(changes_view, cfg.source_table, with_time=true)).rows %}
    {% if not found | length %}
        {{ return({'added': 0, 'removed': 0}) }}
    {% endif %}
    {% set events = [] %}
    {% set times = {} %}
    {% for row in found %}
        {% do events.append([row[0], row[1]]) %}
        {% set seq = row[0] | string %}
        {% do times.update({seq: row[2]}) %}
    {% endfor %}
    {% set ranges = adapter.cdc_snapshot_ranges(events, cfg.unique_key) %}
    {% if not ranges %}
        {{ return({'added': 0, 'removed': 0}) }}
    {% endif %}
    {% set column_types = {} %}
    {% for name, data_type in cdc_merge.relation_column_types(target_relation) %}
        {% do column_types.update({name: data_type}) %}
    {% endfor %}
    {% set range_deletes_sql = cdc_merge.history_range_deletes_sql(target_relation, ranges, times, columns, column_types) %}
    {#- How many keys close, and the columns their stored rows were filled in (unsent.sql), which the rebuild keeps. -#}
    {% set facts_sql %}
        select
            count(*) as closed,
            (
                select {{ cdc_merge.distinct_texts_sql('_cdc_unsent_columns') }}
                from {{ target_relation }}
                where
                    _cdc_unsent_columns is not null
                    and _cdc_key in (select _cdc_key from ({{ range_deletes_sql }}) as keys_closed)
            ) as stored_unsent
        from ({{ range_deletes_sql }}) as range_deletes
    {% endset %}
    {% set facts = run_query(facts_sql).rows[0] %}
    {% if (facts['closed'] | int) == 0 %}
        {{ return({'added': 0, 'removed': 0}) }}
    {% endif %}
    {% set unsent_columns = columns | select('in', (facts['stored_unsent'] or '').split(',')) | list %}
    {% if deletes_relation is not none %}
        {% do run_query(cdc_merge.insert_range_deletes_sql(deletes_relation, range_deletes_sql)) %}
    {% endif %}
    {% set changes_sql = cdc_merge.history_changes_sql(target_relation, deletes_relation, model_sql, columns, cfg, unsent_columns,
        range_deletes_sql) %}
    {% set created = cdc_merge.create_history_changes(scratch, changes_sql) %}
    {% if created.added + created.removed > 0 %}
        {% do adapter.dispatch('write_history_changes', 'cdc_merge')(target_relation, created, columns) %}
    {% endif %}
    {% do cdc_merge.drop_history_changes(created) %}
    {{ log("cdc_history " ~ target_relation ~ ": " ~ facts['closed'] ~ " current versions of rows the source no longer has closed"
        ~ " (online snapshot ranges)", info=True) }}
    {{ return({'added': created.added, 'removed': created.removed}) }}
{% endmacro %}


{% macro insert_range_deletes_sql(deletes_relation, range_deletes_sql) %}
    {#- The ranges' deletes the deletes table does not hold yet (a run that died after this statement inserts none again). -#}
    insert into {{ deletes_relation }}
    select
        range_deletes._cdc_key,
        range_deletes._cdc_seq,
        range_deletes._cdc_source_ts
    from ({{ range_deletes_sql }}) as range_deletes
    where not exists (
        select 1
        from {{ deletes_relation }} as stored
        where stored._cdc_key = range_deletes._cdc_key and stored._cdc_seq = range_deletes._cdc_seq
    )
{% endmacro %}
