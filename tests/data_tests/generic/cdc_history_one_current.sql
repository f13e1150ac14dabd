{#
    Exactly one current version per live key, and none for a key the log has deleted (with
    deletes='soft' a deleted key's current version is its delete, is_deleted = true). Live and
    deleted are read from the raw log: the newest event per key, as cdc_mirror_matches_log does;
    the current version must be that event's (_cdc_seq, or _cdc_updated_seq with track_columns).
    Holds whenever the history has applied everything landed so far.
    A key an online snapshot's range closed (cdc_history's ranges.sql: the source no longer has it,
    and the log has no delete of it) counts as deleted at that range's low watermark, as the
    history's own delete of it says: in its deletes table (soft deletes: its delete version) there.
    A key whose newest event is older than the table's last truncate counts as deleted, as in
    cdc_mirror_matches_log.
#}

{% test cdc_history_one_current(model, source_table, raw_relation) %}
{%- set model = cdc_merge.whole_relation(model) %}
{%- set raw_relation = cdc_merge.whole_relation(raw_relation) %}

{%- set deletes = cdc_merge.history_deletes_relation(model) %}
{%- set has_deletes = execute and load_relation(deletes) is not none %}

with

ranked as (

    select
        key,
        seq,
        action,
        row_number() over (
            partition by key order by seq desc, landed_file desc, landed_line desc
        ) as event_rank
    from {{ raw_relation }}
    where table_name = '{{ source_table }}' and action not in ('truncate', 'schema', 'range')

),

truncated as (

    select coalesce(max(seq), '') as truncate_seq
    from {{ raw_relation }}
    where table_name = '{{ source_table }}' and action = 'truncate'

),

range_lows as (

    select {{ cdc_merge.json_member_text('raw_data', 'low') }} as low_seq
    from {{ raw_relation }}
    where table_name = '{{ source_table }}' and action = 'range'

),

closed_by_ranges as (

    select
        deleted._cdc_key,
        deleted._cdc_seq
    from (
        select _cdc_key, _cdc_seq from {{ model }} where is_deleted
        {%- if has_deletes %}
        union all
        select _cdc_key, _cdc_seq from {{ deletes }}
        {%- endif %}
    ) as deleted
    inner join range_lows on deleted._cdc_seq = range_lows.low_seq

),

live_keys as (

    select
        ranked.key as _cdc_key,
        ranked.seq as newest_seq
    from ranked
    left join closed_by_ranges
        on closed_by_ranges._cdc_key = ranked.key and closed_by_ranges._cdc_seq > ranked.seq
    where
        ranked.event_rank = 1
        and ranked.action != 'delete'
        and closed_by_ranges._cdc_key is null
        and ranked.seq > (select truncated.truncate_seq from truncated)

),

current_versions as (

    select
        _cdc_key,
        count(*) as current_rows,
        max(_cdc_updated_seq) as updated_seq
    from {{ model }}
    where is_current and not is_deleted
    group by _cdc_key

),

final as (

    select
        coalesce(live_keys._cdc_key, current_versions._cdc_key) as _cdc_key,
        live_keys.newest_seq,
        current_versions.current_rows,
        current_versions.updated_seq
    from live_keys
    full outer join current_versions
        on live_keys._cdc_key = current_versions._cdc_key
    where
        live_keys._cdc_key is null
        or current_versions._cdc_key is null
        or current_versions.current_rows != 1
        or current_versions.updated_seq != live_keys.newest_seq

)

select * from final

{% endtest %}
