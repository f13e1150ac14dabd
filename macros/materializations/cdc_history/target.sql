{#
    The history table and, with deletes='hard', its deletes table (every delete event, which
    leaves no row in the history but must still close a late older event's version): created
    here (a stored history's columns follow the model's in added_columns.sql).
    The history records the deletes mode it was built with (Spark: its table property
    cdc-merge.deletes; Databend, which keeps no table properties of a user's choosing: a row of
    cdc_merge_table_settings, table_settings.sql, since its comment is the model's description
    persist_docs writes), so that a run in the other mode is refused (schema_plan.py). A Databend
    history built when the mode was its comment (cdc-merge.deletes=<mode>) is still recognised, and
    its next run moves the mode to the settings table and clears the comment.
#}

{% macro history_deletes_relation(target_relation) %}
    {#- With deletes='hard' the deletes leave no row in the history; every delete event is kept here, to place late events. -#}
    {{ return(target_relation.incorporate(path={'identifier': target_relation.identifier ~ '__cdc_history_deletes'})) }}
{% endmacro %}


{% macro create_history_sql(target_relation, model_sql, columns, cfg) %}
    {{ return(adapter.dispatch('create_history_sql', 'cdc_merge')(target_relation, model_sql, columns, cfg)) }}
{% endmacro %}

{% macro spark__create_history_sql(target_relation, model_sql, columns, cfg) %}
    create table {{ target_relation }}
    using iceberg
    {{ cdc_merge.merge_on_read_tblproperties(cfg, {'cdc-merge.deletes': cfg.deletes}) }}
    as
    {{ cdc_merge.empty_history_sql(model_sql, columns) }}
{% endmacro %}

{% macro databend__create_history_sql(target_relation, model_sql, columns, cfg) %}
    create table {{ target_relation }} as
    {{ cdc_merge.empty_history_sql(model_sql, columns) }}
{% endmacro %}


{% macro stored_history_deletes(target_relation, offsets) %}
    {#- {'deletes': the mode the stored history was built with, as recorded, or none for one built before it was;
         'in_comment': the mode a Databend history built when it was kept in the comment holds there, or none}. -#}
    {{ return(adapter.dispatch('stored_history_deletes', 'cdc_merge')(target_relation, offsets)) }}
{% endmacro %}

{% macro spark__stored_history_deletes(target_relation, offsets) %}
    {% for row in run_query("show tblproperties " ~ target_relation).rows if row['key'] == 'cdc-merge.deletes' %}
        {{ return({'deletes': row['value'], 'in_comment': none}) }}
    {% endfor %}
    {{ return({'deletes': none, 'in_comment': none}) }}
{% endmacro %}

{% macro databend__stored_history_deletes(target_relation, offsets) %}
    {% set recorded = cdc_merge.recorded_table_setting(offsets, target_relation, 'deletes') %}
    {% if recorded is not none %}
        {{ return({'deletes': recorded, 'in_comment': none}) }}
    {% endif %}
    {% set rows = run_query("select comment from system.tables where database = '" ~ target_relation.schema
        ~ "' and name = '" ~ target_relation.identifier ~ "'").rows %}
    {% set comment = (rows[0]['comment'] or '') if rows | length else '' %}
    {{ return({'deletes': none,
               'in_comment': comment[('cdc-merge.deletes=' | length):] if comment.startswith('cdc-merge.deletes=') else none}) }}
{% endmacro %}


{% macro record_history_deletes(target_relation, offsets, deletes, created=false, clear_comment=false) %}
    {#- Records the mode: before a new history is created (created: the create statement records it) or on a stored one
        built before it was recorded; clear_comment: the comment held it (databend__stored_history_deletes). -#}
    {{ return(adapter.dispatch('record_history_deletes', 'cdc_merge')(target_relation, offsets, deletes, created, clear_comment)) }}
{% endmacro %}

{% macro spark__record_history_deletes(target_relation, offsets, deletes, created, clear_comment) %}
    {#- A new history gets the property from spark__create_history_sql. -#}
    {% if not created %}
        {% do run_query("alter table " ~ target_relation ~ " set tblproperties ('cdc-merge.deletes' = '" ~ deletes ~ "')") %}
    {% endif %}
{% endmacro %}

{% macro databend__record_history_deletes(target_relation, offsets, deletes, created, clear_comment) %}
    {#- Recorded before a new history is created, so that no history exists without its mode. -#}
    {% do cdc_merge.record_table_setting(offsets, target_relation, 'deletes', deletes) %}
    {% if clear_comment %}
        {#- persist_docs, where the model asks for it, writes the description at the end of the run. -#}
        {% do run_query("alter table " ~ target_relation ~ " comment = ''") %}
    {% endif %}
{% endmacro %}


{% macro empty_history_sql(model_sql, columns) %}
    select
        {%- for column in columns %}
        {{ column }},
        {%- endfor %}
        cast(null as timestamp) as valid_from,
        cast(null as timestamp) as valid_to,
        cast(null as boolean) as is_current,
        cast(null as boolean) as is_deleted,
        _cdc_key,
        _cdc_seq,
        _cdc_source_ts,
        _cdc_seq as _cdc_updated_seq,
        cast(null as string) as _cdc_unsent_columns
    from ({{ model_sql }}) as model_output
    limit 0
{% endmacro %}


{% macro create_history_deletes_sql(deletes_relation) %}
    {{ return(adapter.dispatch('create_history_deletes_sql', 'cdc_merge')(deletes_relation)) }}
{% endmacro %}

{% macro spark__create_history_deletes_sql(deletes_relation) %}
    create table if not exists {{ deletes_relation }} (
        _cdc_key string,
        _cdc_seq string,
        _cdc_source_ts timestamp
    )
    using iceberg
    tblproperties ('format-version' = '2', {{ cdc_merge.metadata_log_tblproperties() }})
{% endmacro %}

{% macro databend__create_history_deletes_sql(deletes_relation) %}
    create table if not exists {{ deletes_relation }} (
        _cdc_key string null,
        _cdc_seq string null,
        _cdc_source_ts timestamp null
    )
{% endmacro %}


{% macro add_unsent_columns_column_sql(target_relation) %}
    {{ return(adapter.dispatch('add_unsent_columns_column_sql', 'cdc_merge')(target_relation)) }}
{% endmacro %}

{% macro spark__add_unsent_columns_column_sql(target_relation) %}
    alter table {{ target_relation }} add columns (_cdc_unsent_columns string)
{% endmacro %}

{% macro databend__add_unsent_columns_column_sql(target_relation) %}
    alter table {{ target_relation }} add column _cdc_unsent_columns string null
{% endmacro %}
