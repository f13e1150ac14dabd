{{
    config(
        unique_key='id',
        source_table='shop.customers',
    )
}}

with

events as (

    select * from {{ cdc_merge.cdc_events(ref('raw_events')) }}

),

final as (

    select
        {{ cdc_merge.cdc_column('id', 'bigint') }},
        {{ cdc_merge.cdc_column('name', 'string') }},
        {{ cdc_merge.cdc_column('email', 'string') }},
        {{ cdc_merge.cdc_column('tier', 'string') }},
        {{ cdc_merge.cdc_column('updated_at', 'timestamp') }},
        {{ cdc_merge.cdc_metadata_columns() }}
    from events

)

select * from final
