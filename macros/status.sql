{#
    The pipeline's status from its tables (python_jobs/status/tables.py; docs/operating.md, "What to
    watch"), for a pipeline whose service is not running:

        dbt run-operation cdc_merge.cdc_status --args '{hours: 1}'
        cdc-status                          (the same, printed, with the captures' status files)

    The runs rows of the last `hours` of every mirror's cdc_merge_runs, and every cdc_merge_verify
    check beside the mirrors (the newest of each is shown).
#}

{% macro cdc_status(hours=1) %}
    {% if not execute %}
        {{ return(none) }}
    {% endif %}
    {% set runs_tables, verify_tables, models = [], [], [] %}
    {% for node in graph.nodes.values() if node.resource_type == 'model' and node.config.materialized in ('cdc_merge', 'cdc_history') %}
        {% do models.append(api.Relation.create(database=node.database, schema=node.schema, identifier=node.alias) | string) %}
        {% set runs = api.Relation.create(database=node.database, schema=node.config.get('offsets_schema') or node.schema,
            identifier='cdc_merge_runs', type='table') %}
        {% set verify = api.Relation.create(database=node.database, schema=node.schema, identifier='cdc_merge_verify', type='table') %}
        {% if (runs | string) not in runs_tables | map('string') | list and load_relation(runs) is not none %}
            {% do runs_tables.append(runs) %}
        {% endif %}
        {% if (verify | string) not in verify_tables | map('string') | list and load_relation(verify) is not none %}
            {% do verify_tables.append(verify) %}
        {% endif %}
    {% endfor %}
    {% set runs_rows, check_rows = [], [] %}
    {% for relation in runs_tables %}
        {% for row in run_query(cdc_merge.status_runs_sql(relation, hours)).rows %}
            {% do runs_rows.append(cdc_merge.status_row(row)) %}
        {% endfor %}
    {% endfor %}
    {% for relation in verify_tables %}
        {% do cdc_merge.upgrade_verify_table(relation) %}
        {% for row in run_query(cdc_merge.status_checks_sql(relation)).rows %}
            {% do check_rows.append(cdc_merge.status_row(row)) %}
        {% endfor %}
    {% endfor %}
    {% for line in adapter.cdc_status_from_tables(runs_rows, check_rows, hours, models) %}
        {{ log(line, info=True) }}
    {% endfor %}
{% endmacro %}

{% macro status_row(row) %}
    {#- An agate row as a dict of texts and numbers (timestamps as their text). -#}
    {% set values = {} %}
    {% for name in row.keys() %}
        {% set value = row[name] %}
        {% do values.update({name | lower: value if value is number or value is none else value | string}) %}
    {% endfor %}
    {{ return(values) }}
{% endmacro %}

{% macro status_runs_sql(relation, hours) %}
    select
        target_table,
        invocation_id,
        source_table,
        cast(finished_at as string) as finished_at,
        run_seconds,
        events_read,
        rows_inserted,
        rows_updated,
        rows_deleted,
        events_skipped,
        lag_seconds,
        lines_quarantined,
        consistency_group,
        cut_lag_seconds
    from {{ relation }}
    where finished_at >= {{ adapter.dispatch('status_since_sql', 'cdc_merge')(hours) }}
{% endmacro %}

{% macro spark__status_since_sql(hours) -%}
    current_timestamp() - make_interval(0, 0, 0, 0, 0, 0, {{ (hours * 3600) | int }})
{%- endmacro %}

{% macro databend__status_since_sql(hours) -%}
    date_sub(second, {{ (hours * 3600) | int }}, now())
{%- endmacro %}

{% macro status_checks_sql(relation) %}
    select
        mirror,
        cast(checked_at as string) as checked_at,
        clean,
        missing,
        extra,
        differing,
        source_position
    from {{ relation }}
{% endmacro %}
