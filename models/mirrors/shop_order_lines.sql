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
        {{ cdc_merge.cdc_column('order_id', 'bigint') }},
        {{ cdc_merge.cdc_column('line_no', 'int') }},
        {{ cdc_merge.cdc_column('sku', 'string') }},
        {{ cdc_merge.cdc_column('quantity', 'int') }},
        {{ cdc_merge.cdc_column('unit_price', 'decimal(10,2)') }},
        {{ cdc_merge.cdc_metadata_columns() }}
    from events

)

select * from final
