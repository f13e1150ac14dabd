{#
    Whether two values differ, two nulls being equal: what a history compares stored and computed
    versions and track_columns by, and a mirror the defaults of columns its source added.
#}

{% macro differs_sql(left, right) %}
    {{ return(adapter.dispatch('differs_sql', 'cdc_merge')(left, right)) }}
{% endmacro %}

{% macro spark__differs_sql(left, right) -%}
    not ({{ left }} <=> {{ right }})
{%- endmacro %}

{% macro databend__differs_sql(left, right) -%}
    {{ left }} is distinct from {{ right }}
{%- endmacro %}
