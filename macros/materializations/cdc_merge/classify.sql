{#
    Classifying a deduplicated batch against the mirror and its tombstones: which of its
    keys are stored (stored_keys_sql), inside which key range (python_jobs/apply/key_range.py),
    and what each event does (classified_batch_sql); then the classified batch computed once for
    the statements that apply it (create_changes).
    Over 300 lines: one concept, the classification, with its two ways to the stored keys (a
    scan, or rows read in the driver) and the engines' versions side by side.
#}

{% macro classified_batch_sql(model_sql, batch_keys_sql, key_range, target_relation, tombstones, with_positions, tombstone_positions=false, key_hashes=none, stored_rows=none, small_batch=false, stored_views=none) %}
    {#-
        Each key of the batch against the mirror and the tombstones: insert, update, delete,
        tombstone or skip. The stored keys of the batch are found first (stored_keys_sql),
        reading only the key and seq columns; the keys come straight from the raw events
        (batch_keys_sql), not through the model's dedup and parsing; their range
        (key_in_range_sql) lets the engine skip data files. with_positions: also where each
        stored row is (_cdc_stored_file_hash, _cdc_stored_pos), to delete it there;
        tombstone_positions: where each stored tombstone is (_cdc_tombstone_file_hash,
        _cdc_tombstone_pos), to write the tombstones by position (write_tombstones_one_commit).
        key_hashes: the batch keys' hashes when the driver holds them (a small batch), listed in
        the stored keys' filter instead of broadcast.
        stored_rows: {'mirror', 'tombstones'}, the stored rows of the batch's keys read in the driver
        (adapter.cdc_stored_rows_in_driver): each batch row looks its own up (stored_row_sql), no
        scan and no join, so a batch the driver holds is classified without a Spark job; the batch
        then also carries the rows it looked up (_cdc_mirror_row, _cdc_tombstone_row).
        small_batch: a batch of one commit (at most one_commit.py's ONE_COMMIT_MAX_EVENTS events), so
        the stored rows of its keys are few: they are broadcast to the batch (Spark), which is not
        shuffled. Spark estimates them from the whole mirror and shuffled both sides instead (10k
        events into 1M rows: BENCHMARKS.md, "Levers tried").
        stored_views: {'mirror', 'tombstones'}, views of the stored rows of the batch's keys read from
        the key indexes a long-lived process keeps (adapter.cdc_indexed_stored_rows_views), read
        instead of scanning the tables: a batch of more keys than stored_rows lists.
    -#}
    {%- set mirror = 'batch._cdc_mirror_row.' if stored_rows is not none else 'mirror_keys.' -%}
    {%- set tombstone = 'batch._cdc_tombstone_row.' if stored_rows is not none else 'tombstone_keys.' -%}
    with

    {% if stored_rows is not none -%}
    batch as (
        select
            model_batch.*,
            {%- if tombstones is not none %}
            {{ cdc_merge.stored_row_sql(stored_rows.tombstones, tombstone_positions, 'model_batch._cdc_key') }} as _cdc_tombstone_row,
            {%- endif %}
            {{ cdc_merge.stored_row_sql(stored_rows.mirror, with_positions, 'model_batch._cdc_key') }} as _cdc_mirror_row
        from (
            {{ model_sql }}
        ) as model_batch
    ),
    {%- else -%}
    batch as (
        {{ model_sql }}
    ),

    batch_keys as (
        {{ batch_keys_sql }}
    ),

    mirror_keys as (
        {{ 'select * from ' ~ stored_views.mirror if stored_views is not none
            else cdc_merge.stored_keys_sql(target_relation, 'batch_keys', key_range, with_positions, key_hashes) }}
    ),

    {% if tombstones is not none -%}
    tombstone_keys as (
        {{ 'select * from ' ~ stored_views.tombstones if stored_views is not none
            else cdc_merge.stored_keys_sql(tombstones, 'batch_keys', key_range, tombstone_positions, key_hashes) }}
    ),
    {%- endif %}
    {%- endif %}

    final as (
        select{{ cdc_merge.broadcast_stored_keys_hint(tombstones) if small_batch and stored_rows is none }}
            batch.*,
            {%- if with_positions %}
            {{ mirror }}_cdc_stored_file_hash as _cdc_stored_file_hash,
            {{ mirror }}_cdc_stored_pos as _cdc_stored_pos,
            {%- endif %}
            {%- if tombstone_positions %}
            {{ tombstone }}_cdc_stored_file_hash as _cdc_tombstone_file_hash,
            {{ tombstone }}_cdc_stored_pos as _cdc_tombstone_pos,
            {%- endif %}
            {{ tombstone ~ '_cdc_seq' if tombstones is not none else 'cast(null as string)' }} as _cdc_tombstone_seq,
            case
                when {{ mirror }}_cdc_seq is not null and batch._cdc_seq <= {{ mirror }}_cdc_seq then 'skip'
                when {{ mirror }}_cdc_seq is not null and batch._cdc_action = 'delete' then 'delete'
                when {{ mirror }}_cdc_seq is not null then 'update'
                {%- if tombstones is not none %}
                when batch._cdc_seq <= {{ tombstone }}_cdc_seq then 'skip'
                {%- endif %}
                when batch._cdc_action = 'delete' then 'tombstone'
                else 'insert'
            end as _cdc_change
        from batch
        {%- if stored_rows is none %}
        left join mirror_keys
            on batch._cdc_key = mirror_keys._cdc_key
        {%- if tombstones is not none %}
        left join tombstone_keys
            on batch._cdc_key = tombstone_keys._cdc_key
        {%- endif %}
        {%- endif %}
    )

    select * from final
{% endmacro %}


{% macro broadcast_stored_keys_hint(tombstones) %}
    {{ return(adapter.dispatch('broadcast_stored_keys_hint', 'cdc_merge')(tombstones)) }}
{% endmacro %}

{% macro spark__broadcast_stored_keys_hint(tombstones) %}
    {{- ' /*+ broadcast(mirror_keys' ~ (', tombstone_keys' if tombstones is not none) ~ ') */' -}}
{% endmacro %}

{% macro databend__broadcast_stored_keys_hint(tombstones) %}
    {#- Databend picks its own join order; its hints are not Spark's. -#}
    {{- '' -}}
{% endmacro %}


{% macro stored_row_sql(stored_rows_hex, with_positions, key) %}
    {#-
        The stored row of key in stored_rows_hex (the hex-encoded JSON of adapter.cdc_stored_rows_in_driver),
        or null: a constant map Spark's optimizer decodes once, looked up per batch row.
    -#}
    try_element_at(
        from_json(
            cast(unhex('{{ stored_rows_hex }}') as string),
            'map<string, struct<_cdc_seq: string{{ ", _cdc_stored_file_hash: bigint, _cdc_stored_pos: bigint" if with_positions }}>>'
        ),
        {{ key }}
    )
{%- endmacro %}


{% macro batch_keys_sql(changes_view, source_table, bucket, buckets) %}
    {#-
        Every key with an event in this bucket of the chunk: a superset of the keys of any round. A key
        with several events comes several times: Spark's semi join needs no distinct keys, and making
        them distinct took 0.3 s of the classification at 1M events (BENCHMARKS.md, "Levers tried").
    -#}
    with

    {{ cdc_merge.table_events_cte(changes_view, source_table, bucket, buckets) }}

    select key as _cdc_key
    from table_events
{% endmacro %}


{% macro stored_keys_sql(relation, batch_keys, key_range, with_positions, key_hashes=none) %}
    {#-
        The rows of relation (mirror or tombstones) whose key is one of batch_keys: _cdc_key, _cdc_seq,
        and with_positions (Iceberg only) where each is: _cdc_stored_file_hash (xxhash64 of its data file's
        path: a path carried through the classification's join cost 1.5 s at 1M events) and _cdc_stored_pos.
        key_hashes (Spark): the batch keys' hashes as a list, for a small batch the driver holds.
    -#}
    {{ return(adapter.dispatch('stored_keys_sql', 'cdc_merge')(relation, batch_keys, key_range, with_positions, key_hashes)) }}
{% endmacro %}

{% macro spark__stored_keys_sql(relation, batch_keys, key_range, with_positions, key_hashes=none) %}
    {#-
        The batch is the small side, so it is broadcast and the stored keys are not shuffled;
        without the hint Spark's far too high size estimate of a key list read from the raw
        table made it shuffle the mirror's keys at 1M events. A chunk holds at most
        max_events_per_chunk events, which bounds the broadcast. It holds 64-bit hashes of the
        keys, not the keys: a table of longs is built and probed faster than one of strings
        (1M keys against 10M stored: 1.8 s instead of 2.8 s, BENCHMARKS.md, "Levers tried").
        A stored key whose hash is shared by a batch key it differs from is kept here and
        dropped by the classification's join on the keys themselves.
        With key_hashes (a small batch the driver holds) the hashes are a list in the filter: the
        broadcast was a Spark job of its own in every small batch's classification (BENCHMARKS.md,
        "Levers tried").
    -#}
    select{{ ' /*+ broadcast(batch_key_hashes) */' if key_hashes is none }}
        stored._cdc_key,
        {%- if with_positions %}
        xxhash64(stored._file) as _cdc_stored_file_hash,
        stored._pos as _cdc_stored_pos,
        {%- endif %}
        stored._cdc_seq
    from {{ relation }} as stored
    {%- if key_hashes is not none %}
    where
        {{ 'xxhash64(stored._cdc_key) in (' ~ (key_hashes | join(', ')) ~ ')' if key_hashes else 'false' }}
    {%- else %}
    left semi join (
        select xxhash64(_cdc_key) as key_hash
        from {{ batch_keys }}
    ) as batch_key_hashes
        on xxhash64(stored._cdc_key) = batch_key_hashes.key_hash
    {%- endif %}
        {{ cdc_merge.key_in_range_sql('stored._cdc_key', key_range) }}
{% endmacro %}

{% macro databend__stored_keys_sql(relation, batch_keys, key_range, with_positions, key_hashes=none) %}
    {#- with_positions and key_hashes are never set on Databend (deletes_by_position, one commit). batch_keys may repeat a key. -#}
    select
        stored._cdc_key,
        stored._cdc_seq
    from {{ relation }} as stored
    inner join (select distinct _cdc_key from {{ batch_keys }}) as distinct_batch_keys
        on stored._cdc_key = distinct_batch_keys._cdc_key
        {{ cdc_merge.key_in_range_sql('stored._cdc_key', key_range) }}
{% endmacro %}


{% macro key_range_skips_files(relation, key_range) %}
    {#-
        Whether key_in_range_sql lets a read of relation skip any of its data files. Where it skips
        none (random keys), the engine still checks it on every stored key: at 10k events into 30M
        rows 0.2 s of the 1.0 s the stored keys took (BENCHMARKS.md).
    -#}
    {% if key_range is none %}
        {{ return(false) }}
    {% endif %}
    {{ return(adapter.dispatch('key_range_skips_files', 'cdc_merge')(relation, key_range)) }}
{% endmacro %}

{% macro spark__key_range_skips_files(relation, key_range) %}
    {#- Asked of Iceberg's manifests in dbt's own SparkSession; elsewhere not known, so kept. -#}
    {% set skips = adapter.key_range_skips_files(relation, '_cdc_key', key_range.min_hex, key_range.max_hex) %}
    {{ return(skips is none or skips) }}
{% endmacro %}

{% macro databend__key_range_skips_files(relation, key_range) %}
    {#- Not measured on Databend: kept. -#}
    {{ return(true) }}
{% endmacro %}


{% macro key_in_range_sql(column, key_range) %}
    {#-
        The batch's key range as one more condition on a read of stored keys: Iceberg skips the
        data files whose key bounds lie outside it, so a batch of clustered keys (recent rows)
        reads few of the mirror's files (BENCHMARKS.md, "Levers tried"). Every key of the
        batch lies inside it, so it changes no result. The bounds come hex-encoded and are
        decoded by constant expressions, which Spark folds into literals it pushes into the Iceberg scan.
    -#}
    {%- if key_range is not none -%}
        and {{ column }} between cast(unhex('{{ key_range.min_hex }}') as string) and cast(unhex('{{ key_range.max_hex }}') as string)
    {%- endif -%}
{% endmacro %}


{% macro changes_relation(target_relation) %}
    {{ return(target_relation.incorporate(path={'identifier': target_relation.identifier ~ '__cdc_changes'})) }}
{% endmacro %}


{% macro create_changes(changes, classified_sql, in_memory, small=false) %}
    {#-
        The classified batch, computed once for the statements that apply it. Returns {'changes':
        what to read it by, 'counts': its change_counts_columns() where they were taken on the way,
        else none}. in_memory: where the engine can keep it in memory, do (no MERGE joins it with
        the mirror, see changes_as_table). small: a batch of one commit, small enough for the driver.
    -#}
    {{ return(adapter.dispatch('create_changes', 'cdc_merge')(changes, classified_sql, in_memory, small)) }}
{% endmacro %}

{% macro spark__create_changes(changes, classified_sql, in_memory, small) %}
    {#-
        In memory: in dbt's own SparkSession the rows are kept in Spark's block store (a local
        checkpoint, as a temporary view): 1M classified events in 7.2-7.8 s instead of 8.7-9.0 s for
        an Iceberg table (BENCHMARKS.md, "Levers tried"), and the counts are observed while it
        is computed, instead of a query of their own. Otherwise a table, not a cached view:
        Spark rebuilds a cached query as soon as a table it reads is written, even one read at a
        fixed snapshot, so every write after the first would classify the batch again against the
        half-written tables; a checkpoint has no such lineage. A small batch is kept in the driver,
        where reading it costs no Spark job.
    -#}
    {% if in_memory %}
        {% set counts = adapter.create_checkpoint_view(changes.identifier, classified_sql, cdc_merge.change_counts_columns(), small,
            cdc_merge.change_counts() if small else none) %}
        {% if counts is not none %}
            {{ return({'changes': changes.identifier, 'counts': counts}) }}
        {% endif %}
    {% endif %}
    {% do run_query('create or replace table ' ~ changes ~ ' using iceberg as ' ~ classified_sql) %}
    {{ return({'changes': changes, 'counts': none}) }}
{% endmacro %}

{% macro databend__create_changes(changes, classified_sql, in_memory, small) %}
    {% do run_query('create or replace transient table ' ~ changes ~ ' as ' ~ classified_sql) %}
    {{ return({'changes': changes, 'counts': none}) }}
{% endmacro %}


{% macro changes_as_table(batch_changes, changes) %}
    {#-
        The classified batch of create_changes as the table changes, for a MERGE: Spark does not
        know the size of a checkpoint, so it shuffled the whole mirror instead of broadcasting the
        changes (10k changes into 30M rows: 14.6 s instead of 6.4 s, BENCHMARKS.md).
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
