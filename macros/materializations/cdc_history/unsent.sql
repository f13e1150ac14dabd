{#
    Unchanged Postgres TOAST values: an update that left one unchanged does not send it (the
    event holds Debezium's placeholder, named in its _cdc_unavailable). Its version takes the
    value of the key's event before it that sent one (a key first seen in such an update: null,
    as its cdc_merge mirror holds). The history keeps, per row, the columns so filled
    (_cdc_unsent_columns, ',a,b,'), so that a late event placed before the row fills it again.
    Only the columns the batch or its keys' stored rows name are filled: a batch without
    placeholders rebuilds its chains as before.
#}

{% macro history_unsent_columns(target_relation, batch_view, model_sql, columns) %}
    {#- The model columns to fill in this batch's chains (a list, often empty); named as the model names them. -#}
    {% set names_sql %}
        select distinct names
        from (
            select {{ cdc_merge.unavailable_text_sql('_cdc_unavailable') }} as names
            from ({{ model_sql }}) as model_output
            where {{ cdc_merge.any_unavailable_sql('_cdc_unavailable') }}
            union all
            select _cdc_unsent_columns as names
            from {{ target_relation }}
            where
                _cdc_unsent_columns != ''
                and _cdc_key in (select _cdc_key from {{ batch_view }})
        ) as unsent
    {% endset %}
    {% set named = [] %}
    {% for row in run_query(names_sql).rows %}
        {% do named.extend((row['names'] or '').split(',')) %}
    {% endfor %}
    {{ return(columns | select('in', named) | list) }}
{% endmacro %}


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
        at or before it that sent one, the first of its group (the events since that one).
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
                else ''
            end as _cdc_unsent_columns
            {%- else %}
            '' as _cdc_unsent_columns
            {%- endif %}
        from chain_unsent_groups
    )
{%- endmacro %}
