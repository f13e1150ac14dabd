{#
    The second step of unsent columns (unsent_columns.sql): after a chunk's batches, its events older
    than a mirror row that sent a column the row keeps as unsent fill it, where the chunk may hold
    such an event (unsent_fill_may_apply, asked before the batches).
#}

{% macro unsent_fill_may_apply(target_relation, tombstones, chunk_view, cfg, facts) %}
    {#-
        Asked before the chunk's batches: whether it holds an event at or below the newest seq the mirror
        and its tombstones hold (unsent_columns.py): only such an event can fill a kept unsent column.
    -#}
    {% if cdc_merge.existing_unsent_relation(target_relation) is none %}
        {{ return(false) }}
    {% endif %}
    {% set oldest = facts.get('oldest_seq') if facts is not none else none %}
    {% if oldest is none %}
        {% set oldest = run_query(adapter.dispatch('oldest_event_seq_sql', 'cdc_merge')(chunk_view, cfg.source_table)).rows[0][0] %}
    {% endif %}
    {{ return(adapter.cdc_unsent_fill_may_apply(oldest, cdc_merge.stored_seqs(target_relation, tombstones))) }}
{% endmacro %}


{% macro stored_seqs(target_relation, tombstones) %}
    {#- The newest seq the mirror and its tombstones hold, or an upper bound of it (none: a table holds none). -#}
    {% set relations = [target_relation] + ([tombstones] if tombstones is not none else []) %}
    {% set bounds = adapter.dispatch('stored_seq_bounds', 'cdc_merge')(relations) %}
    {% if bounds is not none %}
        {{ return(bounds) }}
    {% endif %}
    {% set seqs = [] %}
    {% for relation in relations %}
        {% do seqs.append(run_query('select max(_cdc_seq) as seq from ' ~ relation).rows[0]['seq']) %}
    {% endfor %}
    {{ return(seqs) }}
{% endmacro %}

{% macro spark__stored_seq_bounds(relations) %}
    {#- From the manifests, without a statement, where the session is in this process (raw_range_methods.py). -#}
    {{ return(adapter.cdc_stored_seq_bounds(relations)) }}
{% endmacro %}

{% macro databend__stored_seq_bounds(relations) %}
    {{ return(none) }}
{% endmacro %}


{% macro fill_unsent_columns(target_relation, chunk_view, cfg, model_sql, columns, batch_view, batch_view_sql, may_fill, facts) %}
    {#- After the chunk's batches: the kept unsent columns its older events fill, newest first per column, one event per key and round. -#}
    {% set unsent = cdc_merge.existing_unsent_relation(target_relation) %}
    {% if unsent is none or not may_fill %}
        {{ return(0) }}
    {% endif %}
    {% set plan = facts if facts is not none else run_query(cdc_merge.bucket_plan_sql(chunk_view, cfg.source_table, 0, 1)).rows[0] %}
    {% set images = cdc_merge.unsent_images(batch_view, chunk_view, cfg, unsent, false, model_sql, plan, batch_view_sql) %}
    {% set fills_ctes = cdc_merge.unsent_fills_ctes(unsent, target_relation, images, columns) %}
    {% set found = run_query('with ' ~ fills_ctes ~ ' select count(*) as fills, coalesce(max(_cdc_round), 0) as rounds from unsent_ranked').rows[0] %}
    {#- Each round takes every key's oldest picked event; the picks are read again after it, as its entries changed them. -#}
    {% for round in range(found['rounds'] | int) %}
        {% do run_query(cdc_merge.merge_unsent_fills_sql(target_relation, fills_ctes, images, columns)) %}
        {% do run_query('insert into ' ~ unsent ~ ' (_cdc_key, column_name, filled_seq, row_seq) select * from (with ' ~ fills_ctes
            ~ ' select _cdc_key, column_name, _cdc_seq, row_seq from unsent_ranked where _cdc_round = 1) as fills') %}
    {% endfor %}
    {% do cdc_merge.drop_temporary_view(images) %}
    {% if (found['fills'] | int) > 0 %}
        {{ log("cdc_merge " ~ target_relation ~ ": " ~ found['fills'] ~ " unsent column values filled by older events", info=True) }}
    {% endif %}
    {{ return(found['fills'] | int) }}
{% endmacro %}


{% macro unsent_fills_ctes(unsent, target_relation, images, columns) %}
    {#-
        The CTEs whose last, unsent_ranked, holds for each kept unsent column of a mirror row (its entry's
        row_seq the row's seq) the newest event of images older than the row and newer than its
        filled_seq that sent it: the key, column, row_seq, that event's seq (_cdc_seq), and its round
        (_cdc_round: 1 for a key's oldest picked event).
    -#}
    unsent_live as (
        select
            unsent._cdc_key,
            unsent.column_name,
            unsent.row_seq,
            max(unsent.filled_seq) as filled_seq
        from {{ unsent }} as unsent
        inner join {{ target_relation }} as mirror
            on unsent._cdc_key = mirror._cdc_key and unsent.row_seq = mirror._cdc_seq
        where unsent._cdc_key in (select _cdc_key from {{ images }})
        group by unsent._cdc_key, unsent.column_name, unsent.row_seq
    ),

    unsent_picked as (
        select
            live._cdc_key,
            live.column_name,
            live.row_seq,
            max(change._cdc_seq) as _cdc_seq
        from unsent_live as live
        inner join {{ images }} as change
            on live._cdc_key = change._cdc_key
        where
            change._cdc_seq > live.filled_seq
            and change._cdc_seq < live.row_seq
            and (
                change._cdc_action = 'delete'
                {%- for column in columns %}
                or (live.column_name = '{{ column }}' and not {{ cdc_merge.is_unavailable_sql(column) }})
                {%- endfor %}
            )
        group by live._cdc_key, live.column_name, live.row_seq
    ),

    unsent_ranked as (
        select
            *,
            dense_rank() over (partition by _cdc_key order by _cdc_seq) as _cdc_round
        from unsent_picked
    )
{%- endmacro %}


{% macro merge_unsent_fills_sql(target_relation, fills_ctes, images, columns) %}
    {#- The first round's picks: the row keeps its seq, each picked column takes the event's value (null from a delete). -#}
    merge into {{ target_relation }} as mirror
    using (
        with

        {{ fills_ctes }},

        unsent_round_picks as (
            select
                _cdc_key,
                _cdc_seq,
                row_seq,
                {%- for column in columns %}
                max(case when column_name = '{{ column }}' then 1 else 0 end) as _cdc_fills_{{ loop.index }}{{ ',' if not loop.last }}
                {%- endfor %}
            from unsent_ranked
            where _cdc_round = 1
            group by _cdc_key, _cdc_seq, row_seq
        ),

        unsent_round as (
            select
                change.*,
                unsent_round_picks.row_seq as _cdc_row_seq,
                {%- for column in columns %}
                unsent_round_picks._cdc_fills_{{ loop.index }}{{ ',' if not loop.last }}
                {%- endfor %}
            from {{ images }} as change
            inner join unsent_round_picks
                on change._cdc_key = unsent_round_picks._cdc_key and change._cdc_seq = unsent_round_picks._cdc_seq
        )

        select * from unsent_round
    ) as change
        on mirror._cdc_key = change._cdc_key
    when matched and mirror._cdc_seq = change._cdc_row_seq then update set
        {%- for column in columns %}
        {{ column }} = case
            when change._cdc_fills_{{ loop.index }} = 0 then mirror.{{ column }}
            when change._cdc_action = 'delete' then null
            else change.{{ column }}
        end{{ ',' if not loop.last }}
        {%- endfor %}
{% endmacro %}
