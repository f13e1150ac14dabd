{#
    Helpers for the SELECT of a cdc_merge model:

        select
            {{ cdc_merge.cdc_column('id', 'int') }},
            {{ cdc_merge.cdc_metadata_columns() }}
        from {{ cdc_merge.cdc_events(ref('raw_events')) }}
#}

{% macro cdc_events(raw_relation) %}
    {#
        The deduplicated batch the materialization prepares before it runs the model:
        one row per key with _cdc_key, _cdc_action, _cdc_seq, _cdc_source_ts,
        _cdc_row (the after image, or the before image for a delete) and _cdc_unavailable
        (columns whose value the source did not send, e.g. unchanged Postgres TOAST values). Passing the raw
        relation puts it in the lineage graph.
    #}
    {{ return(cdc_merge.batch_view_name(model.name)) }}
{% endmacro %}


{% macro batch_view_name(model_name) %}
    {{ return(model_name ~ '__cdc_batch') }}
{% endmacro %}


{% macro cdc_metadata_columns() %}
    _cdc_key,
    _cdc_action,
    _cdc_seq,
    _cdc_source_ts,
    _cdc_unavailable
{% endmacro %}


{% macro cdc_column(name, data_type, json_field=none) %}
    {{ return(adapter.dispatch('cdc_column', 'cdc_merge')(name, data_type, json_field or name)) }}
{% endmacro %}

{% macro spark__cdc_column(name, data_type, json_field) %}
    {#- from_json with a typed schema keeps decimals exact; get_json_object goes through double. -#}
    {%- set field = json_field if modules.re.match('^[A-Za-z_][A-Za-z0-9_]*$', json_field) else '`' ~ json_field ~ '`' -%}
    from_json(_cdc_row, '`{{ json_field }}` {{ data_type }}').{{ field }} as {{ name }}
{%- endmacro %}

{% macro databend__cdc_column(name, data_type, json_field) %}
    {#-
        A JSON null is a VARIANT null, not SQL null. Decimals go through their text: a
        VARIANT does not cast to DECIMAL, and a JSON string "12.50" stays exact.
    -#}
    {%- set field = "_cdc_row['" ~ json_field ~ "']" -%}
    {%- set value = field ~ '::string' if modules.re.match('^(decimal|numeric)', data_type | lower) else field -%}
    case when is_null_value({{ field }}) then null else cast({{ value }} as {{ data_type }}) end as {{ name }}
{%- endmacro %}
