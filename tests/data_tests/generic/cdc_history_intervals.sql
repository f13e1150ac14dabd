{#
    Each key's versions, in source order (_cdc_seq), are intervals that never overlap and never
    run backwards: valid_from <= valid_to, each valid_to at or before the next version's
    valid_from (equal unless a hard delete left a gap), and only the last version open
    (valid_to null) and current.
#}

{% test cdc_history_intervals(model) %}

with

versions as (

    select
        _cdc_key,
        _cdc_seq,
        valid_from,
        valid_to,
        is_current,
        lead(valid_from) over (partition by _cdc_key order by _cdc_seq) as next_valid_from,
        lead(_cdc_seq) over (partition by _cdc_key order by _cdc_seq) as next_seq
    from {{ model }}

),

final as (

    select *
    from versions
    where
        valid_to < valid_from
        or next_valid_from < valid_to
        or (next_seq is not null and (valid_to is null or is_current))
        or (next_seq is null and (valid_to is null) != is_current)

)

select * from final

{% endtest %}
