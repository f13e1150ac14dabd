{{
    config(
        materialized='cdc_history',
        unique_key='id',
        source_table='shop.customers',
        deletes=var('cdc_history_deletes', 'hard'),
    )
}}

with

events as (

    select * from {{ cdc_merge.cdc_events(ref('raw_events')) }}

),

final as (

    select
        {{ cdc_merge.cdc_columns({
            'id': 'bigint',
            'name': 'string',
            'email': 'string',
            'tier': 'string',
            'updated_at': 'timestamp',
        }) }},
        {{ cdc_merge.cdc_metadata_columns() }}
    from events

)

select * from final
