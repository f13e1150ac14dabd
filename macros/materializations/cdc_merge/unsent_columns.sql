{#
    Unsent columns: a column an update sent as a TOAST placeholder takes the value of the key's
    newest older event of the batch, or the stored row's (unavailable_values.sql, write.sql). When
    the event that sent its value is older than that, and arrives later (a file landed late, or files
    landed out of order and applied in different chunks), the apply skips it, as every event older
    than the stored row. So each such column is kept in <mirror>__cdc_unsent: the key, the column,
    the seq of the event its value came from (filled_seq; '' for none) and the seq of the row it
    belongs to (row_seq). An event older than that row and newer than filled_seq that sent the
    column then fills it, and is its filled_seq from then on.

    The table is appended to only, as the raw log: a key's entry is the newest filled_seq of its row
    and column, and an entry whose row_seq is not the mirror row's seq any more is dead (a newer
    event replaced the row), so a run that dies half way and runs again reads the same. Both steps run
    around a chunk's batches (apply_chunk.sql): record_unsent_columns (here) before them, for the keys
    whose newest event of the chunk lacks columns and will replace the stored row; fill_unsent_columns
    (unsent_fills.sql) after them, only where the chunk holds an event older than what the mirror held
    before it.
    The events go through the model's SQL (the batch view holding several events of a key here) so
    that columns are the model's, as the apply's own.
#}

{% macro unsent_relation(target_relation) %}
    {{ return(target_relation.incorporate(path={'identifier': target_relation.identifier ~ '__cdc_unsent'})) }}
{% endmacro %}


