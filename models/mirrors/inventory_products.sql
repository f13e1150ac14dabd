{#
    The products table of Debezium's tutorial inventory database, as captured in the
    Flink JSON format test fixtures (tests/fixtures/flink). Flink reads weight as
    FLOAT, and its expected tables print that reading.
#}

{{
    config(
        unique_key='id',
        source_table='inventory.products',
    )
}}

with

events as (

    select * from {{ cdc_merge.cdc_events(ref('raw_events')) }}

),

final as (

    select
        {{ cdc_merge.cdc_columns({
            'id': 'int',
            'name': 'string',
            'description': 'string',
            'weight': 'float',
        }) }},
        {{ cdc_merge.cdc_metadata_columns() }}
    from events

)

select * from final
