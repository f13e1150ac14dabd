{{
    config(
        unique_key='id',
        source_table='shop.orders',
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
            'customer_id': 'bigint',
            'status': 'string',
            'amount': 'decimal(18,2)',
            'ordered_at': 'timestamp',
        }) }},
        {{ cdc_merge.cdc_metadata_columns() }}
    from events

)

select * from final
