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
        {{ cdc_merge.cdc_column('id', 'bigint') }},
        {{ cdc_merge.cdc_column('customer_id', 'bigint') }},
        {{ cdc_merge.cdc_column('status', 'string') }},
        {{ cdc_merge.cdc_column('amount', 'decimal(18,2)') }},
        {{ cdc_merge.cdc_column('ordered_at', 'timestamp') }},
        {{ cdc_merge.cdc_metadata_columns() }}
    from events

)

select * from final
