{#
    The columns of a mirror and of its model's output, as (name, type) with one spelling of each
    type for both engines (normalized_type), and the ALTER TABLE statements schema_change.sql runs
    (whether a type change widens: python_jobs/apply/schema_plan.py).
#}

{% macro bookkeeping_columns() %}
    {{ return(['_cdc_deleted', '_cdc_key', '_cdc_seq', '_cdc_source_ts']) }}
{% endmacro %}


{% macro column_types(describe_rows, spelled=false) %}
    {#-
        [(name, type)] from the rows of a describe, up to the first blank or '#' row (Spark's
        partitioning section); the names in lower case, or as spelled.
    -#}
    {% set columns = [] %}
    {% set done = namespace(value=false) %}
    {% for row in describe_rows %}
        {% set name = row[0] | string %}
        {% if name == '' or name.startswith('#') %}
            {% set done.value = true %}
        {% endif %}
        {% if not done.value %}
            {% do columns.append((name if spelled else name | lower, cdc_merge.normalized_type(row[1] | string))) %}
        {% endif %}
    {% endfor %}
    {{ return(columns) }}
{% endmacro %}


{% macro relation_column_types(relation) %}
    {{ return(adapter.dispatch('relation_column_types', 'cdc_merge')(relation)) }}
{% endmacro %}

{% macro spark__relation_column_types(relation) %}
    {#-
        From the Iceberg schema the cdc_spark adapter keeps loaded (no statement), else dbt-spark's
        own describe of the table, the one it runs for any relation's columns.
    -#}
    {% set stored = adapter.cdc_stored_column_types(relation) %}
    {% set columns = [] %}
    {% if stored is not none %}
        {% for name, data_type in stored %}
            {% do columns.append((name | lower, cdc_merge.normalized_type(data_type))) %}
        {% endfor %}
        {{ return(columns) }}
    {% endif %}
    {% for column in adapter.get_columns_in_relation(relation) %}
        {% do columns.append((column.name | lower, cdc_merge.normalized_type(column.dtype))) %}
    {% endfor %}
    {{ return(columns) }}
{% endmacro %}

{% macro databend__relation_column_types(relation) %}
    {{ return(cdc_merge.column_types(run_query('desc ' ~ relation).rows)) }}
{% endmacro %}


{% macro cdc_query_columns(sql, raw_relation=none) %}
    {#-
        The names (as the query spells them) and types of a query's output columns, without running it.
        raw_relation: the raw table a mirror model's batch view reads, by which its answer may be kept.
        Not named query_columns: dbt's snapshot check strategy reads a variable of that name before it
        sets it, and this project's macros are global where it is the root project.
    -#}
    {{ return(adapter.dispatch('cdc_query_columns', 'cdc_merge')(sql, raw_relation)) }}
{% endmacro %}

{% macro spark__cdc_query_columns(sql, raw_relation=none) %}
    {#- Kept between runs of a process while the model's SQL and its raw table are the same (cdc_spark/model_columns.py). -#}
    {% set key = adapter.cdc_model_columns_key(sql, raw_relation | string) if raw_relation is not none else none %}
    {% set kept = adapter.cdc_kept_model_columns(key) %}
    {% if kept is not none %}
        {% set columns = [] %}
        {% for name, data_type in kept %}
            {% do columns.append((name, data_type)) %}
        {% endfor %}
        {{ return(columns) }}
    {% endif %}
    {% set columns = cdc_merge.column_types(run_query('describe query ' ~ sql).rows, true) %}
    {% do adapter.cdc_keep_model_columns(key, columns) %}
    {{ return(columns) }}
{% endmacro %}

{% macro databend__cdc_query_columns(sql, raw_relation=none) %}
    {#- Databend describes tables and views, not queries. -#}
    {% set shape_view = model.name ~ '__cdc_shape' %}
    {% do run_query('create or replace view ' ~ shape_view ~ ' as ' ~ sql) %}
    {% set columns = cdc_merge.column_types(run_query('desc ' ~ shape_view).rows, true) %}
    {% do run_query('drop view if exists ' ~ shape_view) %}
    {{ return(columns) }}
{% endmacro %}


{% macro lower_names(columns) %}
    {#- (name, type) pairs with the names in lower case, as the mirror's columns are compared. -#}
    {% set lowered = [] %}
    {% for name, data_type in columns %}
        {% do lowered.append((name | lower, data_type)) %}
    {% endfor %}
    {{ return(lowered) }}
{% endmacro %}


{% macro normalized_type(data_type) %}
    {#- One spelling per type, so both engines' describes compare: lower case, no spaces, strings as string. -#}
    {% set spelled = data_type | lower | replace(' ', '') %}
    {% set spelled = modules.re.sub('^nullable\\((.*)\\)$', '\\1', spelled) %}
    {% set spelled = modules.re.sub('^(varchar|char|text)(\\([0-9]+\\))?$', 'string', spelled) %}
    {% set spelled = {'integer': 'int', 'int32': 'int', 'int64': 'bigint', 'long': 'bigint', 'real': 'float',
                      'float32': 'float', 'float64': 'double', 'decimal': 'decimal(10,0)', 'numeric': 'decimal(10,0)'}.get(spelled, spelled) %}
    {% set spelled = modules.re.sub('^numeric', 'decimal', spelled) %}
    {{ return(adapter.dispatch('stored_type', 'cdc_merge')(spelled)) }}
{% endmacro %}

{% macro spark__stored_type(data_type) %}
    {#- Iceberg has no 8- or 16-bit integers: Spark stores them as int. -#}
    {{ return('int' if data_type in ['tinyint', 'smallint', 'byte', 'short'] else data_type) }}
{% endmacro %}

{% macro databend__stored_type(data_type) %}
    {{ return(data_type) }}
{% endmacro %}


{% macro add_column_sql(relation, column, data_type, position='') %}
    {#- position: where among the table's columns ('first', 'after <column>'); last when empty. -#}
    {{ return(adapter.dispatch('add_column_sql', 'cdc_merge')(relation, column, data_type, position)) }}
{% endmacro %}

{% macro spark__add_column_sql(relation, column, data_type, position) %}
    alter table {{ relation }} add columns ({{ column }} {{ data_type }} {{ position }})
{% endmacro %}

{% macro databend__add_column_sql(relation, column, data_type, position) %}
    alter table {{ relation }} add column {{ column }} {{ data_type }} null {{ position }}
{% endmacro %}


{% macro widen_column_sql(relation, column, data_type) %}
    {{ return(adapter.dispatch('widen_column_sql', 'cdc_merge')(relation, column, data_type)) }}
{% endmacro %}

{% macro spark__widen_column_sql(relation, column, data_type) %}
    alter table {{ relation }} alter column {{ column }} type {{ data_type }}
{% endmacro %}

{% macro databend__widen_column_sql(relation, column, data_type) %}
    alter table {{ relation }} modify column {{ column }} {{ data_type }} null
{% endmacro %}


{% macro drop_column_sql(relation, column) %}
    alter table {{ relation }} drop column {{ column }}
{% endmacro %}
