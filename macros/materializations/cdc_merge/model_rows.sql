{#
    Whether a cdc_merge model gives one row for every row of its batch, asked once for each model SQL
    the mirror has not run with: decided in python_jobs/apply/model_rows.py from the plan the engine
    explains; a model that can leave out or repeat rows is refused before anything is written.
#}

{% macro check_model_keeps_rows(model_sql, batch_view, checked) %}
    {% if checked %}
        {{ return(none) }}
    {% endif %}
    {% set problem = adapter.cdc_model_rows_problem(adapter.dispatch('explained_plan', 'cdc_merge')(model_sql), batch_view, model.name) %}
    {% if problem %}
        {% do exceptions.raise_compiler_error(problem) %}
    {% endif %}
{% endmacro %}

{% macro spark__explained_plan(sql) %}
    {#- The analyzed plan from dbt's SparkSession in this process; through a Thrift server, explain's plans as one text. Nothing runs. -#}
    {% set analyzed = adapter.cdc_analyzed_plan(sql) %}
    {{ return(analyzed if analyzed is not none else run_query('explain extended ' ~ sql).rows[0][0]) }}
{% endmacro %}

{% macro databend__explained_plan(sql) %}
    {#- Databend explains the optimized plan only, the batch view's own steps merged in: not read (docs/mirror_models.md). -#}
    {{ return(none) }}
{% endmacro %}
