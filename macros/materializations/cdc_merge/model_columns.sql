{#
    The model's output columns as its last changed SQL gave them, kept with the model's checksum
    (idle.sql remember_model_checksum; only where the mirror reads snapshots, not a Databend stream): what the data test cdc_unmapped_columns counts as read. The
    mirror's own columns are no answer, for a column the model stopped selecting stays in the mirror
    (on_schema_change), and a source column the model no longer reads looked read.
#}

{% macro model_columns_setting() %}
    {{ return('cdc-merge.model-columns') }}
{% endmacro %}


{% macro remember_model_columns(target_relation, offsets, model_columns) %}
    {{ return(adapter.dispatch('remember_model_columns', 'cdc_merge')(target_relation, offsets, model_columns)) }}
{% endmacro %}

{% macro spark__remember_model_columns(target_relation, offsets, model_columns) %}
    {#- A table property, set with the checksum (idle.sql spark__store_model_checksum_sql). -#}
{% endmacro %}

{% macro databend__remember_model_columns(target_relation, offsets, model_columns) %}
    {#- Databend keeps no table properties of a user's choosing: a row of cdc_merge_table_settings. -#}
    {% do cdc_merge.record_table_setting(offsets, target_relation, cdc_merge.model_columns_setting(), model_columns | join(',')) %}
{% endmacro %}


{% macro remembered_model_columns(target_relation, offsets) %}
    {#- The columns remember_model_columns kept for the mirror, lowercased, or none (a mirror whose model has not changed since). -#}
    {% set value = adapter.dispatch('remembered_model_columns', 'cdc_merge')(target_relation, offsets) %}
    {{ return(none if value is none else value.split(',') | map('lower') | list) }}
{% endmacro %}

{% macro spark__remembered_model_columns(target_relation, offsets) %}
    {% for row in run_query("show tblproperties " ~ target_relation).rows if row['key'] == cdc_merge.model_columns_setting() %}
        {{ return(row['value']) }}
    {% endfor %}
    {{ return(none) }}
{% endmacro %}

{% macro databend__remembered_model_columns(target_relation, offsets) %}
    {{ return(cdc_merge.recorded_table_setting(offsets, target_relation, cdc_merge.model_columns_setting())) }}
{% endmacro %}
