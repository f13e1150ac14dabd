{{
    config(
        unique_key=['order_id', 'line_no'],
        source_table='shop.order_lines',
    )
}}

with

events as (

    select * from {{ cdc_merge.cdc_events(ref('raw_events')) }}

),

final as (

    select
        {{ cdc_merge.cdc_columns({
            'order_id': 'bigint',
            'line_no': 'int',
            'sku': 'string',
            'quantity': 'int',
            'unit_price': 'decimal(10,2)',
        }) }},
        {{ cdc_merge.cdc_metadata_columns() }}
    from events

)

select * from final
