{#-
    dbt snapshots on Databend: dbt's own snapshot materialization, with two things
    dbt-databend-cloud lacks, and one snapshot time. The relation type a macro gives is kept by the
    adapter (relation.py).
-#}

{#-
    dbt's materialization reads model.database, which a node of this adapter leaves out (every
    relation's database is none here): the node gets it as none, then dbt's own materialization runs.
-#}
{% materialization snapshot, adapter='cdc_databend' %}
    {% if 'database' not in model %}
        {% do model.update({'database': none}) %}
    {% endif %}
    {{ return(materialization_snapshot_default()) }}
{% endmaterialization %}


{#- dbt's merge, with the inserted values named by the source's alias: bare, Databend finds them in both tables. -#}
{% macro cdc_databend__snapshot_merge_sql(target, source, insert_cols) -%}
    {%- set columns = config.get("snapshot_table_column_names") or get_snapshot_table_column_names() -%}
    merge into {{ target.render() }} as dbt_internal_dest
    using {{ source }} as dbt_internal_source
    on dbt_internal_source.{{ columns.dbt_scd_id }} = dbt_internal_dest.{{ columns.dbt_scd_id }}
    when matched
        {%- if config.get("dbt_valid_to_current") %}
        {%- set current = "dbt_internal_dest." ~ columns.dbt_valid_to %}
        and ({{ equals(current, config.get('dbt_valid_to_current') | trim) }} or {{ current }} is null)
        {%- else %}
        and dbt_internal_dest.{{ columns.dbt_valid_to }} is null
        {%- endif %}
        and dbt_internal_source.dbt_change_type in ('update', 'delete')
        then update set {{ columns.dbt_valid_to }} = dbt_internal_source.{{ columns.dbt_valid_to }}
    when not matched
        and dbt_internal_source.dbt_change_type = 'insert'
        then insert ({{ insert_cols | join(', ') }})
        values (
            {%- for column in insert_cols -%}
            dbt_internal_source.{{ column }}{{ ', ' if not loop.last }}
            {%- endfor -%}
        )
{%- endmacro %}


{#-
    The snapshot's time, one value wherever the snapshot's SQL names it: the invocation's start (UTC, the
    session's zone). Databend's now() differs between two calls of one statement, so dbt's
    nullif(now(), now()) gave a new row a dbt_valid_to and it was not current. In a scalar subquery, as
    a bare literal nullif(t, t) folds to an untyped null that the table cannot take.
-#}
{% macro cdc_databend__snapshot_get_time() -%}
    (select cast('{{ run_started_at.strftime("%Y-%m-%d %H:%M:%S.%f") }}' as timestamp))
{%- endmacro %}
