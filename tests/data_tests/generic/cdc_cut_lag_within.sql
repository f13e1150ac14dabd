{#
    Fails when a mirror of a consistency group holds transactions back for more than
    max_cut_lag_seconds: its newest run (cdc_merge_runs) left the group's cut that far behind the
    newest landed source commit, in source time (cut_lag_seconds). A transaction whose end record
    never lands (a lost file of the transaction topic, a capture stopped half way) holds the whole
    group there, and the lag grows with every later commit (docs/consistent_cuts.md).
    Also when the mirror's newest run is that far older than the group's newest run, of an invocation
    without it: while a mirror of the group fails, no cut is written, and the others' runs record a lag
    of 0 (nothing of theirs waits).
    offsets_schema: where the mirror's cdc_merge_runs is, if not its own schema.
#}

{% test cdc_cut_lag_within(model, max_cut_lag_seconds, offsets_schema=none) %}

{%- do cdc_merge.write_kept_rows_for_readers() %}
{%- set runs = api.Relation.create(schema=offsets_schema or model.schema, identifier='cdc_merge_runs', type='table') %}

with

newest_run as (

    select consistency_group, cut_lag_seconds, finished_at, invocation_id
    from {{ runs }}
    where target_table = '{{ model }}'
        and finished_at = (select max(finished_at) from {{ runs }} where target_table = '{{ model }}')

),

group_runs as (

    select invocation_id, finished_at
    from {{ runs }}
    where consistency_group in (select consistency_group from newest_run)

),

group_newest_run as (

    select max(finished_at) as finished_at
    from group_runs

),

group_newest_invocation as (

    select distinct group_runs.invocation_id
    from group_runs
    inner join group_newest_run on group_runs.finished_at = group_newest_run.finished_at

),

{#- Behind the group when the group's newest run was of another invocation: its mirrors ran without this one. -#}
lags as (

    select
        newest_run.consistency_group,
        newest_run.cut_lag_seconds,
        case
            when same_invocation.invocation_id is not null then 0
            else {{ cdc_merge.seconds_since_sql('newest_run.finished_at') }}
                - {{ cdc_merge.seconds_since_sql('group_newest_run.finished_at') }}
        end as behind_group_seconds
    from newest_run
    cross join group_newest_run
    left join group_newest_invocation as same_invocation
        on newest_run.invocation_id = same_invocation.invocation_id

),

final as (

    select
        'group ' || consistency_group || ': the cut is ' || cast(cut_lag_seconds as string)
            || ' s of source time behind the newest landed commit; a transaction waits for its end' as problem
    from lags
    where cut_lag_seconds > {{ max_cut_lag_seconds }}

    union all

    select
        'group ' || consistency_group || ': this mirror''s newest run is ' || cast(round(behind_group_seconds) as string)
            || ' s older than the group''s newest, and no cut is written meanwhile; see why its runs fail' as problem
    from lags
    where behind_group_seconds > {{ max_cut_lag_seconds }}

)

select * from final

{% endtest %}
