{#
    Truncates of the source table, applied as a barrier in source order. A truncate lands as one
    raw event with action 'truncate' and the table's key '[]' (python_jobs/formats/records.py), which the
    dedup leaves out (table_events_cte). Before a chunk's batches are applied, its newest truncate
    removes every mirror row older than it (soft deletes: marks them deleted) and becomes the
    mirror's truncate watermark, kept in cdc_merge_truncates (one appended row per truncate, next
    to cdc_merge_offsets). No event at or below the watermark is applied (after_truncate_sql), so
    events of the chunk after the truncate apply normally and an older event arriving late brings
    no truncated row back. Applying a chunk again finds nothing older to remove and changes nothing.
#}

{% macro truncates_relation(cfg) %}
    {{ return(api.Relation.create(schema=cfg.offsets_schema, identifier='cdc_merge_truncates', type='table')) }}
{% endmacro %}


{% macro create_truncates_table(relation) %}
    {{ return(adapter.dispatch('create_truncates_table', 'cdc_merge')(relation)) }}
{% endmacro %}

{% macro spark__create_truncates_table(relation) %}
    create table if not exists {{ relation }} (
        target_table string,
        truncate_seq string,
        truncate_source_ts timestamp,
        rows_truncated bigint,
        committed_at timestamp,
        invocation_id string
    )
    using iceberg
    tblproperties ('format-version' = '2', {{ cdc_merge.metadata_log_tblproperties() }})
{% endmacro %}

{% macro databend__create_truncates_table(relation) %}
    create table if not exists {{ relation }} (
        target_table string null,
        truncate_seq string null,
        truncate_source_ts timestamp null,
        rows_truncated bigint null,
        committed_at timestamp null,
        invocation_id string null
    )
{% endmacro %}


{% macro truncate_watermark(cfg, target_relation) %}
    {#- The seq of the newest truncate applied to the mirror, or none. -#}
    {% set relation = cdc_merge.truncates_relation(cfg) %}
    {% if load_relation(relation) is none %}
        {{ return(none) }}
    {% endif %}
    {% set rows = run_query("select coalesce(max(truncate_seq), '') as truncate_seq from " ~ relation
        ~ " where target_table = '" ~ target_relation ~ "'").rows %}
    {{ return(rows[0]['truncate_seq'] if rows and rows[0]['truncate_seq'] else none) }}
{% endmacro %}


{% macro forget_truncates(cfg, target_relation) %}
    {#- A mirror rebuilt from the start of the raw log finds its truncates again there. The table is every mirror's and
        history's: models built at once in one process delete from it one at a time (three new histories' deletes of
        no row failed the third: "the table has been concurrently modified"). -#}
    {% set relation = cdc_merge.truncates_relation(cfg) %}
    {% if load_relation(relation) is not none %}
        {% do cdc_merge.delete_from_shared_table(relation, "delete from " ~ relation ~ " where target_table = '" ~ target_relation ~ "'") %}
    {% endif %}
{% endmacro %}


{% macro chunk_truncate_sql(changes_view, source_table) %}
    select
        coalesce(max(seq), '') as truncate_seq,
        coalesce(cast(max(source_ts) as string), '') as truncate_source_ts
    from {{ changes_view }}
    where
        _change_type = 'INSERT'
        and table_name = '{{ source_table }}'
        and action = 'truncate'
{% endmacro %}


{% macro apply_chunk_truncates(target_relation, tombstones, changes_view, cfg, watermark, chunk_plan=none) %}
    {#-
        The newest truncate of the chunk, if newer than watermark: the mirror's older rows removed
        (or marked deleted), older tombstones dropped (the watermark covers them), the watermark
        recorded. Returns {'seq': the watermark now, 'rows': rows removed}. chunk_plan (raw_log.sql):
        the chunk's truncate as one pass over the range found it, instead of a query. Whether it
        applies and what it writes: python_jobs/apply/truncate_plan.py.
    -#}
    {% set found = chunk_plan if chunk_plan is not none else run_query(cdc_merge.chunk_truncate_sql(changes_view, cfg.source_table)).rows[0] %}
    {% set plan = adapter.cdc_truncate_plan(found, watermark, cfg.deletes, model.name) %}
    {% if plan.error %}
        {% do exceptions.raise_compiler_error(plan.error) %}
    {% endif %}
    {% if plan.seq is none %}
        {{ return({'seq': watermark, 'rows': 0}) }}
    {% endif %}
    {% set truncate_seq, source_ts_sql, older = plan.seq, plan.source_ts_sql, plan.older_rows %}
    {% set rows = run_query('select count(*) as older_rows from ' ~ target_relation ~ ' where ' ~ older).rows[0]['older_rows'] | int %}
    {% if rows > 0 and plan.soft %}
        {% do run_query('update ' ~ target_relation ~ " set _cdc_deleted = true, _cdc_seq = '" ~ truncate_seq
            ~ "', _cdc_source_ts = " ~ source_ts_sql ~ ' where ' ~ older) %}
    {% elif rows > 0 %}
        {% do run_query('delete from ' ~ target_relation ~ ' where ' ~ older) %}
    {% endif %}
    {% if tombstones is not none %}
        {% do run_query('delete from ' ~ tombstones ~ " where _cdc_seq < '" ~ truncate_seq ~ "'") %}
    {% endif %}
    {% set relation = cdc_merge.truncates_relation(cfg) %}
    {% do run_query(cdc_merge.create_truncates_table(relation)) %}
    {% set record_sql %}
        insert into {{ relation }}
        select
            '{{ target_relation }}' as target_table,
            '{{ truncate_seq }}' as truncate_seq,
            {{ source_ts_sql }} as truncate_source_ts,
            {{ rows }} as rows_truncated,
            current_timestamp() as committed_at,
            '{{ invocation_id }}' as invocation_id
    {% endset %}
    {% do run_query(record_sql) %}
    {{ log("cdc_merge " ~ target_relation ~ ": truncate of " ~ cfg.source_table ~ " at " ~ truncate_seq ~ ": "
        ~ rows ~ " older rows " ~ ('marked deleted' if plan.soft else 'removed'), info=True) }}
    {{ return({'seq': truncate_seq, 'rows': rows}) }}
{% endmacro %}


{% macro after_truncate_sql(model_sql, watermark) %}
    {#- The model's rows newer than the truncate watermark: older events were truncated away. -#}
    {% if watermark is none %}
        {{ return(model_sql) }}
    {% endif %}
    {{ return("select * from (" ~ model_sql ~ ") as model_output where _cdc_seq > '" ~ watermark ~ "'") }}
{% endmacro %}
