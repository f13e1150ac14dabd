{#
    Databend streams (change_source='stream'; Databend Cloud or an Enterprise licence):
    one append-only stream per mirror, created at the raw snapshot the mirror has reached.
#}

{% macro change_stream_relation(target_relation) %}
    {{ return(target_relation.incorporate(path={'identifier': target_relation.identifier ~ '__cdc_stream'})) }}
{% endmacro %}


{% macro create_change_stream_sql(stream, raw_relation, at_snapshot) %}
    {{ return(adapter.dispatch('create_change_stream_sql', 'cdc_merge')(stream, raw_relation, at_snapshot)) }}
{% endmacro %}

{% macro default__create_change_stream_sql(stream, raw_relation, at_snapshot) %}
    {#- validate.sql refuses change_source='stream' on other engines; this is never reached. -#}
    {% do exceptions.raise_compiler_error("change_source='stream' needs a Databend target") %}
{% endmacro %}

{% macro databend__create_change_stream_sql(stream, raw_relation, at_snapshot) %}
    create stream {{ stream }}
    on table {{ raw_relation }}
    {%- if at_snapshot is not none %}
    at (snapshot => '{{ at_snapshot }}')
    {%- endif %}
    append_only = true
{% endmacro %}


{% macro create_raw_changes_from_stream_sql(view_name, raw_relation, stream) %}
    {{ return(adapter.dispatch('create_raw_changes_from_stream_sql', 'cdc_merge')(view_name, raw_relation, stream)) }}
{% endmacro %}

{% macro default__create_raw_changes_from_stream_sql(view_name, raw_relation, stream) %}
    {% do exceptions.raise_compiler_error("change_source='stream' needs a Databend target") %}
{% endmacro %}

{% macro databend__create_raw_changes_from_stream_sql(view_name, raw_relation, stream) %}
    {#- Reading a stream in a statement that writes, inside the open transaction, consumes it at commit. -#}
    create or replace transient table {{ view_name }} as
    {{ cdc_merge.databend_raw_change_columns() }}
    from {{ stream }}
{% endmacro %}
