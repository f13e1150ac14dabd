{#
    The mirror must hold exactly the newest non-deleted event of every key in the
    whole raw log newer than the table's last truncate, compared by (key, seq): the row
    values are a function of the event.
    Holds whenever the mirror has applied everything landed so far.
#}

{% test cdc_mirror_matches_log(model, source_table, raw_relation, deletes='hard') %}

with

raw_events as (

    select
        key,
        seq,
        action,
        landed_file,
        landed_line
    from {{ raw_relation }}
    where table_name = '{{ source_table }}'

),

truncated as (

    select coalesce(max(case when action = 'truncate' then seq end), '') as truncate_seq
    from raw_events

),

ranked as (

    select
        key,
        seq,
        action,
        row_number() over (
            partition by key order by seq desc, landed_file desc, landed_line desc
        ) as event_rank
    from raw_events
    where action not in ('truncate', 'schema')

),

replayed as (

    select
        key as _cdc_key,
        seq as _cdc_seq
    from ranked
    where event_rank = 1 and action != 'delete' and seq > (select truncate_seq from truncated)

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
