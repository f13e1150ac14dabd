{#
    A model's custom schema is used as written, not appended to the target schema:
    the raw log lives in cdc_raw (or $CDC_MERGE_RAW_SCHEMA) whatever the mirrors' schema.
#}

{% macro generate_schema_name(custom_schema_name, node) %}
    {{- (custom_schema_name or target.schema) | trim -}}
{% endmacro %}
