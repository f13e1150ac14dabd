{#
    Unchanged Postgres TOAST values: an update that left one unchanged does not send it (the
    event holds Debezium's placeholder, named in its _cdc_unavailable). Its version takes the
    value of the key's event before it that sent one (a key first seen in such an update: null,
    as its cdc_merge mirror holds). The history keeps, per row, the columns so filled
    (_cdc_unsent_columns, ',a,b,'; null when it sent them all), so that a late event placed before
    the row fills it again.
    Only the columns the batch or its keys' stored rows name are filled: a batch without
    placeholders rebuilds its chains as before.
#}

{% macro history_batch_facts(target_relation, batch_view, model_sql, columns) %}
    {#-
        One query a bucket: its events, their deletes, their newest source time, and the model columns to fill
        in its chains (unsent_columns, often none): those the model's events did not send, and
        those a stored row of the batch's keys was filled in (a late event before it fills it again).
        Stored rows that sent every value hold null, which Iceberg's column statistics skip.
    -#}
    {% set facts_sql %}
        select
            count(*) as events,
            coalesce(cast(max(_cdc_source_ts) as string), '') as max_source_ts,
            (select count(*) from {{ batch_view }} where _cdc_action = 'delete') as deletes,
            {{ cdc_merge.distinct_texts_sql(
                'case when ' ~ cdc_merge.any_unavailable_sql('_cdc_unavailable') ~ ' then '
                ~ cdc_merge.unavailable_text_sql('_cdc_unavailable') ~ ' end') }} as batch_unsent,
            (
                select {{ cdc_merge.distinct_texts_sql('_cdc_unsent_columns') }}
                from {{ target_relation }}
                where
                    _cdc_unsent_columns is not null
                    and _cdc_key in (select _cdc_key from {{ batch_view }})
            ) as stored_unsent
        from ({{ model_sql }}) as model_output
    {% endset %}
    {% set row = run_query(facts_sql).rows[0] %}
    {% set named = ((row['batch_unsent'] or '') ~ (row['stored_unsent'] or '')).split(',') %}
    {{ return({'events': row['events'] | int, 'deletes': row['deletes'] | int, 'max_source_ts': row['max_source_ts'],
               'unsent_columns': columns | select('in', named) | list}) }}
{% endmacro %}


{% macro distinct_texts_sql(expression) %}
    {#- The distinct non-null texts of expression, run together (each is ',a,b,'). -#}
    {{ return(adapter.dispatch('distinct_texts_sql', 'cdc_merge')(expression)) }}
{% endmacro %}

{% macro spark__distinct_texts_sql(expression) -%}
    concat_ws('', collect_set({{ expression }}))
{%- endmacro %}

{% macro databend__distinct_texts_sql(expression) -%}
    string_agg(distinct {{ expression }}, '')
{%- endmacro %}


{% macro unavailable_text_sql(column) %}
    {#- A batch view's _cdc_unavailable as text ',a,b,' (it is that already on Databend). -#}
    {{ return(adapter.dispatch('unavailable_text_sql', 'cdc_merge')(column)) }}
{% endmacro %}

{% macro spark__unavailable_text_sql(column) -%}
    concat(',', concat_ws(',', {{ column }}), ',')
{%- endmacro %}

{% macro databend__unavailable_text_sql(column) -%}
    {{ column }}
{%- endmacro %}


{% macro unsent_flags_sql(unsent_columns, source) %}
    {#-
        One boolean per column to fill, _cdc_unsent_<n>: whether the event did not send it.
        source: 'batch' (the model's _cdc_unavailable), 'stored' (the row's _cdc_unsent_columns),
        'delete' (a deletes-table row: nothing unsent).
    -#}
    {%- for column in unsent_columns %}
        {%- if source == 'batch' %}
            {{ cdc_merge.named_in_unavailable_sql('_cdc_unavailable', column) }} as _cdc_unsent_{{ loop.index0 }},
        {%- elif source == 'stored' %}
            {{ cdc_merge.named_in_text_sql('_cdc_unsent_columns', column) }} as _cdc_unsent_{{ loop.index0 }},
        {%- else %}
            false as _cdc_unsent_{{ loop.index0 }},
        {%- endif %}
    {%- endfor %}
{%- endmacro %}


{% macro named_in_unavailable_sql(list_column, name) %}
    {{ return(adapter.dispatch('named_in_unavailable_sql', 'cdc_merge')(list_column, name)) }}
{% endmacro %}

{% macro spark__named_in_unavailable_sql(list_column, name) -%}
    array_contains({{ list_column }}, '{{ name }}')
{%- endmacro %}

{% macro databend__named_in_unavailable_sql(list_column, name) -%}
    {{ cdc_merge.databend__named_in_text_sql(list_column, name) }}
{%- endmacro %}


{% macro named_in_text_sql(text_column, name) %}
    {{ return(adapter.dispatch('named_in_text_sql', 'cdc_merge')(text_column, name)) }}
{% endmacro %}

{% macro spark__named_in_text_sql(text_column, name) -%}
    contains(coalesce({{ text_column }}, ''), ',{{ name }},')
{%- endmacro %}

{% macro databend__named_in_text_sql(text_column, name) -%}
    position(',{{ name }},' in coalesce({{ text_column }}, '')) > 0
{%- endmacro %}


{% macro unsent_filled_ctes(columns, unsent_columns, events_cte) %}
    {#-
        chain_unsent_groups and chain_filled over events_cte (one row per key and seq, with the
        flags of unsent_flags_sql): each column to fill takes the value of the key's newest event
        at or before it that sent one, the first of its group (the events since that one). A stored
        version's newest event in place (track_columns) counts as one that sent its values: they were
        filled from the version's earlier events, which the chain no longer holds; it keeps the columns
        it names (_cdc_kept_unsent).
    -#}
    chain_unsent_groups as (
        select
            *
            {%- for column in unsent_columns %},
            sum(case when _cdc_unsent_{{ loop.index0 }} then 0 else 1 end) over (
                partition by _cdc_key order by _cdc_seq rows between unbounded preceding and current row
            ) as _cdc_unsent_group_{{ loop.index0 }}
            {%- endfor %}
        from {{ events_cte }}
    ),

    chain_filled as (
        select
            {%- for column in columns %}
            {%- if column in unsent_columns %}
            {%- set n = unsent_columns.index(column) %}
            case
                when not _cdc_unsent_{{ n }} then {{ column }}
                when _cdc_unsent_group_{{ n }} > 0 then first_value({{ column }}) over (
                    partition by _cdc_key, _cdc_unsent_group_{{ n }} order by _cdc_seq
                )
            end as {{ column }},
            {%- else %}
            {{ column }},
            {%- endif %}
            {%- endfor %}
            _cdc_key,
            _cdc_is_delete,
            _cdc_seq,
            _cdc_source_ts,
            _cdc_origin,
            {%- if unsent_columns %}
            case
                when {% for column in unsent_columns %}_cdc_unsent_{{ loop.index0 }}{{ ' or ' if not loop.last }}{% endfor %}
                    then concat(','
                        {%- for column in unsent_columns %}, case when _cdc_unsent_{{ loop.index0 }} then '{{ column }},' else '' end{% endfor %})
                else _cdc_kept_unsent
                end as _cdc_unsent_columns
            {%- else %}
            cast(null as string) as _cdc_unsent_columns
            {%- endif %}
        from chain_unsent_groups
    )
{%- endmacro %}
