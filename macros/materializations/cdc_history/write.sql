{#
    Writing one batch to the history: its new deletes to the deletes table (deletes='hard'),
    then the rows history_changes_sql found, computed once into a scratch relation: the
    removed rows deleted by (_cdc_key, _cdc_seq), the added rows inserted. On Spark both
    statements write to a branch that is published in one commit (cdc_merge's publish.sql).
#}

{% macro create_history_chain_changes(scratch, target_relation, deletes_relation, model_sql, columns, cfg, unsent_columns,
    range_deletes_sql=none, chunk_ranges=none) %}
    {#- create_history_changes of history_changes_sql (chain.sql, whose arguments follow scratch), its steps computed first
        where the engine keeps them. -#}
    {% set stages = adapter.dispatch('history_chain_stages', 'cdc_merge')(range_deletes_sql is not none, chunk_ranges is not none) %}
    {% set kept = {} %}
    {% for stage in stages %}
        {% set view = scratch.identifier ~ '__' ~ stage %}
        {% do adapter.create_checkpoint_view(view, cdc_merge.history_changes_sql(target_relation, deletes_relation, model_sql, columns,
            cfg, unsent_columns, range_deletes_sql, chunk_ranges, kept, stage)) %}
        {% do kept.update({stage: view}) %}
    {% endfor %}
    {% set created = cdc_merge.create_history_changes(scratch, cdc_merge.history_changes_sql(target_relation, deletes_relation,
        model_sql, columns, cfg, unsent_columns, range_deletes_sql, chunk_ranges, kept)) %}
    {% for view in kept.values() %}
        {% do adapter.drop_checkpoint_view(view) %}
    {% endfor %}
    {{ return(created) }}
{% endmacro %}

{% macro spark__history_chain_stages(from_range_deletes, ranged) %}
    {#- The chain's steps computed first, each once (python_jobs/apply/history_stages.py). -#}
    {{ return(adapter.cdc_history_chain_stages(from_range_deletes, ranged)) }}
{% endmacro %}

{% macro databend__history_chain_stages(from_range_deletes, ranged) %}
    {#- Databend computes a CTE read twice once. -#}
    {{ return([]) }}
{% endmacro %}


{% macro create_history_changes(scratch, changes_sql) %}
    {#- Returns {'changes': what to read the rows by, 'added': n, 'removed': n}. -#}
    {{ return(adapter.dispatch('create_history_changes', 'cdc_merge')(scratch, changes_sql)) }}
{% endmacro %}

{% macro history_change_counts() %}
    {{ return(["count_if(_cdc_change = 'add') as added", "count_if(_cdc_change = 'remove') as removed",
        "count_if(_cdc_change = 'close') as closed"]) }}
{% endmacro %}

{% macro spark__create_history_changes(scratch, changes_sql) %}
    {#- A local checkpoint, not a cached view: Spark would compute a cached view again once the history is written. -#}
    {% set counts = adapter.create_checkpoint_view(scratch.identifier, changes_sql, cdc_merge.history_change_counts()) %}
    {% if counts is not none %}
        {{ return({'changes': scratch.identifier, 'added': counts['added'] | int, 'removed': counts['removed'] | int,
                   'closed': counts['closed'] | int, 'in_memory': true}) }}
    {% endif %}
    {% do run_query('create or replace table ' ~ scratch ~ ' using iceberg as ' ~ changes_sql) %}
    {% set counts = run_query('select ' ~ cdc_merge.history_change_counts() | join(', ') ~ ' from ' ~ scratch).rows[0] %}
    {{ return({'changes': scratch, 'added': counts['added'] | int, 'removed': counts['removed'] | int,
               'closed': counts['closed'] | int, 'in_memory': false}) }}
{% endmacro %}

{% macro databend__create_history_changes(scratch, changes_sql) %}
    {% do run_query('create or replace transient table ' ~ scratch ~ ' as ' ~ changes_sql) %}
    {% set counts = run_query('select ' ~ cdc_merge.history_change_counts() | join(', ') ~ ' from ' ~ scratch).rows[0] %}
    {{ return({'changes': scratch, 'added': counts['added'] | int, 'removed': counts['removed'] | int,
               'closed': counts['closed'] | int, 'in_memory': false}) }}
{% endmacro %}


{% macro drop_history_changes(created) %}
    {#- As a mirror's changes: a name is the kept view, a relation the table, purged on Spark (a drop
        without purge leaves its files behind on a JDBC catalog). -#}
    {% do cdc_merge.drop_changes(created.changes) %}
{% endmacro %}


{% macro remove_history_rows_sql(history, changes) %}
    merge into {{ history }} as history
    using (
        select
            _cdc_key,
            _cdc_seq
        from {{ changes }}
        where _cdc_change = 'remove'
    ) as removed
        on history._cdc_key = removed._cdc_key and history._cdc_seq = removed._cdc_seq
    when matched then delete
{% endmacro %}


{% macro add_history_rows_sql(history, changes, columns) %}
    insert into {{ history }}
    select
        {%- for column in columns + cdc_merge.history_columns() %}
        {{ column }}{{ ',' if not loop.last }}
        {%- endfor %}
    from {{ changes }}
    where _cdc_change = 'add'
{% endmacro %}


{% macro spark__write_history_changes(target_relation, created, columns) %}
    {#- Both statements on the batch's branch, published in one commit. -#}
    {% set history = cdc_merge.begin_mirror_writes(target_relation) %}
    {% if created.removed > 0 %}
        {% do run_query(cdc_merge.remove_history_rows_sql(history, created.changes)) %}
    {% endif %}
    {% if created.added > 0 %}
        {% do run_query(cdc_merge.add_history_rows_sql(history, created.changes, columns)) %}
    {% endif %}
    {% do cdc_merge.publish_mirror_writes(target_relation) %}
{% endmacro %}

{% macro databend__write_history_changes(target_relation, created, columns) %}
    {#-
        One MERGE, so all or nothing: a run killed between a remove and an add lost the removed
        versions, which the next run rebuilds its chains from (no branch here to publish at once).
        A replaced row's (key, seq) is both removed and added: updated in place.
    -#}
    {%- set history_row = columns + cdc_merge.history_columns() -%}
    {% set merge_sql %}
        merge into {{ target_relation }} as history
        using (
            select
                coalesce(added._cdc_key, removed._cdc_key) as _cdc_target_key,
                coalesce(added._cdc_seq, removed._cdc_seq) as _cdc_target_seq,
                added._cdc_key is null as _cdc_removed_only,
                {%- for column in history_row %}
                added.{{ column }}{{ ',' if not loop.last }}
                {%- endfor %}
            from (select * from {{ created.changes }} where _cdc_change = 'add') as added
            full outer join (select _cdc_key, _cdc_seq from {{ created.changes }} where _cdc_change = 'remove') as removed
                on added._cdc_key = removed._cdc_key and added._cdc_seq = removed._cdc_seq
        ) as change
            on history._cdc_key = change._cdc_target_key and history._cdc_seq = change._cdc_target_seq
        when matched and change._cdc_removed_only then delete
        when matched then update set
            {%- for column in history_row if column not in ['_cdc_key', '_cdc_seq'] %}
            {{ column }} = change.{{ column }}{{ ',' if not loop.last }}
            {%- endfor %}
        when not matched and not change._cdc_removed_only then insert ({{ history_row | join(', ') }})
            values (
            {%- for column in history_row %}
            change.{{ column }}{{ ', ' if not loop.last }}
            {%- endfor %})
    {% endset %}
    {% do run_query(merge_sql) %}
{% endmacro %}


{% macro apply_history_batch(target_relation, deletes_relation, scratch, batch_view, model_sql, columns, cfg, unsent_columns,
    chunk_ranges=none, batch_deletes=none) %}
    {#-
        One bucket of a chunk, whose events are in batch_view; unsent_columns: history_batch_facts'; chunk_ranges: the
        chunk's online snapshot ranges (ranges.sql), whose deletes of the bucket's keys go to the deletes table before
        the history is written (a run that dies in between finds them there). batch_deletes: how many of the batch's
        events are deletes, when known (history_batch_facts): 0 skips their insert (a statement, and a commit
        of nothing on either engine). Returns its counts.
    -#}
    {% if deletes_relation is not none and batch_deletes != 0 %}
        {% do run_query(cdc_merge.insert_new_deletes_sql(deletes_relation, batch_view, "picked._cdc_action = 'delete'")) %}
    {% endif %}
    {% set created = cdc_merge.create_history_chain_changes(scratch, target_relation, deletes_relation, model_sql, columns,
        cfg, unsent_columns, chunk_ranges=chunk_ranges) %}
    {% if deletes_relation is not none and created.closed > 0 %}
        {% do run_query(cdc_merge.insert_new_deletes_sql(deletes_relation, created.changes, "picked._cdc_change = 'close'")) %}
    {% endif %}
    {% if created.added + created.removed > 0 %}
        {% do adapter.dispatch('write_history_changes', 'cdc_merge')(target_relation, created, columns) %}
    {% endif %}
    {% do cdc_merge.drop_history_changes(created) %}
    {{ return({'added': created.added, 'removed': created.removed}) }}
{% endmacro %}


{% macro insert_new_deletes_sql(deletes_relation, rows, condition) %}
    {#- The deletes of rows (a batch's delete events, or the deletes its ranges closed keys with: condition
        picks them) that the deletes table does not hold yet. -#}
    insert into {{ deletes_relation }}
    select
        picked._cdc_key,
        picked._cdc_seq,
        picked._cdc_source_ts
    from {{ rows }} as picked
    where
        {{ condition }}
        and not exists (
            select 1
            from {{ deletes_relation }} as stored
            where stored._cdc_key = picked._cdc_key and stored._cdc_seq = picked._cdc_seq
        )
{% endmacro %}
