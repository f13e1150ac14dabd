{#
    dbt-spark's view materialization, except that a view already as its compiled SQL would make it is
    left as it is (the adapter's cdc_keep_view decides: current_views.py), instead of being written
    again at every run.
#}
{% materialization view, adapter='cdc_spark' -%}
    {%- set existing = adapter.get_relation(database=database, schema=schema, identifier=model['alias']) -%}
    {%- set settings = {
        'hooks': (pre_hooks | length) + (post_hooks | length),
        'grants': config.get('grants'),
        'persist_docs': config.get('persist_docs'),
        'contract': config.get('contract').enforced,
        'full_refresh': should_full_refresh(),
    } -%}
    {%- if adapter.cdc_keep_view(existing, sql, settings) -%}
        {{ log('view ' ~ existing ~ ' unchanged: not created again') }}
        {% do store_raw_result('main', message='OK (unchanged)', code='OK', rows_affected=0) %}
        {{ return({'relations': [existing]}) }}
    {%- endif -%}
    {{ return(create_or_replace_view()) }}
{%- endmaterialization %}
