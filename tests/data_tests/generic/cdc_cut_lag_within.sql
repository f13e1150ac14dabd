{#
    Fails when a mirror of a consistency group holds transactions back for more than
    max_cut_lag_seconds: its newest run (cdc_merge_runs) left the group's cut that far behind the
    newest landed source commit, in source time (cut_lag_seconds). A transaction whose end record
    never lands (a lost file of the transaction topic, a capture stopped half way) holds the whole
    group there, and the lag grows with every later commit (docs/consistent_cuts.md).
    offsets_schema: where the mirror's cdc_merge_runs is, if not its own schema.
#}

{% test cdc_cut_lag_within(model, max_cut_lag_seconds, offsets_schema=none) %}

{%- do cdc_merge.write_kept_rows_for_readers() %}
{%- set runs = api.Relation.create(schema=offsets_schema or model.schema, identifier='cdc_merge_runs', type='table') %}

with

newest_run as (

    select consistency_group, cut_lag_seconds
    from {{ runs }}
    where target_table = '{{ model }}'
        and finished_at = (select max(finished_at) from {{ runs }} where target_table = '{{ model }}')

),

final as (

    select
        'group ' || consistency_group || ': the cut is ' || cast(cut_lag_seconds as string)
            || ' s of source time behind the newest landed commit; a transaction waits for its end' as problem
    from newest_run
    where cut_lag_seconds > {{ max_cut_lag_seconds }}

)

select * from final

{% endtest %}
