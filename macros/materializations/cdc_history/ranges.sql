{#
    Key ranges an online snapshot page read completely (docs/online_snapshots.md), applied to a
    history as cdc_merge's snapshot_ranges.sql applies them to a mirror: a key in a range whose
    newest event up to the range record is live and older than the page's low watermark (the page
    did not read it, and it did not change between the watermarks) is a row the source no longer
    had, whose delete the log never carried (python_jobs/apply/snapshot_ranges.py says why). It gets
    that delete: an event at the low watermark, with the range record's source time and, for
    deletes='soft', the closed version's values (a mirror's soft delete keeps them too). With
    deletes='hard' it goes to the deletes table, as a delete event of the log does.
    The chunk's keys with events are closed in their batch's chain (history_chain_range_deletes_ctes,
    from every event of the key, so a key that comes back later in the chunk, by an insert or a later
    page's read, keeps its delete in between); the range's other keys after the chunk's batches, from
    their current version (apply_history_ranges, range_deletes.sql), and their chains are rebuilt with it (chain.sql).
    So an older event arriving later is placed before the delete and opens nothing current, and a
    replay finds the delete and writes nothing. Keys are compared in the range's own key order
    (cdc_merge's key_range_predicate). A truncate of the table is a range over every key whose low
    watermark is the truncate itself (truncates.sql).
#}

{% macro history_chunk_ranges(target_relation, changes_view, cfg, stored_truncates) %}
    {#- The chunk's ranges and truncates, read once (python_jobs/apply/history_closes.py): {'ranges': [...] (seq order),
        'after': the chunk's own, 'times': {seq: source time as text}, 'record': its truncates to record, 'column_types'},
        or none. stored_truncates: [seq, source time] of the truncates the history applied before (history_stored_truncates). -#}
    {% set found = run_query(cdc_merge.history_close_events_sql(changes_view, cfg.source_table)).rows | map('list') | list %}
    {% set closes = adapter.cdc_history_closes(found, stored_truncates, cfg.unique_key, model.name) %}
    {% if not closes %}
        {{ return(none) }}
    {% endif %}
    {% set column_types = {} %}
    {% for name, data_type in cdc_merge.relation_column_types(target_relation) %}
        {% do column_types.update({name: data_type}) %}
    {% endfor %}
    {#- A key column the model types otherwise than the source's pages order it: refused before any version is closed. -#}
    {% set problem = adapter.cdc_snapshot_range_problem(closes.ranges, column_types, model.name) %}
    {% if problem %}
        {% do exceptions.raise_compiler_error(problem) %}
    {% endif %}
    {#-
        The ranges as ladders of consecutive pages, each searched by its upper bounds (python_jobs/apply/range_search.py):
        one select a ladder where there was one a range (a resnapshot's 100 ranges in one statement kept Spark's planner
        busy for minutes).
    -#}
    {% do closes.update({'column_types': column_types, 'ladders': adapter.cdc_range_ladders(closes.ranges, column_types),
        'after_ladders': adapter.cdc_range_ladders(closes.after, column_types)}) %}
    {{ return(closes) }}
{% endmacro %}


{% macro history_close_events_sql(changes_view, source_table) %}
    {{ return(adapter.dispatch('history_close_events_sql', 'cdc_merge')(changes_view, source_table)) }}
{% endmacro %}

{% macro spark__history_close_events_sql(changes_view, source_table) %}
    {#- The chunk's range records and truncates of the table: seq, action, raw_data as text, source time as text. -#}
    select
        seq,
        action,
        raw_data,
        cast(source_ts as string) as source_ts
    from {{ changes_view }}
    where _change_type = 'INSERT' and table_name = '{{ source_table }}' and action in ('range', 'truncate')
{% endmacro %}

{% macro databend__history_close_events_sql(changes_view, source_table) %}
    select
        seq,
        action,
        raw_data::string as raw_data,
        cast(source_ts as string) as source_ts
    from {{ changes_view }}
    where _change_type = 'INSERT' and table_name = '{{ source_table }}' and action in ('range', 'truncate')
{% endmacro %}


{% macro history_range_time_sql(times, range) -%}
    {%- set time = times.get(range.seq) -%}
    {%- if time -%}
    cast('{{ time }}' as timestamp)
    {%- else -%}
    cast(null as timestamp)
    {%- endif -%}
{%- endmacro %}


{% macro history_chain_range_deletes_ctes(chunk_ranges, columns, events_cte, kept={}) %}
    {#-
        chain_range_next, chain_range_candidates, chain_range_closed and chain_ranged over events_cte
        (chain.sql's chain_filled: every event of the batch's keys, stored and new): per range, each key
        whose newest event at or before the range record
        is live, older than the low watermark and in the range gets a delete at the low watermark, with that
        event's values. Ranges that find the same newest event close the key once, at the first: the later
        find it deleted. chain_ranged: the events with those deletes (_cdc_origin 2: not stored yet). A key
        whose stored version (chain_stored) was updated in place from before the low watermark to after the
        range record is left open: an event between the watermarks that it took is not kept.
        kept: as history_changes_sql's; chain_range_closed read from there where it was computed beforehand.
    -#}
    {#- A truncate's stored deletes are found again from the events before them: a late event placed before one gives
        its values (soft deletes), or a late delete closes the key first and the truncate closes nothing. #}
    chain_range_events as (
        select * from {{ events_cte }}
        {%- if chunk_ranges.truncates %}
        where not (_cdc_is_delete and _cdc_seq in ('{{ chunk_ranges.truncates | join("', '") }}'))
        {%- endif %}
    ),

    chain_range_next as (
        select
            *,
            lead(_cdc_seq) over (partition by _cdc_key order by _cdc_seq) as _cdc_next_seq
        from chain_range_events
    ),

    {#-
        One window for every range: the newest event at or before a range record is the one whose next event is after it.
        A key of a ladder's hull is in one of its ranges, whose low watermark, seq and time the search finds.
    #}
    chain_range_candidates as (
        {%- for ladder in chunk_ranges.ladders %}
        select
            {%- for column in columns %}
            {{ cdc_merge.history_range_value_sql(column, 'before_range.' ~ column, 'before_range._cdc_closed_seq',
                'before_range._cdc_range_low', chunk_ranges.get('added_defaults')) }} as {{ column }},
            {%- endfor %}
            before_range._cdc_key,
            before_range._cdc_closed_seq,
            before_range._cdc_range_low as _cdc_seq,
            before_range._cdc_source_ts
        from (
            select
                {%- for column in columns %}
                {{ column }},
                {%- endfor %}
                _cdc_key,
                _cdc_is_delete,
                _cdc_next_seq,
                _cdc_seq as _cdc_closed_seq,
                {{ cdc_merge.history_ladder_sql(ladder, 'low', chunk_ranges) }} as _cdc_range_low,
                {{ cdc_merge.history_ladder_sql(ladder, 'seq', chunk_ranges) }} as _cdc_range_seq,
                {{ cdc_merge.history_ladder_sql(ladder, 'time', chunk_ranges) }} as _cdc_source_ts
            from chain_range_next
            where {{ cdc_merge.key_range_predicate(ladder.hull, chunk_ranges.column_types) }}
        ) as before_range
        {#- A stored version that took events in place across the range keeps only its last: one between the watermarks may be
            gone. A truncate has no such window: its key's later event opens a version after the delete. A join, not a
            correlated not exists: Databend's planner does not find a subquery's outer columns computed in a derived table. #}
        {%- set spanned = not ladder.ranges[0].get('truncate') %}
        {%- if spanned %}
        left join chain_stored as spanning
            on
                spanning._cdc_key = before_range._cdc_key
                and spanning._cdc_seq < before_range._cdc_range_low
                and spanning._cdc_updated_seq > before_range._cdc_range_seq
        {%- endif %}
        where
            not before_range._cdc_is_delete
            and before_range._cdc_closed_seq < before_range._cdc_range_low
            and (before_range._cdc_next_seq is null or before_range._cdc_next_seq > before_range._cdc_range_seq)
            {%- if spanned %}
            and spanning._cdc_key is null
            {%- endif %}
        {{ 'union all' if not loop.last }}
        {%- endfor %}
    ),

    chain_range_closed as (
        {%- if 'chain_range_closed' in kept %}
        select * from {{ kept['chain_range_closed'] }}
        {%- else %}
        select *
        from (
            select
                *,
                row_number() over (partition by _cdc_key, _cdc_closed_seq order by _cdc_seq) as _cdc_first
            from chain_range_candidates
        ) as candidates
        where _cdc_first = 1
        {%- endif %}
    ),

    chain_ranged as (
        select * from chain_range_events
        union all
        select
            {%- for column in columns %}
            {{ column }},
            {%- endfor %}
            _cdc_key,
            true as _cdc_is_delete,
            _cdc_seq,
            _cdc_source_ts,
            2 as _cdc_origin,
            cast(null as string) as _cdc_unsent_columns
        from chain_range_closed
    )
{%- endmacro %}


{% macro history_range_closed_rows_sql(columns) %}
    {#- deletes='hard': chain_range_closed as rows 'close' of history_changes_sql (the deletes table's columns are what is read). -#}
    select
        'close' as _cdc_change,
        {%- for column in columns %}
        {{ column }},
        {%- endfor %}
        cast(null as timestamp) as valid_from,
        cast(null as timestamp) as valid_to,
        false as is_current,
        true as is_deleted,
        _cdc_key,
        _cdc_seq,
        _cdc_source_ts,
        _cdc_seq as _cdc_updated_seq,
        cast(null as string) as _cdc_unsent_columns
    from chain_range_closed
{% endmacro %}


{% macro history_ladder_sql(ladder, value, chunk_ranges) %}
    {#- value ('low', 'seq', 'time': the range record's source time, or 'position': the range's place in the chunk's, in seq order)
        of the ladder's range that holds a row's key (range_search.py). -#}
    {% set leaves = [] %}
    {% for range in ladder.ranges %}
        {% if value == 'time' %}
            {% do leaves.append(cdc_merge.history_range_time_sql(chunk_ranges.times, range)) %}
        {% elif value == 'position' %}
            {% do leaves.append(ladder.first + loop.index0) %}
        {% else %}
            {% do leaves.append("'" ~ range[value] ~ "'") %}
        {% endif %}
    {% endfor %}
    {{ return(cdc_merge.range_search_sql(ladder.tree, ladder.ranges, leaves, chunk_ranges.column_types)) }}
{% endmacro %}