{% macro existing_unsent_relation(target_relation) %}
    {#- The mirror's unsent-columns table, or none while it has none (dbt's relation cache, which create_unsent_table adds to). -#}
    {% set relation = cdc_merge.unsent_relation(target_relation) %}
    {{ return(relation if load_cached_relation(relation) is not none else none) }}
{% endmacro %}


{% macro create_unsent_table(relation) %}
    {% do run_query(adapter.dispatch('create_unsent_table_sql', 'cdc_merge')(relation)) %}
    {% do adapter.cache_added(relation) %}
{% endmacro %}

{% macro spark__create_unsent_table_sql(relation) %}
    create table if not exists {{ relation }} (
        _cdc_key string,
        column_name string,
        filled_seq string,
        row_seq string
    )
    using iceberg
    tblproperties ('format-version' = '2', {{ cdc_merge.metadata_log_tblproperties() }})
{% endmacro %}

{% macro databend__create_unsent_table_sql(relation) %}
    create table if not exists {{ relation }} (
        _cdc_key string null,
        column_name string null,
        filled_seq string null,
        row_seq string null
    )
{% endmacro %}


{% macro record_unsent_columns(target_relation, tombstones, chunk_view, cfg, model_sql, columns, batch_view, facts, batch_view_sql) %}
    {#- Before the chunk's batches: each placeholder of a key's newest event that will replace the stored row, with where its value comes from. -#}
    {% set plan = facts if facts is not none else run_query(cdc_merge.bucket_plan_sql(chunk_view, cfg.source_table, 0, 1)).rows[0] %}
    {% if not adapter.cdc_records_unsent(plan['placeholder_events']) %}
        {{ return(none) }}
    {% endif %}
    {% set kept = cdc_merge.existing_unsent_relation(target_relation) %}
    {% set images = cdc_merge.unsent_images(batch_view, chunk_view, cfg, kept, true, model_sql, plan, batch_view_sql) %}
    {% set unsent = kept if kept is not none else cdc_merge.unsent_relation(target_relation) %}
    {% if kept is none %}
        {% do cdc_merge.create_unsent_table(unsent) %}
    {% endif %}
    {% do run_query(cdc_merge.record_unsent_columns_sql(unsent, kept, target_relation, tombstones, images, columns)) %}
    {% do cdc_merge.drop_temporary_view(images) %}
{% endmacro %}


{% macro unsent_images(batch_view, chunk_view, cfg, unsent, with_placeholders, model_sql, plan, batch_view_sql) %}
    {#-
        The events of unsent_events_sql as the batch view, and the model's rows of them as a
        view (its name), each computed once (kept_view_rows): the statements after read them several times.
    -#}
    {% set small = adapter.cdc_unsent_rows_in_driver(plan['events']) %}
    {% do cdc_merge.kept_view_rows(batch_view, cdc_merge.unsent_events_sql(chunk_view, cfg.source_table, unsent, with_placeholders), small) %}
    {% set batch_view_sql.value = none %}
    {% set images = batch_view ~ '__unsent_images' %}
    {% do cdc_merge.kept_view_rows(images, 'select * from (' ~ model_sql ~ ') as model_output', small) %}
    {{ return(images) }}
{% endmacro %}


{% macro kept_view_rows(view, sql, small) %}
    {{ return(adapter.dispatch('kept_view_rows', 'cdc_merge')(view, sql, small)) }}
{% endmacro %}

{% macro spark__kept_view_rows(view, sql, small) %}
    {#- Computed now into a checkpoint, or the driver's memory when small (mirror_write_methods.py), where the session is in this process. -#}
    {% if adapter.create_checkpoint_view(view, sql, none, small) is none %}
        {% do run_query('create or replace temporary view ' ~ view ~ ' as ' ~ sql) %}
    {% endif %}
{% endmacro %}

{% macro databend__kept_view_rows(view, sql, small) %}
    {% do run_query('create or replace view ' ~ view ~ ' as ' ~ sql) %}
{% endmacro %}


{% macro record_unsent_columns_sql(unsent, kept, target_relation, tombstones, images, columns) %}
    {#-
        An entry for each column a key's newest event did not send, where that event is newer than the
        stored row and tombstone (base): its value is that of the newest older event of the chunk newer
        than base that sent it (a delete sends none: null), else the stored row's (its kept entry's
        filled_seq, else the row's seq), else none ('', or the tombstone's seq: nothing older than a
        delete can be the row's). images: the view of the chunk's events of those keys through the model.
    -#}
    insert into {{ unsent }} (_cdc_key, column_name, filled_seq, row_seq)
    select * from (
        with

        unsent_stored as (
            select
                _cdc_key,
                _cdc_seq,
                _cdc_seq as _cdc_row_seq
            from {{ target_relation }}
            where _cdc_key in (select _cdc_key from {{ images }})
            {%- if tombstones is not none %}
            union all
            select
                _cdc_key,
                _cdc_seq,
                cast(null as string) as _cdc_row_seq
            from {{ tombstones }}
            where _cdc_key in (select _cdc_key from {{ images }})
            {%- endif %}
        ),

        unsent_stored_seqs as (
            select
                _cdc_key,
                max(_cdc_seq) as _cdc_base_seq,
                max(_cdc_row_seq) as _cdc_stored_seq
            from unsent_stored
            group by _cdc_key
        ),

        {#- Each event with its key's newest seq, and for each column the newest seq newer than base of an event that sent it. #}
        unsent_windowed as (
            select
                change.*,
                coalesce(stored._cdc_base_seq, '') as _cdc_base_seq,
                stored._cdc_stored_seq,
                max(change._cdc_seq) over (partition by change._cdc_key) as _cdc_newest_seq,
                {%- for column in columns %}
                max(case
                    when change._cdc_seq > coalesce(stored._cdc_base_seq, '')
                        and (change._cdc_action = 'delete' or not {{ cdc_merge.is_unavailable_sql(column) }})
                        then change._cdc_seq
                end) over (partition by change._cdc_key) as _cdc_sent_{{ loop.index }}{{ ',' if not loop.last }}
                {%- endfor %}
            from {{ images }} as change
            left join unsent_stored_seqs as stored
                on change._cdc_key = stored._cdc_key
        ),

        unsent_applied as (
            select *
            from unsent_windowed as change
            where
                _cdc_seq = _cdc_newest_seq
                and _cdc_seq > _cdc_base_seq
                and {{ cdc_merge.any_unavailable_sql('change._cdc_unavailable') }}
        ),

        unsent_model_columns as (
            {%- for column in columns %}
            select '{{ column }}' as column_name{{ ' union all' if not loop.last }}
            {%- endfor %}
        ),

        {%- if kept is not none %}

        unsent_kept as (
            select
                _cdc_key,
                column_name,
                row_seq,
                max(filled_seq) as filled_seq
            from {{ kept }}
            where _cdc_key in (select _cdc_key from {{ images }})
            group by _cdc_key, column_name, row_seq
        ),
        {%- endif %}

        unsent_entries as (
            select
                change._cdc_key,
                model_column.column_name,
                coalesce(
                    case model_column.column_name
                        {%- for column in columns %}
                        when '{{ column }}' then change._cdc_sent_{{ loop.index }}
                        {%- endfor %}
                    end,
                    {{- ' kept.filled_seq,' if kept is not none }}
                    change._cdc_base_seq
                ) as filled_seq,
                change._cdc_seq as row_seq
            from unsent_applied as change
            cross join unsent_model_columns as model_column
            {%- if kept is not none %}
            left join unsent_kept as kept
                on change._cdc_key = kept._cdc_key and model_column.column_name = kept.column_name and kept.row_seq = change._cdc_stored_seq
            {%- endif %}
            where
                {%- for column in columns %}
                (model_column.column_name = '{{ column }}' and {{ cdc_merge.is_unavailable_sql(column) }}){{ ' or' if not loop.last }}
                {%- endfor %}
        )

        select * from unsent_entries
    ) as entries
{% endmacro %}


{% macro unsent_events_sql(chunk_view, source_table, unsent, with_placeholders) %}
    {#-
        The batch view's columns of the chunk's events of the keys that have kept unsent columns (unsent)
        or, with with_placeholders, an event with placeholders: every event of such a key, one copy of
        each seq, as a history's batch reads them (cdc_history/batch.sql).
    -#}
    {%- set keys = [] -%}
    {%- if with_placeholders -%}
        {%- do keys.append('select key from table_events where ' ~ cdc_merge.has_unavailable_sql('raw_data')) -%}
    {%- endif -%}
    {%- if unsent is not none -%}
        {%- do keys.append('select _cdc_key as key from ' ~ unsent) -%}
    {%- endif -%}
    {{ return(cdc_merge.history_batch_events_sql(chunk_view, source_table, 0, 1, keys | join(' union '))) }}
{% endmacro %}


{% macro remove_dead_unsent_entries(target_relation) %}
    {#-
        Maintenance: the entries whose row the mirror no longer holds (a newer event replaced it, or it
        was deleted), found by their row_seq; how many. An entry of a row that a run which died before
        writing it recorded goes too: running the batch again records it again.
    -#}
    {% set unsent = cdc_merge.unsent_relation(target_relation) %}
    {% if adapter.get_relation(database=unsent.database, schema=unsent.schema, identifier=unsent.identifier) is none %}
        {{ return(0) }}
    {% endif %}
    {% set count_sql = 'select count(*) as entries from ' ~ unsent %}
    {% set before = run_query(count_sql).rows[0]['entries'] | int %}
    {% do run_query('delete from ' ~ unsent ~ ' where row_seq not in (select _cdc_seq from ' ~ target_relation ~ ')') %}
    {{ return(before - (run_query(count_sql).rows[0]['entries'] | int)) }}
{% endmacro %}
