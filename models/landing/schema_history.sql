{{ config(materialized='view') }}

with

raw_events as (

    select * from {{ ref('raw_events') }}

),

table_events as (

    select
        table_name,
        seq,
        source_ts,
        action,
        raw_data,
        before_data,
        landed_file,
        landed_line,
        landed_at
    from raw_events
    where action in ('schema', 'truncate')

),

final as (

    select
        table_name as source_table,
        seq as source_position,
        source_ts,
        action as change_type,
        {{ cdc_merge.json_member_text('raw_data', 'ddl') }} as ddl,
        {{ cdc_merge.json_member_text('before_data', 'columns') }} as columns_before,
        {{ cdc_merge.json_member_text('raw_data', 'columns') }} as columns_after,
        landed_file,
        landed_line,
        landed_at
    from table_events

)

select * from final
