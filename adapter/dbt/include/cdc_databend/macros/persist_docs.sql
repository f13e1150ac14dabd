{#-
    dbt's persist_docs on Databend, which dbt-databend-cloud lacks: the model's description as the
    table's comment. cdc_merge keeps nothing of its own in a comment (cdc_merge_table_settings).
-#}

{% macro cdc_databend__alter_relation_comment(relation, relation_comment) -%}
    alter table {{ relation }} comment = '{{ relation_comment | replace("\\", "\\\\") | replace("'", "''") }}'
{%- endmacro %}


{#-
    A column's comment can only be set on Databend with its type restated (alter table ... modify
    column c <type> comment ...), which could change the type: column descriptions are not persisted.
-#}
{% macro cdc_databend__alter_column_comment(relation, column_dict) -%}
    {% if column_dict.values() | selectattr('description') | list | length %}
        {% do exceptions.warn("persist_docs on " ~ relation ~ ": column descriptions are not persisted on Databend"
            ~ " (only the model's description, as the table's comment)") %}
    {% endif %}
{%- endmacro %}
