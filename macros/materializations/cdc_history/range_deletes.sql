{#
    The keys of a chunk's online snapshot ranges that no batch of the chunk touched, closed after its
    batches (ranges.sql says how a history applies ranges): one delete event per key whose current
    version is older than the low watermark of the range that holds it, written to the deletes table
    (deletes='hard') and through the history's changes (chain.sql, write.sql).
#}

{% macro history_range_deletes_sql(target_relation, chunk_ranges, columns) %}
    {#-
        After the chunk's batches, one delete event per key the ranges close whose current version (open,
        not deleted) holds no event as new as the low watermark: (columns, _cdc_key, _cdc_seq,
        _cdc_source_ts). The batches closed the chunk's keys with events already; these are the range's
        keys the chunk did not touch. A key in more than one range is closed by the first (in seq order).
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
            {%- for ladder in chunk_ranges.after_ladders %}
            select
                {%- for column in columns %}
                {{ cdc_merge.history_range_value_sql(column, column, '_cdc_updated_seq', '_cdc_seq', chunk_ranges.get('added_defaults')) }}
                    as {{ column }},
                {%- endfor %}
                _cdc_key,
                _cdc_seq,
                _cdc_source_ts,
                _cdc_range
            from (
                select
                    {%- for column in columns %}
                    {{ column }},
                    {%- endfor %}
                    _cdc_key,
                    _cdc_updated_seq,
                    {{ cdc_merge.history_ladder_sql(ladder, 'low', chunk_ranges) }} as _cdc_seq,
                    {{ cdc_merge.history_ladder_sql(ladder, 'time', chunk_ranges) }} as _cdc_source_ts,
                    {{ cdc_merge.history_ladder_sql(ladder, 'position', chunk_ranges) }} as _cdc_range
                from {{ target_relation }}
                where
                    is_current
                    and not is_deleted
                    and {{ cdc_merge.key_range_predicate(ladder.hull, chunk_ranges.column_types) }}
            ) as in_ladder
            where _cdc_updated_seq < _cdc_seq
            {{ 'union all' if not loop.last }}
            {%- endfor %}
        ) as in_ranges
    ) as closed
    where _cdc_first = 1
{% endmacro %}


{% macro apply_history_ranges(target_relation, deletes_relation, scratch, chunk_ranges, model_sql, columns, cfg) %}
    {#- The chunk's ranges (history_chunk_ranges), after its batches, for the keys they did not close; returns {'added': n, 'removed': n} rows. -#}
    {% if chunk_ranges is none or not chunk_ranges.after %}
        {{ return({'added': 0, 'removed': 0}) }}
    {% endif %}
    {#- Each of the statements below reads them: on Spark they are computed once, the history scanned once for them. -#}
    {% set kept = adapter.dispatch('keep_history_range_deletes', 'cdc_merge')(scratch,
        cdc_merge.history_range_deletes_sql(target_relation, chunk_ranges, columns)) %}
    {% set range_deletes_sql = kept.sql %}
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
        {% do cdc_merge.drop_history_range_deletes(kept) %}
        {{ return({'added': 0, 'removed': 0}) }}
    {% endif %}
    {% set unsent_columns = columns | select('in', (facts['stored_unsent'] or '').split(',')) | list %}
    {% if deletes_relation is not none %}
        {% do run_query(cdc_merge.insert_range_deletes_sql(deletes_relation, range_deletes_sql)) %}
    {% endif %}
    {% set created = cdc_merge.create_history_chain_changes(scratch, target_relation, deletes_relation, model_sql,
        columns, cfg, unsent_columns, range_deletes_sql) %}
    {% if created.added + created.removed > 0 %}
        {% do adapter.dispatch('write_history_changes', 'cdc_merge')(target_relation, created, columns) %}
    {% endif %}
    {% do cdc_merge.drop_history_changes(created) %}
    {% do cdc_merge.drop_history_range_deletes(kept) %}
    {{ log("cdc_history " ~ target_relation ~ ": " ~ facts['closed'] ~ " current versions of rows the source no longer has closed"
        ~ " (" ~ chunk_ranges.after_cause ~ ")", info=True) }}
    {{ return({'added': created.added, 'removed': created.removed}) }}
{% endmacro %}


{% macro spark__keep_history_range_deletes(scratch, range_deletes_sql) %}
    {#- {'sql': what reads the ranges' deletes, 'view': the checkpoint holding them, or none where the session is elsewhere}. -#}
    {% set view = scratch.identifier ~ '__range_deletes' %}
    {% if adapter.create_checkpoint_view(view, range_deletes_sql) is none %}
        {{ return({'sql': range_deletes_sql, 'view': none}) }}
    {% endif %}
    {{ return({'sql': 'select * from ' ~ view, 'view': view}) }}
{% endmacro %}

{% macro databend__keep_history_range_deletes(scratch, range_deletes_sql) %}
    {{ return({'sql': range_deletes_sql, 'view': none}) }}
{% endmacro %}

{% macro drop_history_range_deletes(kept) %}
    {% if kept.view is not none %}
        {% do adapter.drop_checkpoint_view(kept.view) %}
    {% endif %}
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
