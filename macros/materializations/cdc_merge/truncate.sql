{#
    Truncates of the source table, applied as a barrier in source order. A truncate lands as one
    raw event with action 'truncate' and the table's key '[]' (python_jobs/formats/records.py), which the
    dedup leaves out (table_events_cte). Before a chunk's batches are applied, its newest truncate
    removes every mirror row older than it and becomes the mirror's truncate watermark, kept in
    cdc_merge_truncates (one appended row per truncate, next to cdc_merge_offsets). With soft deletes
    it applies after the batches instead: each truncate of the chunk, oldest first, marks the rows
    older than it deleted, as if each had come in a chunk of its own. No event at or below the
    watermark is applied (after_truncate_sql), so events after the truncate apply normally and an
    older event arriving late brings no truncated row back. Applying a chunk again finds nothing older to remove and changes nothing.
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


{% macro take_truncates(cfg, from_relation, to_relation, replace_own=true) %}
    {#- A rebuild's truncates as the mirror's (rebuild_aside.sql): copied first, the mirror's own deleted after
        (replace_own), so that its watermark is never lower in between. -#}
    {% set relation = cdc_merge.truncates_relation(cfg) %}
    {% if load_relation(relation) is none %}
        {{ return(none) }}
    {% endif %}
    {% do run_query("insert into " ~ relation ~ " select '" ~ to_relation ~ "', truncate_seq, truncate_source_ts, rows_truncated,"
        ~ " committed_at, '" ~ invocation_id ~ "' from " ~ relation ~ " where target_table = '" ~ from_relation ~ "'") %}
    {% if replace_own %}
        {% do cdc_merge.delete_from_shared_table(relation, "delete from " ~ relation ~ " where target_table = '" ~ to_relation
            ~ "' and invocation_id <> '" ~ invocation_id ~ "'") %}
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


{% macro chunk_truncates_sql(changes_view, source_table, watermark) %}
    {#- Each truncate of the chunk newer than the watermark, for a soft-delete mirror's marks. -#}
    select
        seq as truncate_seq,
        cast(source_ts as string) as truncate_source_ts
    from {{ changes_view }}
    where
        _change_type = 'INSERT'
        and table_name = '{{ source_table }}'
        and action = 'truncate'
        {% if watermark is not none %}and seq > '{{ watermark }}'{% endif %}
{% endmacro %}


{% macro chunk_truncate_plan(changes_view, cfg, watermark, chunk_plan=none) %}
    {#-
        Whether the chunk's newest truncate applies (newer than watermark), and when: before the chunk's
        events, or after them with soft deletes (python_jobs/apply/truncate_plan.py). chunk_plan (raw_log.sql):
        the chunk's truncate as one pass over the range found it, instead of a query.
    -#}
    {% set found = chunk_plan if chunk_plan is not none else run_query(cdc_merge.chunk_truncate_sql(changes_view, cfg.source_table)).rows[0] %}
    {% set plan = adapter.cdc_truncate_plan(found, watermark, cfg.deletes, model.name) %}
    {% if plan.error %}
        {% do exceptions.raise_compiler_error(plan.error) %}
    {% endif %}
    {{ return(plan) }}
{% endmacro %}


{% macro apply_chunk_truncates(target_relation, tombstones, changes_view, cfg, plan, truncated, chunk_stats) %}
    {#-
        A plan of chunk_truncate_plan that applies: the mirror's older rows removed (or marked deleted,
        at each truncate of the chunk in turn), older tombstones dropped (the watermark covers them), the
        watermark recorded. truncated (the run's: seq, rows) and chunk_stats' deletes are added to in place.
    -#}
    {% set truncate_seq, source_ts_sql = plan.seq, plan.source_ts_sql %}
    {% set rows = namespace(count=0) %}
    {% if plan.soft %}
        {% set marks = adapter.cdc_truncate_marks(run_query(cdc_merge.chunk_truncates_sql(changes_view, cfg.source_table, truncated.seq)).rows,
            truncated.seq, model.name) %}
        {% if marks.error %}
            {% do exceptions.raise_compiler_error(marks.error) %}
        {% endif %}
        {% for mark in marks.marks %}
            {% set older = run_query('select count(*) as older_rows from ' ~ target_relation ~ ' where ' ~ mark.older_rows).rows[0]['older_rows'] | int %}
            {% if older > 0 %}
                {% do run_query('update ' ~ target_relation ~ " set _cdc_deleted = true, _cdc_seq = '" ~ mark.seq
                    ~ "', _cdc_source_ts = " ~ mark.source_ts_sql ~ ' where ' ~ mark.older_rows) %}
            {% endif %}
            {% set rows.count = rows.count + older %}
            {{ log("cdc_merge " ~ target_relation ~ ": truncate of " ~ cfg.source_table ~ " at " ~ mark.seq ~ ": "
                ~ older ~ " older rows marked deleted", info=True) }}
        {% endfor %}
    {% else %}
        {% set rows.count = run_query('select count(*) as older_rows from ' ~ target_relation ~ ' where ' ~ plan.older_rows).rows[0]['older_rows'] | int %}
        {% if rows.count > 0 %}
            {% do run_query('delete from ' ~ target_relation ~ ' where ' ~ plan.older_rows) %}
        {% endif %}
        {{ log("cdc_merge " ~ target_relation ~ ": truncate of " ~ cfg.source_table ~ " at " ~ truncate_seq ~ ": "
            ~ rows.count ~ " older rows removed", info=True) }}
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
            {{ rows.count }} as rows_truncated,
            current_timestamp() as committed_at,
            '{{ invocation_id }}' as invocation_id
    {% endset %}
    {% do run_query(record_sql) %}
    {% set truncated.seq = truncate_seq %}
    {% set truncated.rows = truncated.rows + rows.count %}
    {#- Rows a truncate removes are the run's deletes too: the mirror's rows add up from its runs' counts. -#}
    {% do chunk_stats.update({'deleted': chunk_stats.deleted + rows.count}) %}
{% endmacro %}


{% macro after_truncate_sql(model_sql, watermark) %}
    {#- The model's rows newer than the truncate watermark: older events were truncated away. -#}
    {% if watermark is none %}
        {{ return(model_sql) }}
    {% endif %}
    {{ return("select * from (" ~ model_sql ~ ") as model_output where _cdc_seq > '" ~ watermark ~ "'") }}
{% endmacro %}
