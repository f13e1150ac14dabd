{#
    Checks of a cdc_landing model, before any SQL runs. The landing config file
    itself is checked by python_jobs/landing/config.py before Spark reads anything.
#}

{% macro cdc_landing_validated_config() %}
    {% set fail_prefix = "cdc_landing model '" ~ model.name ~ "': " %}

    {% if model.language != 'python' %}
        {% do exceptions.raise_compiler_error(fail_prefix ~ "cdc_landing runs the Python landing model (models/landing/raw_events.py); this model is " ~ model.language ~ ".") %}
    {% endif %}

    {% do cdc_merge.require_cdc_adapter(fail_prefix ~ "the landing model") %}
    {% if target.type == 'cdc_spark' and target.method not in ('session', 'thrift') %}
        {% do exceptions.raise_compiler_error(
            fail_prefix ~ "the landing model runs inside dbt's local SparkSession (profile type cdc_spark, method session), "
            ~ "as a Spark application on the cluster of a Thrift server (type cdc_spark, method thrift), or in a local "
            ~ "SparkSession that loads into Databend (type cdc_databend); target '"
            ~ target.name ~ "' is type " ~ target.type ~ " with method " ~ target.get('method', 'none') ~ ". "
            ~ "Run the standalone landing job instead: "
            ~ "spark-submit --jars <iceberg runtime jar> --py-files python_jobs.zip python_jobs/landing/land.py --config landing.yml, "
            ~ "and leave this model out: dbt run --exclude " ~ model.name ~ " (see docs/operating.md)."
        ) %}
    {% endif %}

    {#- Defaults for a project that installs cdc_merge as a package (docs/your_project.md). -#}
    {% set landing_config = config.get('landing_config') or var('cdc_merge_landing_config', 'landing.yml') %}
    {% if landing_config is not string or landing_config | trim | length == 0 %}
        {% do exceptions.raise_compiler_error(fail_prefix ~ "set landing_config to the landing YAML (relative to the project's folder), e.g. +landing_config: landing.yml in dbt_project.yml.") %}
    {% endif %}
    {#- Relative to the project's folder, wherever dbt runs (--project-dir). -#}
    {% set landing_config = adapter.cdc_project_path(landing_config) %}

    {% set quarantine_table = config.get('quarantine_table') or (this.schema ~ '.quarantine') %}
    {% if quarantine_table is not string or not modules.re.match('^[A-Za-z_][A-Za-z0-9_$]*\.[A-Za-z_][A-Za-z0-9_$]*$', quarantine_table) %}
        {% do exceptions.raise_compiler_error(fail_prefix ~ "set quarantine_table to schema.table for lines that are not events, e.g. cdc_raw.quarantine (got " ~ quarantine_table ~ ").") %}
    {% endif %}

    {{ return({
        'landing_config': landing_config,
        'quarantine_table': quarantine_table,
        'quarantine_relation': api.Relation.create(
            database=this.database,
            schema=quarantine_table.split('.')[0],
            identifier=quarantine_table.split('.')[1],
            type='table',
        ),
    }) }}
{% endmacro %}
