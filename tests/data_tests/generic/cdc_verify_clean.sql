{#
    Fails when the newest cdc_verify check of the mirror (its row in cdc_merge_verify, beside the
    mirror) found rows missing, extra or different from the source; passes while no check has run.

        data_tests:
          - cdc_merge.cdc_verify_clean
#}

{% test cdc_verify_clean(model) %}
{%- set model = cdc_merge.whole_relation(model) %}
    {% set checks_table = api.Relation.create(database=model.database, schema=model.schema,
        identifier='cdc_merge_verify', type='table') %}
    {% if execute and load_relation(checks_table) is none %}
        select 1 as never_checked where 1 = 0
    {% else %}
        with checks as (
            select *
            from {{ checks_table }}
            where mirror = '{{ model.schema }}.{{ model.identifier }}'
        ),

        newest as (
            select max(checked_at) as checked_at
            from checks
        ),

        final as (
            select checks.*
            from checks
            inner join newest
                on checks.checked_at = newest.checked_at
            where not checks.clean
        )

        select * from final
    {% endif %}
{% endtest %}
