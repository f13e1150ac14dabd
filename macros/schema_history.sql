{#
    Reading the table-level events of the raw log (truncates and schema changes, whose key is [])
    for models/landing/schema_history.sql: a member of their JSON images as text.
#}

{% macro json_member_text(column, member) %}
    {{ return(adapter.dispatch('json_member_text', 'cdc_merge')(column, member)) }}
{% endmacro %}

{% macro spark__json_member_text(column, member) -%}
    get_json_object({{ column }}, '$.{{ member }}')
{%- endmacro %}

{% macro databend__json_member_text(column, member) -%}
    {#- A JSON null is a VARIANT null, not SQL null. -#}
    case when is_null_value({{ column }}['{{ member }}']) then null else to_string({{ column }}['{{ member }}']) end
{%- endmacro %}
