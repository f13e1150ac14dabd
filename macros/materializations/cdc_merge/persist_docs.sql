{#
    The model's description as the table's comment, where persist_docs asks for it: nothing of
    cdc_merge's is kept in a comment (Spark: table properties cdc-merge.*; Databend:
    cdc_merge_table_settings, table_settings.sql), so it is the user's.
#}

{% macro persist_model_docs(relation, model) %}
    {{ return(adapter.dispatch('persist_model_docs', 'cdc_merge')(relation, model)) }}
{% endmacro %}

{% macro default__persist_model_docs(relation, model) %}
    {% do persist_docs(relation, model) %}
{% endmacro %}

{% macro spark__persist_model_docs(relation, model) %}
    {#- dbt-spark leaves the table's comment to its create statement; a table kept across runs gets it here, when it
        differs (each change is a commit). -#}
    {% if config.persist_relation_docs() and model.description %}
        {#- show tblproperties leaves out a v2 table's reserved properties, the comment among them. -#}
        {% set stored = run_query("describe table extended " ~ relation).rows | selectattr('col_name', 'equalto', 'Comment') | list %}
        {% if not stored | length or stored[0]['data_type'] != model.description %}
            {% do run_query("comment on table " ~ relation ~ " is '"
                ~ model.description | replace("\\", "\\\\") | replace("'", "\\'") ~ "'") %}
        {% endif %}
    {% endif %}
    {% do persist_docs(relation, model, for_relation=false) %}
{% endmacro %}
