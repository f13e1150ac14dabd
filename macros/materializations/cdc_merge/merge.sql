{#
    Applying one deduplicated batch. Every write is decided by comparing seq with what is
    stored, so running a batch again, or an older event arriving late, changes nothing.
#}

{% macro changes_relation(target_relation) %}
    {{ return(target_relation.incorporate(path={'identifier': target_relation.identifier ~ '__cdc_changes'})) }}
{% endmacro %}


{% macro create_changes(changes, classified_sql, in_memory) %}
    {#-
        The classified batch, computed once for the statements that apply it. Returns {'changes':
        what to read it by, 'counts': its change_counts_columns() where they were taken on the way,
        else none}. in_memory: where the engine can keep it in memory, do (no MERGE joins it with
        the mirror, see changes_as_table).
    -#}
    {{ return(adapter.dispatch('create_changes', 'cdc_merge')(changes, classified_sql, in_memory)) }}
{% endmacro %}

{% macro spark__create_changes(changes, classified_sql, in_memory) %}
    {#-
        In memory: in dbt's own SparkSession the rows are kept in Spark's block store (a local
        checkpoint, as a temporary view): 1M classified events in 7.2-7.8 s instead of 8.7-9.0 s for
        an Iceberg table (BENCHMARKS.md, "Applied since (7)"), and the counts are observed while it
        is computed, instead of a query of their own. Otherwise a table, not a cached view:
        Spark rebuilds a cached query as soon as a table it reads is written, even one read at a
        fixed snapshot, so every write after the first would classify the batch again against the
        half-written tables; a checkpoint has no such lineage.
    -#}
    {% if in_memory and adapter.type() == 'cdc_spark' %}
        {% set counts = adapter.create_checkpoint_view(changes.identifier, classified_sql, cdc_merge.change_counts_columns()) %}
        {% if counts is not none %}
            {{ return({'changes': changes.identifier, 'counts': counts}) }}
        {% endif %}
    {% endif %}
    {% do run_query('create or replace table ' ~ changes ~ ' using iceberg as ' ~ classified_sql) %}
    {{ return({'changes': changes, 'counts': none}) }}
{% endmacro %}

{% macro databend__create_changes(changes, classified_sql, in_memory) %}
    {% do run_query('create or replace transient table ' ~ changes ~ ' as ' ~ classified_sql) %}
    {{ return({'changes': changes, 'counts': none}) }}
{% endmacro %}


{% macro changes_as_table(batch_changes, changes) %}
    {#-
        The classified batch of create_changes as the table changes, for a MERGE: Spark does not
        know the size of a checkpoint, so it shuffled the whole mirror instead of broadcasting the
        changes (10k changes into 30M rows: 14.6 s instead of 6.4 s, BENCHMARKS.md "Applied since (7)").
    -#}
    {% if batch_changes is not string %}
        {{ return(batch_changes) }}
    {% endif %}
    {% set table = cdc_merge.create_changes(changes, 'select * from ' ~ batch_changes, false).changes %}
    {% do cdc_merge.drop_changes(batch_changes) %}
    {{ return(table) }}
{% endmacro %}


{% macro drop_changes(changes) %}
    {#- changes: what create_changes returned. -#}
    {{ return(adapter.dispatch('drop_changes', 'cdc_merge')(changes)) }}
{% endmacro %}

{% macro spark__drop_changes(changes) %}
    {% if changes is string %}
        {% do adapter.drop_checkpoint_view(changes) %}
    {% else %}
        {% do run_query('drop table if exists ' ~ changes ~ ' purge') %}
    {% endif %}
{% endmacro %}

{% macro databend__drop_changes(changes) %}
    {% do run_query('drop table if exists ' ~ changes) %}
{% endmacro %}


{% macro classified_batch_sql(model_sql, batch_keys_sql, key_range, target_relation, tombstones, with_positions) %}
    {#-
        Each key of the batch against the mirror and the tombstones: insert, update, delete,
        tombstone or skip. The stored keys of the batch are found first (stored_keys_sql),
        reading only the key and seq columns; the keys come straight from the raw events
        (batch_keys_sql), not through the model's dedup and parsing; their range
        (key_in_range_sql) lets the engine skip data files. with_positions: also where each
        stored row is (_cdc_stored_file_hash, _cdc_stored_pos), to delete it there.
    -#}
    with

    batch as (
        {{ model_sql }}
    ),

    batch_keys as (
        {{ batch_keys_sql }}
    ),

    mirror_keys as (
        {{ cdc_merge.stored_keys_sql(target_relation, 'batch_keys', key_range, with_positions) }}
    ),

    {% if tombstones is not none -%}
    tombstone_keys as (
        {{ cdc_merge.stored_keys_sql(tombstones, 'batch_keys', key_range, false) }}
    ),
    {%- endif %}

    final as (
        select
            batch.*,
            {%- if with_positions %}
            mirror_keys._cdc_stored_file_hash,
            mirror_keys._cdc_stored_pos,
            {%- endif %}
            {{ 'tombstone_keys._cdc_seq' if tombstones is not none else 'cast(null as string)' }} as _cdc_tombstone_seq,
            case
                when mirror_keys._cdc_seq is not null and batch._cdc_seq <= mirror_keys._cdc_seq then 'skip'
                when mirror_keys._cdc_seq is not null and batch._cdc_action = 'delete' then 'delete'
                when mirror_keys._cdc_seq is not null then 'update'
                {%- if tombstones is not none %}
                when batch._cdc_seq <= tombstone_keys._cdc_seq then 'skip'
                {%- endif %}
                when batch._cdc_action = 'delete' then 'tombstone'
                else 'insert'
            end as _cdc_change
        from batch
        left join mirror_keys
            on batch._cdc_key = mirror_keys._cdc_key
        {%- if tombstones is not none %}
        left join tombstone_keys
            on batch._cdc_key = tombstone_keys._cdc_key
        {%- endif %}
    )

    select * from final
{% endmacro %}


{% macro key_in_range_sql(column, key_range) %}
    {#-
        The batch's key range as one more condition on a read of stored keys: Iceberg skips the
        data files whose key bounds lie outside it, so a batch of clustered keys (recent rows)
        reads few of the mirror's files (BENCHMARKS.md, "Applied since (5)"). Every key of the
        batch lies inside it, so it changes no result. The bounds come hex-encoded and are
        decoded by constant expressions, which Spark folds into literals it pushes into the Iceberg scan.
    -#}
    {%- if key_range is not none -%}
        and {{ column }} between cast(unhex('{{ key_range.min_hex }}') as string) and cast(unhex('{{ key_range.max_hex }}') as string)
    {%- endif -%}
{% endmacro %}


{% macro key_range_skips_files(relation, key_range) %}
    {#-
        Whether key_in_range_sql lets a read of relation skip any of its data files. Where it skips
        none (random keys), the engine still checks it on every stored key: at 10k events into 30M
        rows 0.2 s of the 1.0 s the stored keys took (BENCHMARKS.md, "Applied since (8)").
    -#}
    {% if key_range is none %}
        {{ return(false) }}
    {% endif %}
    {{ return(adapter.dispatch('key_range_skips_files', 'cdc_merge')(relation, key_range)) }}
{% endmacro %}

{% macro spark__key_range_skips_files(relation, key_range) %}
    {#- Asked of Iceberg's manifests in dbt's own SparkSession; elsewhere not known, so kept. -#}
    {% set skips = adapter.key_range_skips_files(relation, '_cdc_key', key_range.min_hex, key_range.max_hex) if adapter.type() == 'cdc_spark' else none %}
    {{ return(skips is none or skips) }}
{% endmacro %}

{% macro databend__key_range_skips_files(relation, key_range) %}
    {#- Not measured on Databend: kept. -#}
    {{ return(true) }}
{% endmacro %}


{% macro stored_keys_sql(relation, batch_keys, key_range, with_positions) %}
    {#-
        The rows of relation (mirror or tombstones) whose key is one of batch_keys: _cdc_key, _cdc_seq,
        and with_positions (Iceberg only) where each is: _cdc_stored_file_hash (xxhash64 of its data file's
        path: a path carried through the classification's join cost 1.5 s at 1M events) and _cdc_stored_pos.
    -#}
    {{ return(adapter.dispatch('stored_keys_sql', 'cdc_merge')(relation, batch_keys, key_range, with_positions)) }}
{% endmacro %}

{% macro spark__stored_keys_sql(relation, batch_keys, key_range, with_positions) %}
    {#-
        The batch is the small side, so it is broadcast and the stored keys are not shuffled;
        without the hint Spark's far too high size estimate of a key list read from the raw
        table made it shuffle the mirror's keys at 1M events. A chunk holds at most
        max_events_per_chunk events, which bounds the broadcast. It holds 64-bit hashes of the
        keys, not the keys: a table of longs is built and probed faster than one of strings
        (1M keys against 10M stored: 1.8 s instead of 2.8 s, BENCHMARKS.md "Applied since (6)").
        A stored key whose hash is shared by a batch key it differs from is kept here and
        dropped by the classification's join on the keys themselves.
    -#}
    select /*+ broadcast(batch_key_hashes) */
        stored._cdc_key,
        {%- if with_positions %}
        xxhash64(stored._file) as _cdc_stored_file_hash,
        stored._pos as _cdc_stored_pos,
        {%- endif %}
        stored._cdc_seq
    from {{ relation }} as stored
    left semi join (
        select xxhash64(_cdc_key) as key_hash
        from {{ batch_keys }}
    ) as batch_key_hashes
        on xxhash64(stored._cdc_key) = batch_key_hashes.key_hash
        {{ cdc_merge.key_in_range_sql('stored._cdc_key', key_range) }}
{% endmacro %}

{% macro databend__stored_keys_sql(relation, batch_keys, key_range, with_positions) %}
    {#- with_positions is never set on Databend (deletes_by_position). batch_keys may repeat a key. -#}
    select
        stored._cdc_key,
        stored._cdc_seq
    from {{ relation }} as stored
    inner join (select distinct _cdc_key from {{ batch_keys }}) as distinct_batch_keys
        on stored._cdc_key = distinct_batch_keys._cdc_key
        {{ cdc_merge.key_in_range_sql('stored._cdc_key', key_range) }}
{% endmacro %}


{% macro drop_scratch(name) %}
    {#- The per-run raw changes: a temporary view on Spark, a transient table on Databend. -#}
    {{ return(adapter.dispatch('drop_scratch', 'cdc_merge')(name)) }}
{% endmacro %}

{% macro spark__drop_scratch(name) %}
    {% do run_query('drop view if exists ' ~ name) %}
{% endmacro %}

{% macro databend__drop_scratch(name) %}
    {% do run_query('drop table if exists ' ~ name) %}
{% endmacro %}


{% macro change_counts_columns() %}
    {#- What apply_batch needs to know of a classified batch: its counts per change, as select-list items. -#}
    {{ return([
        "count(*) as events_read",
        "count_if(_cdc_change = 'insert') as inserted",
        "count_if(_cdc_change = 'update') as updated",
        "count_if(_cdc_change = 'update' and " ~ cdc_merge.any_unavailable_sql('_cdc_unavailable') ~ ") as partial_updates",
        "count_if(_cdc_change = 'delete') as deleted",
        "count_if(_cdc_change = 'tombstone') as tombstoned",
        "count_if(_cdc_change = 'skip') as skipped",
        "count_if(_cdc_change = 'insert' and _cdc_tombstone_seq is not null) as revived",
        "count_if(_cdc_tombstone_seq is not null) as stored_tombstones",
        "coalesce(cast(max(_cdc_source_ts) as string), '') as max_source_ts",
    ]) }}
    {#- '' rather than null for max_source_ts: databend-py hands a NULL over as the string 'NULL'. #}
{% endmacro %}

{% macro change_counts_sql(changes_view) %}
    select
        {{ cdc_merge.change_counts_columns() | join(',\n        ') }}
    from {{ changes_view }}
{% endmacro %}


{% macro write_tombstones_sql(tombstones, changes_view, stored_tombstones) %}
    {#-
        stored_tombstones: how many keys of the batch have a tombstone (change_counts_columns). With
        none, only the MERGE's insert branch can apply, and a plain INSERT does the same for less: at
        10k events 0.12-0.25 s instead of 0.21-0.53 s (BENCHMARKS.md, "Applied since (8)").
    -#}
    {% if stored_tombstones == 0 %}
        {{ return(cdc_merge.insert_tombstones_sql(tombstones, changes_view)) }}
    {% endif %}
    {{ return(cdc_merge.merge_tombstones_sql(tombstones, changes_view)) }}
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
    mirror (BENCHMARKS.md, "Applied since (2)"). Where replaces_rows() holds, the MERGE only
    deletes the stored rows of updated and deleted keys and the INSERT writes the new rows of
    inserted and updated keys; otherwise the MERGE updates and the INSERT adds new keys. Where
    deletes_by_position() holds too, no MERGE finds the stored rows again: they are deleted at the
    positions the classification found them at.
    When a batch needs both statements, they write to a branch of the mirror that is then
    published in one commit (begin_mirror_writes), so readers never see half a batch.
    A run that dies in between repeats the batch; the seq guards make that harmless.
#}

{% macro replaces_rows(cfg, partial_updates) %}
    {{ return(adapter.dispatch('replaces_rows', 'cdc_merge')(cfg, partial_updates)) }}
{% endmacro %}

{% macro spark__replaces_rows(cfg, partial_updates) %}
    {#-
        The delete-only MERGE reads only the key and seq of the changes, so the batch's columns
        do not travel through the join with the mirror: at 1M events into 10M rows the two
        statements took 1.6-1.9 s less (BENCHMARKS.md, "Applied since (6)"). Soft deletes and
        partial updates keep stored values, which only an UPDATE reads.
    -#}
    {{ return(cfg.deletes == 'hard' and not partial_updates) }}
{% endmacro %}

{% macro databend__replaces_rows(cfg, partial_updates) %}
    {#- Not measured on Databend: it keeps the UPDATE-MERGE. -#}
    {{ return(false) }}
{% endmacro %}


{% macro mirror_branch() %}
    {{- return('cdc_merge_batch') -}}
{% endmacro %}

{% macro begin_mirror_writes(target_relation) %}
    {#- Where a batch's two mirror statements write: returns the relation to name in them. -#}
    {{ return(adapter.dispatch('begin_mirror_writes', 'cdc_merge')(target_relation)) }}
{% endmacro %}

{% macro spark__begin_mirror_writes(target_relation) %}
    {#- A branch left by a run that died before publishing it holds nothing anyone reads. -#}
    {% do run_query('alter table ' ~ target_relation ~ ' drop branch if exists ' ~ cdc_merge.mirror_branch()) %}
    {% do run_query('alter table ' ~ target_relation ~ ' create branch ' ~ cdc_merge.mirror_branch()) %}
    {{ return(target_relation ~ '.branch_' ~ cdc_merge.mirror_branch()) }}
{% endmacro %}

{% macro databend__begin_mirror_writes(target_relation) %}
    {{ return(target_relation) }}
{% endmacro %}


{% macro publish_mirror_writes(target_relation) %}
    {{ return(adapter.dispatch('publish_mirror_writes', 'cdc_merge')(target_relation)) }}
{% endmacro %}

{% macro spark__publish_mirror_writes(target_relation) %}
    {#- Fails, rather than losing a write, if another writer moved main since the branch was made. -#}
    {% do run_query("call system.fast_forward('" ~ target_relation.schema ~ "." ~ target_relation.identifier
        ~ "', 'main', '" ~ cdc_merge.mirror_branch() ~ "')") %}
    {% do run_query('alter table ' ~ target_relation ~ ' drop branch ' ~ cdc_merge.mirror_branch()) %}
{% endmacro %}

{% macro databend__publish_mirror_writes(target_relation) %}
{% endmacro %}


{% macro discard_mirror_writes(target_relation) %}
    {#- A batch that wrote nothing to the branch begin_mirror_writes made. -#}
    {{ return(adapter.dispatch('discard_mirror_writes', 'cdc_merge')(target_relation)) }}
{% endmacro %}

{% macro spark__discard_mirror_writes(target_relation) %}
    {% do run_query('alter table ' ~ target_relation ~ ' drop branch if exists ' ~ cdc_merge.mirror_branch()) %}
{% endmacro %}

{% macro databend__discard_mirror_writes(target_relation) %}
{% endmacro %}


{% macro deletes_by_position(target_relation, cfg) %}
    {#-
        Whether the mirror's replaced rows are deleted at the positions the classification found them
        at (delete_replaced_rows_by_position) rather than by a MERGE that finds them again: saves a join
        of the batch with the whole mirror per batch (BENCHMARKS.md, "Applied since (7)").
    -#}
    {{ return(adapter.dispatch('deletes_by_position', 'cdc_merge')(target_relation, cfg)) }}
{% endmacro %}

{% macro spark__deletes_by_position(target_relation, cfg) %}
    {#-
        In the cdc_spark adapter's own SparkSession, on an unpartitioned Iceberg format-2 mirror.
        Soft deletes keep stored values, which only an UPDATE reads.
    -#}
    {{ return(cfg.deletes == 'hard' and adapter.type() == 'cdc_spark' and adapter.deletes_by_position(target_relation)) }}
{% endmacro %}

{% macro databend__deletes_by_position(target_relation, cfg) %}
    {{ return(false) }}
{% endmacro %}


{% macro delete_replaced_rows_by_position(target_relation, changes, expected_positions) %}
    {#- The stored rows of updated and deleted keys, on the branch; insert_mirror_sql then writes the new rows. -#}
    {% set positions_sql %}
        select
            _cdc_stored_file_hash as file_hash,
            _cdc_stored_pos as pos
        from {{ changes }}
        where _cdc_change in ('update', 'delete')
    {% endset %}
    {% set files = adapter.delete_rows_by_position(target_relation, cdc_merge.mirror_branch(), positions_sql, expected_positions) %}
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
        (BENCHMARKS.md, "Applied since (6)".)
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


{% macro insert_mirror_sql(target_relation, changes_view, columns, cfg, replaced_rows) %}
    {#-
        Keys the mirror does not hold, and with replaced_rows the updated keys (their stored rows
        deleted by delete_replaced_rows_sql); with soft deletes a delete of a key the mirror does
        not hold is kept as a deleted row.
    -#}
    {%- set soft = cfg.deletes == 'soft' -%}
    {%- set inserted_changes = ['insert'] + (['update'] if replaced_rows else []) + (['tombstone'] if soft else []) -%}
    {%- set written = columns + ['_cdc_key', '_cdc_seq', '_cdc_source_ts'] -%}
    insert into {{ target_relation }} ({{ written | join(', ') }}{{ ', _cdc_deleted' if soft }})
    select
        {%- for column in written %}
        {{ cdc_merge.sent_value(column, columns) }}{{ ',' if soft or not loop.last }}
        {%- endfor %}
        {%- if soft %}
        change._cdc_action = 'delete'
        {%- endif %}
    from {{ changes_view }} as change
    where change._cdc_change in ('{{ inserted_changes | join("', '") }}')
{% endmacro %}


{% macro sent_value(column, columns) %}
    {#- A new row has no stored value for a column the source did not send: null, not the placeholder. -#}
    {%- if column in columns -%}
        case when {{ cdc_merge.is_unavailable_sql(column) }} then null else change.{{ column }} end
    {%- else -%}
        change.{{ column }}
    {%- endif -%}
{% endmacro %}


{% macro is_unavailable_sql(column) %}
    {{ return(adapter.dispatch('is_unavailable_sql', 'cdc_merge')(column)) }}
{% endmacro %}

{% macro any_unavailable_sql(column) %}
    {{ return(adapter.dispatch('any_unavailable_sql', 'cdc_merge')(column)) }}
{% endmacro %}

{% macro spark__any_unavailable_sql(column) -%}
    size({{ column }}) > 0
{%- endmacro %}

{% macro databend__any_unavailable_sql(column) -%}
    {{ column }} != ''
{%- endmacro %}


{% macro spark__is_unavailable_sql(column) -%}
    array_contains(change._cdc_unavailable, '{{ column }}')
{%- endmacro %}

{% macro databend__is_unavailable_sql(column) -%}
    {#- _cdc_unavailable is ',a,b,' on Databend (see databend__create_batch_view_sql). -#}
    position(',{{ column }},' in change._cdc_unavailable) > 0
{%- endmacro %}
