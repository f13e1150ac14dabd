{#
    Fails when a mirror falls behind its source by more than max_lag_seconds, seen two ways:
    - its newest run (cdc_merge_runs) applied a source commit more than max_lag_seconds after
      the source made it (lag_seconds; a run that applied nothing has none);
    - with raw_relation and source_table: events of the source table landed more than
      max_lag_seconds ago and after the newest run started, so no run has applied them yet.
      (Events that landed while that run was starting may have been applied by it: with runs
      more frequent than max_lag_seconds this never fails wrongly.)
    offsets_schema: where the mirror's cdc_merge_offsets and cdc_merge_runs are, if not its own schema.
#}

{% test cdc_lag_within(model, max_lag_seconds, source_table=none, raw_relation=none, offsets_schema=none) %}

{%- do cdc_merge.write_kept_rows_for_readers() %}
{%- set runs = api.Relation.create(schema=offsets_schema or model.schema, identifier='cdc_merge_runs', type='table') %}

with

{#- No order by ... limit in these subqueries: Databend 1.2.453 panics on one inside a union. #}
newest_run as (

    select lag_seconds
    from {{ runs }}
    where target_table = '{{ model }}'
        and finished_at = (select max(finished_at) from {{ runs }} where target_table = '{{ model }}')

),

slow_run as (

    select
        'the newest run applied a source commit ' || cast(lag_seconds as string) || ' s after it was made' as problem,
        1 as events
    from newest_run
    where lag_seconds > {{ max_lag_seconds }}

),

{% if raw_relation is not none and source_table is not none -%}
waiting as (

    select
        'events landed more than {{ max_lag_seconds }} s ago wait for a run' as problem,
        count(*) as events
    from {{ raw_relation }}
    where table_name = '{{ source_table }}'
        and landed_at < {{ cdc_merge.seconds_ago_sql(max_lag_seconds) }}
        and landed_at > coalesce(
            (select max(started_at) from {{ runs }} where target_table = '{{ model }}'),
            cast('1970-01-01 00:00:00' as timestamp)
        )

),
{%- endif %}

final as (

    select * from slow_run
    {%- if raw_relation is not none and source_table is not none %}
    union all
    select * from waiting where events > 0
    {%- endif %}

)

select * from final

{% endtest %}
