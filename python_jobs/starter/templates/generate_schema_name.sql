{#- A model's custom schema as written (the raw log in cdc_raw), not appended to the target's. -#}
{% macro generate_schema_name(custom_schema_name, node) %}
    {{- cdc_merge.generate_schema_name(custom_schema_name, node) -}}
{% endmacro %}
