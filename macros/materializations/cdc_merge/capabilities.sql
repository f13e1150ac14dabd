{#
    What the connection's adapter can do, asked in one place instead of testing the engine, the
    adapter type or the connection method where an answer is needed (the adapter plugins'
    capabilities.py says what each field means). A plain dbt-spark or dbt-databend target has no
    plugin: every capability is off there.
#}

{% macro capabilities() %}
    {% if cdc_merge.has_cdc_adapter() %}
        {{ return(adapter.cdc_capabilities()) }}
    {% endif %}
    {{ return({'in_process_session': false, 'idle_state': false, 'keeps_offset_rows': false, 'keeps_run_rows': false, 'guards': false}) }}
{% endmacro %}


{% macro has_cdc_adapter() %}
    {#- One of this project's adapter plugins (cdc_spark, cdc_databend), which the macros may ask in Python. -#}
    {{ return(adapter.type() in ('cdc_spark', 'cdc_databend')) }}
{% endmacro %}


{% macro in_process_session() %}
    {#- dbt's SparkSession is in this process: its Iceberg metadata is read in the JVM. -#}
    {{ return(cdc_merge.capabilities().in_process_session) }}
{% endmacro %}
