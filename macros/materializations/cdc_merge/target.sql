{#
    The mirror and, with hard deletes, its tombstones: the newest delete per key, so
    that an older event landing late cannot bring a deleted row back. Both are created
    here; a stored mirror's columns follow the model's in schema_change.sql.
#}

{% macro tombstones_relation(target_relation) %}
    {{ return(target_relation.incorporate(path={'identifier': target_relation.identifier ~ '__cdc_tombstones'})) }}
{% endmacro %}


{% macro loadable_mirror(existing_relation) %}
    {#- The stored mirror, or none when there is none to apply to: it is then built from the start of the log. -#}
    {{ return(adapter.dispatch('loadable_mirror', 'cdc_merge')(existing_relation)) }}
{% endmacro %}

{% macro default__loadable_mirror(existing_relation) %}
    {{ return(existing_relation) }}
{% endmacro %}

{% macro spark__loadable_mirror(existing_relation) %}
    {#- A Hadoop catalog lists a table whose CREATE was killed half way, and cannot load it. -#}
    {% if existing_relation is none or existing_relation.is_view or not cdc_merge.in_process_session()
        or adapter.cdc_table_loads(existing_relation) %}
        {{ return(existing_relation) }}
    {% endif %}
    {% do exceptions.warn("cdc_merge " ~ existing_relation ~ ": listed by the catalog but without a committed version"
        ~ " (a process killed while creating it); rebuilt from the start of the raw log.") %}
    {{ return(none) }}
{% endmacro %}


{% macro merge_on_read_tblproperties(cfg, own={}) -%}
    {#-
        Iceberg format 2, merge-on-read, old metadata files deleted on commit (metadata_log.sql), then
        the model's table_properties, which may override any of them: mirrors and histories alike; own: the materialization's.
    -#}
    {%- set properties = {
        'format-version': '2',
        'write.delete.mode': 'merge-on-read',
        'write.update.mode': 'merge-on-read',
        'write.merge.mode': 'merge-on-read',
    } -%}
    {%- do properties.update(cdc_merge.metadata_log_properties()) -%}
    {%- do properties.update(cfg.table_properties) -%}
    {%- do properties.update(own) -%}
    tblproperties (
        {%- for name, value in properties.items() %}
        '{{ name }}' = '{{ value }}'{{ ',' if not loop.last }}
        {%- endfor %}
    )
{%- endmacro %}


{% macro create_mirror_sql(target_relation, source_view, columns, cfg) %}
    {{ return(adapter.dispatch('create_mirror_sql', 'cdc_merge')(target_relation, source_view, columns, cfg)) }}
{% endmacro %}

{% macro seq_bounds_properties() %}
    {#-
        Iceberg keeps string bounds truncated to 16 characters by default, which no seq fits in:
        _cdc_seq's whole bounds let a run know the newest seq a mirror or its tombstones hold from
        their manifests, without a query (raw_range_methods.py, _fold_is_newer_than_stored).
    -#}
    {{ return({'write.metadata.metrics.column._cdc_seq': 'full'}) }}
{% endmacro %}

{% macro keep_seq_bounds_whole(relation) %}
    {#-
        Maintenance of a mirror or tombstones table created before its CREATE set
        seq_bounds_properties: files written from then on, compaction's included, keep whole bounds.
        Files compaction leaves alone keep their cut ones, so until they are rewritten a run may still
        query the newest seq (their bound, rounded up, lies above the seqs sharing its first 16 characters).
    -#}
    {% set added = cdc_merge.set_missing_table_properties(relation, cdc_merge.seq_bounds_properties()) %}
    {% if added %}
        {{ log("cdc_merge maintenance " ~ relation ~ ": _cdc_seq's bounds now kept whole ("
            ~ cdc_merge.metadata_log_tblproperties(added) ~ ")", info=True) }}
    {% endif %}
    {{ return(added) }}
{% endmacro %}

{% macro spark__create_mirror_sql(target_relation, source_view, columns, cfg) %}
    create table {{ target_relation }}
    using iceberg
    {{ cdc_merge.merge_on_read_tblproperties(cfg, cdc_merge.seq_bounds_properties()) }}
    as
    {{ cdc_merge.empty_mirror_sql(source_view, columns, cfg) }}
{% endmacro %}


{% macro databend__create_mirror_sql(target_relation, source_view, columns, cfg) %}
    create table {{ target_relation }} as
    {{ cdc_merge.empty_mirror_sql(source_view, columns, cfg) }}
{% endmacro %}


{% macro empty_mirror_sql(source_view, columns, cfg) %}
    {#- The mirror's columns, typed by the model's casts: the model's columns, then the bookkeeping. -#}
    select
        {%- for column in columns %}
        {{ column }},
        {%- endfor %}
        {%- if cfg.deletes == 'soft' %}
        false as _cdc_deleted,
        {%- endif %}
        _cdc_key,
        _cdc_seq,
        _cdc_source_ts
    from {{ source_view }}
    limit 0
{% endmacro %}


{% macro create_tombstones_sql(tombstones) %}
    {{ return(adapter.dispatch('create_tombstones_sql', 'cdc_merge')(tombstones)) }}
{% endmacro %}

{% macro spark__create_tombstones_sql(tombstones) %}
    create table if not exists {{ tombstones }} (
        _cdc_key string,
        _cdc_seq string,
        _cdc_source_ts timestamp
    )
    using iceberg
    tblproperties (
        'format-version' = '2',
        'write.merge.mode' = 'merge-on-read',
        {%- for name, value in cdc_merge.seq_bounds_properties().items() %}
        '{{ name }}' = '{{ value }}',
        {%- endfor %}
        {{ cdc_merge.metadata_log_tblproperties() }}
    )
{% endmacro %}

{% macro databend__create_tombstones_sql(tombstones) %}
    create table if not exists {{ tombstones }} (
        _cdc_key string null,
        _cdc_seq string null,
        _cdc_source_ts timestamp null
    )
{% endmacro %}

