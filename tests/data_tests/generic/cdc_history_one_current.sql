{#
    Exactly one current version per live key, and none for a key the log has deleted (with
    deletes='soft' a deleted key's current version is its delete, is_deleted = true). Live and
    deleted are read from the raw log: the newest event per key, as cdc_mirror_matches_log does;
    the current version must be that event's (_cdc_seq, or _cdc_updated_seq with track_columns).
    Holds whenever the history has applied everything landed so far.
#}

{% test cdc_history_one_current(model, source_table, raw_relation) %}

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
    where table_name = '{{ source_table }}'

),

live_keys as (

    select
        key as _cdc_key,
        seq as newest_seq
    from ranked
    where event_rank = 1 and action != 'delete'

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
