{#
    The model's description as the table's comment, where persist_docs asks for it: a history keeps
    nothing of cdc_merge's in its comment (Spark: table properties cdc-merge.*; Databend:
    cdc_merge_table_settings, table_settings.sql), nor does a mirror on Spark; a Databend mirror's
    comment holds its model's checksum (idle.sql), so its description is not persisted there.
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


{% macro persist_mirror_docs(relation, model) %}
    {#- A mirror's description where persist_docs asks for it: on each run, idle or not, so a description
        added while the source is quiet arrives too (Spark writes only a comment that differs). -#}
    {{ return(adapter.dispatch('persist_mirror_docs', 'cdc_merge')(relation, model)) }}
{% endmacro %}

{% macro default__persist_mirror_docs(relation, model) %}
    {% do cdc_merge.persist_model_docs(relation, model) %}
{% endmacro %}

{% macro databend__persist_mirror_docs(relation, model) %}
    {#- A Databend mirror's comment holds its model's checksum (idle.sql): its description is not persisted there. -#}
    {% if config.persist_relation_docs() and model.description %}
        {% do exceptions.warn("persist_docs on " ~ relation ~ ": a mirror's description is not persisted on Databend"
            ~ " (its comment holds the model's checksum)") %}
    {% endif %}
    {% do persist_docs(relation, model, for_relation=false) %}
{% endmacro %}
