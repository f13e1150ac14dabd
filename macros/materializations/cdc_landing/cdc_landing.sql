{#
    cdc_landing: the Python model that appends new CDC events to the raw log.

    The model's table is the raw log itself and is never replaced: the landing job
    appends one Iceberg commit per batch of files and remembers the files in its
    checkpoint, so --full-refresh does not apply here (it would lose the log), and --empty lands nothing.
#}

{% materialization cdc_landing, default, supported_languages=['python'] %}
    {%- set cfg = cdc_merge.cdc_landing_validated_config() -%}
    {%- set target_relation = this.incorporate(type='table') -%}

    {{ run_hooks(pre_hooks) }}

    {% if should_full_refresh() %}
        {{ log("cdc_landing " ~ target_relation ~ ": --full-refresh keeps the raw log; landing new files only", info=True) }}
    {% endif %}
    {#- Created when the run's list of relations does not have them (a cycle of cdc-run finds them). -#}
    {% for relation, ddl in [(target_relation, cdc_merge.raw_events_ddl), (cfg.quarantine_relation, cdc_merge.quarantine_ddl)]
          if load_cached_relation(relation) is none %}
        {% do run_query(cdc_merge.create_schema_if_missing(relation)) %}
        {% do run_query(ddl(relation)) %}
    {% endfor %}

    {#- --empty runs the models without their data: the new files stay for the next run, which lands them (the mirrors apply nothing either). -#}
    {% if flags.EMPTY %}
        {{ log("cdc_landing " ~ target_relation ~ ": --empty lands no file; the next run lands them", info=True) }}
        {% do store_raw_result('main', message='OK (--empty: nothing landed)', code='OK', rows_affected=0) %}
    {% else %}
        {% call statement('main', language='python') -%}
            {{ cdc_merge.cdc_landing_python(compiled_code, cfg) }}
        {%- endcall %}
    {% endif %}

    {{ run_hooks(post_hooks) }}

    {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}


{% macro cdc_landing_python(compiled_code, cfg) -%}
{{ compiled_code }}
# --- cdc_landing: the settings as validated, defaults included (config_dict is dbt's, above). --- #
config_dict.update({"landing_config": {{ tojson(cfg.landing_config) }}, "quarantine_table": {{ tojson(cfg.quarantine_table) }}})
# --- cdc_landing: run the model; it appends to {{ this }} itself. --- #
from python_jobs.landing.summary import LandingSummary

dbt = dbtObj(spark.table)
landing_summary = model(dbt, spark)
if not isinstance(landing_summary, LandingSummary):
    raise TypeError(
        "a cdc_landing model must return the LandingSummary of python_jobs.landing.land.run_for_dbt(...), "
        f"got {type(landing_summary).__name__}"
    )
dbt_model_result_message = landing_summary.status()
{% endmacro %}
