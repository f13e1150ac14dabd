{#
    Debezium's placeholder for a PostgreSQL TOAST column an update did not change
    ('__debezium_unavailable_value'): whether a row image holds it (dedup.sql rounds such keys one
    event at a time), which of its fields do, and whether a batch row's column is one of them
    (write.sql then keeps the mirror's stored value).
#}

{% macro unavailable_marker() %}
    {{- return('__debezium_unavailable_value') -}}
{% endmacro %}


{% macro has_unavailable_sql(column) %}
    {{ return(adapter.dispatch('has_unavailable_sql', 'cdc_merge')(column)) }}
{% endmacro %}

{% macro spark__unavailable_fields_sql(column) -%}
    {#- The fields of a row image that hold the placeholder (an empty array for most, without parsing them). -#}
    case
        when {{ cdc_merge.has_unavailable_sql(column) }}
            then map_keys(map_filter(
                from_json({{ column }}, 'map<string, string>'),
                (field_name, value) -> value = '{{ cdc_merge.unavailable_marker() }}'
            ))
        else cast(array() as array<string>)
    end
{%- endmacro %}

{% macro spark__has_unavailable_sql(column) -%}
    {#- contains() compares bytes; instr() counts characters: over 1M images 0.19-0.20 s against 0.37-0.53 s (BENCHMARKS.md, "Levers tried"). -#}
    contains(coalesce({{ column }}, ''), '{{ cdc_merge.unavailable_marker() }}')
{%- endmacro %}

{% macro databend__has_unavailable_sql(column) -%}
    position('{{ cdc_merge.unavailable_marker() }}' in coalesce(to_string({{ column }}), '')) > 0
{%- endmacro %}


{% macro sends_every_field_of_sql(newer, older) %}
    {#- Whether row image newer sends every field older sends (its placeholders are among older's): applied after older, it leaves nothing of it (dedup.sql). A delete's null image sends all. -#}
    {{ return(adapter.dispatch('sends_every_field_of_sql', 'cdc_merge')(newer, older)) }}
{% endmacro %}

{% macro spark__sends_every_field_of_sql(newer, older) -%}
    size(array_except({{ cdc_merge.spark__unavailable_fields_sql(newer) }}, {{ cdc_merge.spark__unavailable_fields_sql(older) }})) = 0
{%- endmacro %}

{% macro databend__sends_every_field_of_sql(newer, older) -%}
    {#- Only a newer image without placeholders: its fields are a join of json_each there (databend__batch_events_sql). -#}
    not ({{ cdc_merge.has_unavailable_sql(newer) }})
{%- endmacro %}


{% macro is_unavailable_sql(column) %}
    {{ return(adapter.dispatch('is_unavailable_sql', 'cdc_merge')(column)) }}
{% endmacro %}

{% macro any_unavailable_sql(column) %}
    {{ return(adapter.dispatch('any_unavailable_sql', 'cdc_merge')(column)) }}
{% endmacro %}

{% macro spark__any_unavailable_sql(column) -%}
    size({{ column }}) > 0
{%- endmacro %}

{% macro databend__any_unavailable_sql(column) -%}
    {{ column }} != ''
{%- endmacro %}


{% macro spark__is_unavailable_sql(column) -%}
    array_contains(change._cdc_unavailable, '{{ column }}')
{%- endmacro %}

{% macro databend__is_unavailable_sql(column) -%}
    {#- _cdc_unavailable is ',a,b,' on Databend (see databend__create_batch_view_sql). -#}
    position(',{{ column }},' in change._cdc_unavailable) > 0
{%- endmacro %}
