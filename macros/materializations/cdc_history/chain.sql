{#
    The chain of versions of the keys a batch touches, rebuilt from what the history holds for
    them plus the batch's events, and compared with what it holds (history_changes_sql): rows to
    remove and rows to add. Rebuilding whole chains is what places a late, older event at its
    place and repairs its neighbours' intervals; rows are identified by (_cdc_key, _cdc_seq), so a
    replayed event rebuilds the same rows and nothing is written.

    A version: the events of a key in seq order; an event opens a version when it is the key's
    first, when it deletes a live key or brings a deleted key back, or (not deleted) when
    track_columns is not set or one of those columns differs from the previous event's. A
    later event that opens nothing updates its version's values in place (_cdc_updated_seq); a
    delete of a deleted key opens nothing. The deletes of online snapshot ranges (ranges.sql) are
    found in and rebuilt into their keys' chains here too, as any delete.

    Longer than 300 lines: the chain's CTEs are one statement, and where a step's statement ends
    (history_stages.py) cuts across all of them.
#}

{% macro history_columns() %}
    {{ return(['valid_from', 'valid_to', 'is_current', 'is_deleted', '_cdc_key', '_cdc_seq', '_cdc_source_ts', '_cdc_updated_seq',
        '_cdc_unsent_columns']) }}
{% endmacro %}


{% macro history_scratch_relation(target_relation) %}
    {{ return(target_relation.incorporate(path={'identifier': target_relation.identifier ~ '__cdc_history_changes'})) }}
{% endmacro %}


{% macro history_changes_sql(target_relation, deletes_relation, model_sql, columns, cfg, unsent_columns=[], range_deletes_sql=none,
    chunk_ranges=none, kept={}, select_from='chain_final') %}
    {#-
        Rows to remove from and add to the history (_cdc_change 'remove' / 'add') for the keys of
        the batch the model's SQL reads. deletes_relation: none with deletes='soft'. unsent_columns:
        the columns whose unchanged TOAST values are filled in (unsent.sql). range_deletes_sql: instead
        of the batch, the delete events of online snapshot ranges (ranges.sql), whose keys are rebuilt.
        chunk_ranges: the chunk's ranges (history_chunk_ranges), whose deletes of the batch's keys are
        found in their chains; with deletes='hard' those deletes are rows 'close' too, for the deletes table.
        kept: {CTE name: relation} of steps computed beforehand (write.sql's create_history_chain_changes), read instead of computed;
        select_from: the CTE whose rows it selects.
    -#}
    {%- set history_row = columns + cdc_merge.history_columns() -%}
    with

    chain_model_events as (
        {%- if 'chain_model_events' in kept %}
        select * from {{ kept['chain_model_events'] }}
        {%- else %}
        select * from ({{ model_sql }}) as model_output
        {%- if range_deletes_sql is not none %}
        where false
        {%- endif %}
        {%- endif %}
    ),

    {%- if range_deletes_sql is not none %}

    chain_range_deletes as (
        {%- if 'chain_range_deletes' in kept %}
        select * from {{ kept['chain_range_deletes'] }}
        {%- else %}
        {{ range_deletes_sql }}
        {%- endif %}
    ),
    {%- endif %}

    chain_batch_keys as (
        select distinct _cdc_key
        from {{ 'chain_model_events' if range_deletes_sql is none else 'chain_range_deletes' }}
    ),

    chain_stored as (
        {%- if 'chain_stored' in kept %}
        select * from {{ kept['chain_stored'] }}
        {%- else %}
        select
            {{ history_row | join(',\n            ') }}
        from {{ target_relation }}
        where _cdc_key in (select _cdc_key from chain_batch_keys)
        {%- endif %}
    )
    {#- Spark analyzes every CTE of a statement, read or not: a step ends with the CTE it computes. #}
    {%- if select_from in ['chain_model_events', 'chain_range_deletes', 'chain_stored'] %}

    select * from {{ select_from }}
    {%- else %},

    {#- Events as they were recorded: a version's opening event, its last event in place, the deletes. #}
    chain_events as (
        select
            {%- for column in columns %}
            {{ column }},
            {%- endfor %}
            {{- cdc_merge.unsent_flags_sql(unsent_columns, 'batch') }}
            _cdc_key,
            _cdc_action = 'delete' as _cdc_is_delete,
            _cdc_seq,
            _cdc_source_ts,
            1 as _cdc_origin,
            cast(null as string) as _cdc_kept_unsent
        from chain_model_events
        union all
        select
            {%- for column in columns %}
            {{ column }},
            {%- endfor %}
            {{- cdc_merge.unsent_flags_sql(unsent_columns, 'stored') }}
            _cdc_key,
            is_deleted as _cdc_is_delete,
            _cdc_seq,
            _cdc_source_ts,
            0 as _cdc_origin,
            cast(null as string) as _cdc_kept_unsent
        from chain_stored
        union all
        {#- Its values are those its newest event had, filled in from the version's own earlier events too, which the
            chain no longer holds: they are kept, not filled in again (unsent.sql), and so are the columns it names. #}
        select
            {%- for column in columns %}
            {{ column }},
            {%- endfor %}
            {{- cdc_merge.unsent_flags_sql(unsent_columns, 'delete') }}
            _cdc_key,
            is_deleted as _cdc_is_delete,
            _cdc_updated_seq as _cdc_seq,
            cast(null as timestamp) as _cdc_source_ts,
            0 as _cdc_origin,
            _cdc_unsent_columns as _cdc_kept_unsent
        from chain_stored
        where _cdc_updated_seq != _cdc_seq
        {%- if range_deletes_sql is not none %}
        union all
        select
            {%- for column in columns %}
            {{ column }},
            {%- endfor %}
            {{- cdc_merge.unsent_flags_sql(unsent_columns, 'delete') }}
            _cdc_key,
            true as _cdc_is_delete,
            _cdc_seq,
            _cdc_source_ts,
            1 as _cdc_origin,
            cast(null as string) as _cdc_kept_unsent
        from chain_range_deletes
        {%- endif %}
        {%- if deletes_relation is not none %}
        union all
        select
            {%- for column in columns %}
            null as {{ column }},
            {%- endfor %}
            {{- cdc_merge.unsent_flags_sql(unsent_columns, 'delete') }}
            _cdc_key,
            true as _cdc_is_delete,
            _cdc_seq,
            _cdc_source_ts,
            0 as _cdc_origin,
            cast(null as string) as _cdc_kept_unsent
        from {{ deletes_relation }}
        where _cdc_key in (select _cdc_key from chain_batch_keys)
        {%- endif %}
    ),

    chain_unique_events as (
        select *
        from (
            select
                *,
                row_number() over (partition by _cdc_key, _cdc_seq order by _cdc_origin) as _cdc_copy
            from chain_events
        ) as copies
        where _cdc_copy = 1
    ),

    {%- if 'chain_filled' in kept %}

    chain_filled as (
        select * from {{ kept['chain_filled'] }}
    )
    {%- else %}

    {{ cdc_merge.unsent_filled_ctes(columns, unsent_columns, 'chain_unique_events') }}
    {%- endif %}
    {%- if chunk_ranges is not none %},

    {{ cdc_merge.history_chain_range_deletes_ctes(chunk_ranges, columns, 'chain_filled', kept) }}
    {%- endif %}
    {%- if select_from in ['chain_filled', 'chain_range_closed'] %}

    select * from {{ select_from }}
    {%- else %},

    chain_previous as (
        select
            *,
            lag(_cdc_is_delete) over (partition by _cdc_key order by _cdc_seq) as _cdc_previous_is_delete
            {%- for column in cfg.track_columns or [] %},
            lag({{ column }}) over (partition by _cdc_key order by _cdc_seq) as _cdc_previous_{{ column }}
            {%- endfor %}
        from {{ 'chain_filled' if chunk_ranges is none else 'chain_ranged' }}
    ),

    chain_opened as (
        select
            *,
            case
                when _cdc_previous_is_delete is null then 1
                when _cdc_is_delete != _cdc_previous_is_delete then 1
                when _cdc_is_delete then 0
                {%- if cfg.track_columns %}
                when {% for column in cfg.track_columns %}{{ cdc_merge.differs_sql(column, '_cdc_previous_' ~ column) }}{{ ' or ' if not loop.last }}{% endfor %} then 1
                else 0
                {%- else %}
                else 1
                {%- endif %}
            end as _cdc_opens
        from chain_previous
    ),

    chain_numbered as (
        select
            *,
            sum(_cdc_opens) over (
                partition by _cdc_key order by _cdc_seq rows between unbounded preceding and current row
            ) as _cdc_version
        from chain_opened
    ),

    chain_in_version as (
        select
            *,
            first_value(_cdc_seq) over (partition by _cdc_key, _cdc_version order by _cdc_seq) as _cdc_open_seq,
            first_value(_cdc_source_ts) over (partition by _cdc_key, _cdc_version order by _cdc_seq) as _cdc_open_ts,
            row_number() over (partition by _cdc_key, _cdc_version order by _cdc_seq desc) as _cdc_newest
        from chain_numbered
    ),

    {#- Source clocks are not an order (docs/ordering.md): valid_from never goes back along the chain. #}
    chain_versions as (
        select
            *,
            max(_cdc_open_ts) over (
                partition by _cdc_key order by _cdc_open_seq rows between unbounded preceding and current row
            ) as _cdc_valid_from
        from chain_in_version
        where _cdc_newest = 1
    ),

    chain_chained as (
        select
            *,
            lead(_cdc_valid_from) over (partition by _cdc_key order by _cdc_open_seq) as _cdc_valid_to,
            lead(_cdc_open_seq) over (partition by _cdc_key order by _cdc_open_seq) as _cdc_next_seq
        from chain_versions
    ),

    chain_computed as (
        {%- if 'chain_computed' in kept %}
        select * from {{ kept['chain_computed'] }}
        {%- else %}
        select
            {%- for column in columns %}
            {{ column }},
            {%- endfor %}
            _cdc_valid_from as valid_from,
            _cdc_valid_to as valid_to,
            _cdc_next_seq is null as is_current,
            _cdc_is_delete as is_deleted,
            _cdc_key,
            _cdc_open_seq as _cdc_seq,
            _cdc_open_ts as _cdc_source_ts,
            _cdc_seq as _cdc_updated_seq,
            _cdc_unsent_columns
        from chain_chained
        {%- if deletes_relation is not none %}
        where not _cdc_is_delete
        {%- endif %}
        {%- endif %}
    )
    {%- if select_from == 'chain_computed' %}

    select * from chain_computed
    {%- else %},

    {#- Not EXCEPT: Databend's EXCEPT does not take two nulls as equal. #}
    chain_unchanged as (
        select
            chain_computed._cdc_key,
            chain_computed._cdc_seq
        from chain_computed
        join chain_stored
            on chain_computed._cdc_key = chain_stored._cdc_key and chain_computed._cdc_seq = chain_stored._cdc_seq
        where not (
            {%- for column in history_row if column not in ['_cdc_key', '_cdc_seq'] %}
            {{ cdc_merge.differs_sql('chain_computed.' ~ column, 'chain_stored.' ~ column) }}{{ ' or' if not loop.last }}
            {%- endfor %}
        )
    ),

    chain_added as (
        select chain_computed.*
        from chain_computed
        left join chain_unchanged
            on chain_computed._cdc_key = chain_unchanged._cdc_key and chain_computed._cdc_seq = chain_unchanged._cdc_seq
        where chain_unchanged._cdc_key is null
    ),

    chain_removed as (
        select chain_stored.*
        from chain_stored
        left join chain_unchanged
            on chain_stored._cdc_key = chain_unchanged._cdc_key and chain_stored._cdc_seq = chain_unchanged._cdc_seq
        where chain_unchanged._cdc_key is null
    ),

    chain_final as (
        select 'add' as _cdc_change, chain_added.* from chain_added
        union all
        select 'remove' as _cdc_change, chain_removed.* from chain_removed
        {%- if chunk_ranges is not none and deletes_relation is not none %}
        union all
        {{ cdc_merge.history_range_closed_rows_sql(columns) }}
        {%- endif %}
    )

    select * from chain_final
    {%- endif %}
    {%- endif %}
    {%- endif %}
{% endmacro %}
