{#
    What changed in shop.customers during one hour, and what each row was before and after,
    with the row as the mirror holds it now. The range is set per run:
        dbt run --select customer_changes --vars '{changes_from: "2026-01-01 00:00:00", changes_to: "2026-01-01 01:00:00"}'
#}

{{ config(materialized='table') }}

with

changes as (

    {{ cdc_merge.cdc_changes(
        'shop.customers',
        var('changes_from', '2026-01-01 00:00:00'),
        var('changes_to', '2026-01-01 01:00:00'),
        keys=var('changes_keys', none),
        raw=ref('raw_events'),
        mirror=ref('shop_customers'),
    ) }}

),

final as (

    select * from changes

)

select * from final
