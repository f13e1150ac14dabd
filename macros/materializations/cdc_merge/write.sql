{#
    Writing one classified batch: the tombstones, then the mirror. Every write is decided by
    comparing seq with what is stored, so running a batch again, or an older event arriving
    late, changes nothing.
#}

{% macro write_tombstones_sql(tombstones, changes_view, stored_tombstones) %}
    {#-
        stored_tombstones: how many keys of the batch have a tombstone (change_counts_columns). With
        none, only the MERGE's insert branch can apply, and a plain INSERT does the same for less: at
        10k events 0.12-0.25 s instead of 0.21-0.53 s (BENCHMARKS.md, "Levers tried").
    -#}
    {% if stored_tombstones == 0 %}
        {{ return(cdc_merge.insert_tombstones_sql(tombstones, changes_view)) }}
    {% endif %}
    {{ return(cdc_merge.merge_tombstones_sql(tombstones, changes_view)) }}
{% endmacro %}


{#-
    Which changes the tombstones' MERGE changes, as conditions on a classified row, for writing the
    same by position (write_tombstones_one_commit): the stored tombstone it replaces (moved forward
    by a newer delete, or dropped as the key comes back), and the tombstone it adds (a delete newer
    than any stored one).
-#}
{% macro tombstone_replaced_sql() -%}
    _cdc_tombstone_seq is not null and _cdc_seq > _cdc_tombstone_seq
{%- endmacro %}

{% macro tombstone_added_sql() -%}
    _cdc_action = 'delete'
    and (_cdc_change in ('delete', 'tombstone') or _cdc_tombstone_seq is not null)
    and (_cdc_tombstone_seq is null or _cdc_seq > _cdc_tombstone_seq)
{%- endmacro %}


{% macro write_tombstones_one_commit(tombstones, classified_at, changes_view, counts) %}
    {#-
        What merge_tombstones_sql writes, as one commit of the tombstones table (the cdc_spark
        adapter's OneCommitBatch, as write_one_commit for the mirror): the replaced tombstones
        deleted at the positions the classification read them at (snapshot classified_at), the new
        ones added.
    -#}
    {% do adapter.cdc_commit_one_batch(tombstones, classified_at,
        'select _cdc_tombstone_file_hash as file_hash, _cdc_tombstone_pos as pos, _cdc_key from ' ~ changes_view
            ~ ' where ' ~ cdc_merge.tombstone_replaced_sql(), counts.tombstones_replaced,
        'select _cdc_key, _cdc_seq, _cdc_source_ts from ' ~ changes_view ~ ' where ' ~ cdc_merge.tombstone_added_sql(),
        counts.tombstones_added, false) %}
{% endmacro %}


{% macro insert_tombstones_sql(tombstones, changes_view) %}
    insert into {{ tombstones }} (_cdc_key, _cdc_seq, _cdc_source_ts)
    select
        _cdc_key,
        _cdc_seq,
        _cdc_source_ts
    from {{ changes_view }}
    where _cdc_change in ('delete', 'tombstone')
{% endmacro %}


{% macro merge_tombstones_sql(tombstones, changes_view) %}
    {#- One MERGE with an insert branch: the tombstones are three narrow columns, cheap to shuffle. -#}
    merge into {{ tombstones }} as tombstone
    using (
        select
            _cdc_key,
            _cdc_action,
            _cdc_seq,
            _cdc_source_ts
        from {{ changes_view }}
        where _cdc_change in ('delete', 'tombstone') or _cdc_tombstone_seq is not null
    ) as change
        on tombstone._cdc_key = change._cdc_key
    when matched and change._cdc_seq > tombstone._cdc_seq and change._cdc_action = 'delete' then update set
        _cdc_seq = change._cdc_seq,
        _cdc_source_ts = change._cdc_source_ts
    {#- A newer insert or update brings the key back: its tombstone is no longer needed. #}
    when matched and change._cdc_seq > tombstone._cdc_seq then delete
    when not matched and change._cdc_action = 'delete' then insert (_cdc_key, _cdc_seq, _cdc_source_ts)
        values (change._cdc_key, change._cdc_seq, change._cdc_source_ts)
{% endmacro %}


{#
    The mirror gets a MERGE with only WHEN MATCHED branches and a plain INSERT, instead of
    one MERGE with a WHEN NOT MATCHED branch: such a MERGE is an outer join that keeps every
    batch row, so Spark cannot broadcast the batch and shuffles every column of the whole
    mirror (BENCHMARKS.md, "Levers tried"). Where the engine replaces rows (python_jobs/apply/
    write_plan.py, which decides a batch's statements), the MERGE only deletes the stored rows of
    updated and deleted keys and the INSERT writes the new rows of inserted and updated keys;
    otherwise the MERGE updates and the INSERT adds new keys. Where deletes_by_position() holds
    too, no MERGE finds the stored rows again: they are deleted at the positions the classification
    found them at.
    When a batch needs both statements, they write to a branch of the mirror that is then
    published in one commit (begin_mirror_writes, publish.sql), so readers never see half a batch.
    A run that dies in between repeats the batch; the seq guards make that harmless.
#}

{% macro deletes_by_position(target_relation, cfg) %}
    {#-
        Whether the mirror's replaced rows are deleted at the positions the classification found them
        at (delete_replaced_rows_by_position) rather than by a MERGE that finds them again: saves a join
        of the batch with the whole mirror per batch (BENCHMARKS.md, "Levers tried").
    -#}
    {{ return(adapter.dispatch('deletes_by_position', 'cdc_merge')(target_relation, cfg)) }}
{% endmacro %}

{% macro spark__deletes_by_position(target_relation, cfg) %}
    {#-
        In the cdc_spark adapter's own SparkSession, on an unpartitioned Iceberg format-2 mirror.
        Soft deletes keep stored values, which only an UPDATE reads.
    -#}
    {{ return(cfg.deletes == 'hard' and adapter.deletes_by_position(target_relation)) }}
{% endmacro %}

{% macro databend__deletes_by_position(target_relation, cfg) %}
    {{ return(false) }}
{% endmacro %}


{% macro replaced_positions_sql(changes) %}
    {#- Where the stored rows of the batch's updated and deleted keys are, as the classification found them, and their keys. -#}
    select
        _cdc_stored_file_hash as file_hash,
        _cdc_stored_pos as pos,
        _cdc_key
    from {{ changes }}
    where _cdc_change in ('update', 'delete')
{% endmacro %}


{% macro delete_replaced_rows_by_position(target_relation, changes, expected_positions) %}
    {#- The stored rows of updated and deleted keys, on the branch; insert_mirror_sql then writes the new rows. -#}
    {% set files = adapter.delete_rows_by_position(target_relation, cdc_merge.mirror_branch(), cdc_merge.replaced_positions_sql(changes), expected_positions) %}
    {{ log("cdc_merge " ~ target_relation ~ ": " ~ expected_positions ~ " replaced rows deleted by position (" ~ files ~ " delete files)") }}
{% endmacro %}


{% macro mirror_merge_settings() %}
    {#- Session settings in force while the mirror's MERGE runs (run_query_with_settings). -#}
    {{ return(adapter.dispatch('mirror_merge_settings', 'cdc_merge')()) }}
{% endmacro %}

{% macro spark__mirror_merge_settings() %}
    {#-
        A runtime bloom filter of the changes' keys prunes the mirror's rows before the MERGE's
        shuffle join of a large batch: 1M changes against 10M rows, 5.2 s -> 2.8 s. Spark's
        defaults build one only for scans over 10 GB and filter sides under 10 MB. Only around
        this statement: session-wide they slowed the classification at 10k events (1.5 s ->
        2.8-3.7 s). A small batch is broadcast, and a broadcast join gets no bloom filter.
        (BENCHMARKS.md, "Levers tried".)
    -#}
    {{ return({
        'spark.sql.optimizer.runtime.bloomFilter.enabled': 'true',
        'spark.sql.optimizer.runtime.bloomFilter.applicationSideScanSizeThreshold': '1',
        'spark.sql.optimizer.runtime.bloomFilter.creationSideThreshold': '1g',
    }) }}
{% endmacro %}

{% macro databend__mirror_merge_settings() %}
    {{ return({}) }}
{% endmacro %}


{% macro run_query_with_settings(sql, settings) %}
    {#- sql with settings in force; after it each goes back to the value the session started with. -#}
    {% for name, value in settings.items() %}
        {% do run_query('set ' ~ name ~ '=' ~ value) %}
    {% endfor %}
    {% do run_query(sql) %}
    {% for name in settings %}
        {% do run_query('reset ' ~ name) %}
    {% endfor %}
{% endmacro %}


{% macro delete_replaced_rows_sql(target_relation, changes_view, key_range) %}
    {#- The stored rows of updated and deleted keys; insert_mirror_sql then writes the new rows. -#}
    merge into {{ target_relation }} as mirror
    using (
        select
            _cdc_key,
            _cdc_seq
        from {{ changes_view }}
        where _cdc_change in ('update', 'delete')
    ) as change
        on mirror._cdc_key = change._cdc_key
        {{ cdc_merge.key_in_range_sql('mirror._cdc_key', key_range) }}
    when matched and change._cdc_seq > mirror._cdc_seq then delete
{% endmacro %}

{% macro merge_mirror_sql(target_relation, changes_view, key_range, columns, cfg, partial_updates) %}
    {#-
        partial_updates: some updates lack columns the source did not send, which keep
        their stored values. Without them the MERGE reads no stored column but the key and
        seq, and Spark prunes the rest from the scan.
    -#}
    merge into {{ target_relation }} as mirror
    using (
        select *
        from {{ changes_view }}
        where _cdc_change in ('update', 'delete')
    ) as change
        on mirror._cdc_key = change._cdc_key
        {{ cdc_merge.key_in_range_sql('mirror._cdc_key', key_range) }}
    {%- if cfg.deletes == 'soft' %}
    when matched and change._cdc_seq > mirror._cdc_seq and change._cdc_action = 'delete' then update set
        _cdc_deleted = true,
        _cdc_seq = change._cdc_seq,
        _cdc_source_ts = change._cdc_source_ts
    {%- else %}
    when matched and change._cdc_seq > mirror._cdc_seq and change._cdc_action = 'delete' then delete
    {%- endif %}
    when matched and change._cdc_seq > mirror._cdc_seq then update set
        {%- for column in columns %}
        {%- if partial_updates %}
        {{ column }} = case when {{ cdc_merge.is_unavailable_sql(column) }} then mirror.{{ column }} else change.{{ column }} end,
        {%- else %}
        {{ column }} = change.{{ column }},
        {%- endif %}
        {%- endfor %}
        _cdc_source_ts = change._cdc_source_ts,
        {%- if cfg.deletes == 'soft' %}
        _cdc_deleted = false,
        {%- endif %}
        _cdc_seq = change._cdc_seq
{% endmacro %}


{% macro write_one_commit(target_relation, classified_at, changes, columns, cfg, counts, key_range) %}
    {#-
        A small batch classified at snapshot classified_at of main (cdc_merge.sql apply_batch): the
        stored rows of its updated and deleted keys deleted by position and the rows of its inserted
        and updated keys added, in one commit on main (the cdc_spark adapter's OneCommitBatch). An
        update that did not send a column (a TOAST placeholder) takes its stored row's value, read
        at classified_at: the row the commit deletes.
    -#}
    {% set positions = counts.updated + counts.deleted %}
    {% set rows = counts.inserted + counts.updated %}
    {% if positions + rows == 0 %}
        {{ return(none) }}
    {% endif %}
    {#- A read at classified_at sees the columns of its schema: a column added since holds null in every stored row. -#}
    {% set stored_columns = (adapter.cdc_snapshot_columns(target_relation, classified_at) | select('in', columns) | list)
        if counts.partial_updates > 0 else none %}
    {% set stored = none if stored_columns is none else {
        'sql': cdc_merge.stored_values_sql(target_relation, classified_at, changes, stored_columns, key_range), 'columns': stored_columns} %}
    {% set files = adapter.cdc_commit_one_batch(target_relation, classified_at, cdc_merge.replaced_positions_sql(changes), positions,
        cdc_merge.inserted_rows_sql(changes, columns, cfg, true, stored), rows) %}
    {{ log("cdc_merge " ~ target_relation ~ ": " ~ positions ~ " replaced rows deleted by position (" ~ files
        ~ " delete files) and " ~ rows ~ " rows added in one commit") }}
{% endmacro %}


{% macro insert_mirror_sql(target_relation, changes_view, columns, cfg, replaced_rows) %}
    {#- The rows of inserted_rows_sql, into target_relation. -#}
    {%- set written = columns + ['_cdc_key', '_cdc_seq', '_cdc_source_ts'] -%}
    insert into {{ target_relation }} ({{ written | join(', ') }}{{ ', _cdc_deleted' if cfg.deletes == 'soft' }})
    {{ cdc_merge.inserted_rows_sql(changes_view, columns, cfg, replaced_rows) }}
{% endmacro %}


{% macro inserted_rows_sql(changes_view, columns, cfg, replaced_rows, stored=none) %}
    {#-
        Keys the mirror does not hold, and with replaced_rows the updated keys (their stored rows
        deleted by delete_replaced_rows_sql); with soft deletes a delete of a key the mirror does
        not hold is kept as a deleted row. stored ({'sql': stored_values_sql, 'columns': the
        columns it reads}): the stored rows that updates without some columns take those from.
    -#}
    {%- set soft = cfg.deletes == 'soft' -%}
    {%- set inserted_changes = ['insert'] + (['update'] if replaced_rows else []) + (['tombstone'] if soft else []) -%}
    {%- set written = columns + ['_cdc_key', '_cdc_seq', '_cdc_source_ts'] -%}
    select
        {%- for column in written %}
        {{ cdc_merge.sent_value(column, columns, stored.columns if stored is not none else []) }} as {{ column }}{{ ',' if soft or not loop.last }}
        {%- endfor %}
        {%- if soft %}
        change._cdc_action = 'delete' as _cdc_deleted
        {%- endif %}
    from {{ changes_view }} as change
    {%- if stored is not none %}
    left join ({{ stored.sql }}) as stored
        on stored._cdc_key = change._cdc_key and change._cdc_change = 'update'
    {%- endif %}
    where change._cdc_change in ('{{ inserted_changes | join("', '") }}')
{% endmacro %}


{% macro stored_values_sql(target_relation, classified_at, changes_view, columns, key_range) %}
    {#-
        The stored rows, at snapshot classified_at, of the updated keys whose newest event did not
        send some columns: a read of the mirror, pruned by the batch's key range where it skips files.
    -#}
    select
        _cdc_key
        {%- for column in columns %},
        {{ column }}
        {%- endfor %}
    from {{ cdc_merge.relation_at_snapshot(target_relation, classified_at) }}
    where
        _cdc_key in (
            select _cdc_key
            from {{ changes_view }}
            where _cdc_change = 'update' and {{ cdc_merge.any_unavailable_sql('_cdc_unavailable') }}
        )
        {{ cdc_merge.key_in_range_sql('_cdc_key', key_range) }}
{% endmacro %}


{% macro sent_value(column, columns, stored_columns=[]) %}
    {#-
        A new row has no stored value for a column the source did not send: null, not the
        placeholder; a replaced row keeps its stored value (of stored_columns), as the MERGE's update does.
    -#}
    {%- if column in columns -%}
        case when {{ cdc_merge.is_unavailable_sql(column) }} then {{ 'stored.' ~ column if column in stored_columns else 'null' }} else change.{{ column }} end
    {%- else -%}
        change.{{ column }}
    {%- endif -%}
{% endmacro %}
