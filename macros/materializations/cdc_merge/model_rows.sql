{#
    Whether a cdc_merge model gives one row for every row of its batch, asked once for each model SQL
    the mirror has not run with: decided in python_jobs/apply/model_rows.py from the plan the engine
    explains; a model that can leave out or repeat rows is refused before anything is written.
#}

{% macro check_model_keeps_rows(model_sql, batch_view, checked) %}
    {% if checked %}
        {{ return(none) }}
    {% endif %}
    {% set problem = adapter.cdc_model_rows_problem(adapter.dispatch('explained_plan', 'cdc_merge')(model_sql, batch_view), batch_view, model.name) %}
    {% if problem %}
        {% do exceptions.raise_compiler_error(problem) %}
    {% endif %}
{% endmacro %}

{% macro spark__explained_plan(sql, batch_view) %}
    {#- The analyzed plan from dbt's SparkSession in this process; through a Thrift server, explain's plans as one text. Nothing runs. -#}
    {% set analyzed = adapter.cdc_analyzed_plan(sql) %}
    {{ return(analyzed if analyzed is not none else run_query('explain extended ' ~ sql).rows[0][0]) }}
{% endmacro %}

{% macro databend__explained_plan(sql, batch_view) %}
    {#- The unoptimized plans of the model and of the batch view, whose steps it has inlined: the model's are those beyond the view's. Nothing runs. -#}
    {% set model_plan = run_query('explain raw ' ~ sql).rows | map(attribute=0) | join('\n') %}
    {% set batch_plan = run_query('explain raw select * from ' ~ batch_view).rows | map(attribute=0) | join('\n') %}
    {{ return('== Raw Plan ==\n' ~ model_plan ~ '\n== Batch View Raw Plan ==\n' ~ batch_plan) }}
{% endmacro %}
