{#
    What the connection's adapter can do, asked in one place instead of testing the engine, the
    adapter type or the connection method where an answer is needed (the adapter plugins'
    capabilities.py says what each field means). The materializations need one of the plugins
    (validate.sql); SQL that differs by engine is a spark__/databend__ pair behind adapter.dispatch.
#}

{% macro capabilities() %}
    {{ return(adapter.cdc_capabilities()) }}
{% endmacro %}


{% macro has_cdc_adapter() %}
    {#- One of this project's adapter plugins (cdc_spark, cdc_databend): the one test of the adapter's type. -#}
    {{ return(adapter.type() in ('cdc_spark', 'cdc_databend')) }}
{% endmacro %}


{% macro require_cdc_adapter(fail_prefix) %}
    {#- The models' decisions are Python in the adapter plugins (docs/architecture.md, "One engine switch"): checked before any SQL. -#}
    {% if not cdc_merge.has_cdc_adapter() %}
        {% do exceptions.raise_compiler_error(fail_prefix ~ " needs the adapter plugin of the cdc_merge Python package; target '"
            ~ target.name ~ "' is type " ~ target.type ~ ". In profiles.yml set type: cdc_" ~ ('databend' if 'databend' in target.type else 'spark')
            ~ " (it is " ~ target.type ~ " with the methods cdc_merge asks of it: the target's other settings stay as they are),"
            ~ " with the cdc_merge package installed (docs/your_project.md).") %}
    {% endif %}
{% endmacro %}


{% macro in_process_session() %}
    {#- dbt's SparkSession is in this process: its Iceberg metadata is read in the JVM. -#}
    {{ return(cdc_merge.capabilities().in_process_session) }}
{% endmacro %}
