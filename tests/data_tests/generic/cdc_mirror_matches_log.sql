{#
    The mirror must hold exactly the newest non-deleted event of every key in the raw log
    up to the mirror's own offset (the raw table as it stood at the snapshot the mirror has
    applied through) and newer than the table's last truncate, compared by (key, seq): the
    row values are a function of the event.
    A mirror that has not yet applied the newest landed events still passes: lag is
    cdc_lag_within's to check. Without an offset (no run yet, or a Databend stream) the whole
    log is compared.
    After raw-log retention (docs/maintenance.md) the comparison is the same: retention only
    removes events that a newer event of the same key supersedes, so the newest event of
    every key, which is what is compared, is never gone.
    A key an online snapshot's range removed (snapshot_ranges.sql: the source no longer has it,
    and the log has no delete of it) counts as deleted at that range's low watermark, as the
    mirror's own delete of it says: its tombstone (soft deletes: its row marked deleted) there.
    deletes is the mode the mirror was built with, read from its table (soft: it has the
    _cdc_deleted column) unless given: a mirror made soft by its config or by the var
    cdc_merge_deletes keeps its deleted rows, which a hard comparison counted as unexpected.
#}

{% test cdc_mirror_matches_log(model, source_table, raw_relation, deletes=none, offsets_schema=none) %}
{%- set model = cdc_merge.whole_relation(model) %}
{%- set raw_relation = cdc_merge.whole_relation(raw_relation) %}

{%- if deletes is none %}
    {%- set deletes = 'hard' %}
    {%- if execute and load_relation(model) is not none %}
        {%- set column_names = adapter.get_columns_in_relation(model) | map(attribute='name') | map('lower') | list %}
        {%- set deletes = 'soft' if '_cdc_deleted' in column_names else 'hard' %}
    {%- endif %}
{%- endif %}
{%- do cdc_merge.write_kept_rows_for_readers() %}
{%- set log = namespace(relation=raw_relation) %}
{%- set tombstones = cdc_merge.tombstones_relation(model) if deletes == 'hard' else none %}
{%- set has_tombstones = execute and tombstones is not none and load_relation(tombstones) is not none %}
{%- if execute %}
    {%- set offsets = adapter.get_relation(database=none, schema=offsets_schema or model.schema, identifier='cdc_merge_offsets') %}
    {%- if offsets is not none %}
        {%- set latest = run_query(cdc_merge.latest_offset_sql(offsets, model)).rows %}
        {%- if latest | length and latest[0]['offset_snapshot'] != 'stream' %}
            {%- set log.relation = cdc_merge.relation_at_snapshot_sql(raw_relation, latest[0]['offset_snapshot']) %}
        {%- endif %}
    {%- endif %}
{%- endif %}

with

{#- Not named raw_events: Databend would read that name in range_lows' raw_1.raw_events as this CTE. #}
table_events as (

    select
        key,
        seq,
        action,
        landed_file,
        landed_line
    from {{ log.relation }}
    where table_name = '{{ source_table }}'

),

truncated as (

    select coalesce(max(case when action = 'truncate' then seq end), '') as truncate_seq
    from table_events

),

ranked as (

    select
        key,
        seq,
        action,
        row_number() over (
            partition by key order by seq desc, landed_file desc, landed_line desc
        ) as event_rank
    from table_events
    where action not in ('truncate', 'schema', 'range')

),

range_lows as (

    select {{ cdc_merge.json_member_text('raw_data', 'low') }} as low_seq
    from {{ log.relation }}
    where table_name = '{{ source_table }}' and action = 'range'

),

removed_by_ranges as (

    select
        deleted._cdc_key,
        deleted._cdc_seq
    from (
        {%- if deletes == 'soft' %}
        select _cdc_key, _cdc_seq from {{ model }} where _cdc_deleted
        {%- elif has_tombstones %}
        select _cdc_key, _cdc_seq from {{ tombstones }}
        {%- else %}
        select _cdc_key, _cdc_seq from {{ model }} where false
        {%- endif %}
    ) as deleted
    inner join range_lows on deleted._cdc_seq = range_lows.low_seq

),

replayed as (

    select
        ranked.key as _cdc_key,
        ranked.seq as _cdc_seq
    from ranked
    left join removed_by_ranges
        on removed_by_ranges._cdc_key = ranked.key and removed_by_ranges._cdc_seq > ranked.seq
    where
        ranked.event_rank = 1 and ranked.action != 'delete' and ranked.seq > (select truncate_seq from truncated)
        and removed_by_ranges._cdc_key is null

),

mirrored as (

    select
        _cdc_key,
        _cdc_seq
    from {{ model }}
    {%- if deletes == 'soft' %}
    where not _cdc_deleted
    {%- endif %}

),

missing as (

    select
        'in the replayed log, not in the mirror' as problem,
        *
    from (select * from replayed except select * from mirrored) as difference

),

unexpected as (

    select
        'in the mirror, not in the replayed log' as problem,
        *
    from (select * from mirrored except select * from replayed) as difference

),

final as (

    select * from missing
    union all
    select * from unexpected

)

select * from final

{% endtest %}
