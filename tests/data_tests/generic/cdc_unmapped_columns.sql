{#
    A row for each source column the mirror does not read: a field of the table's newest row
    images (up to recent_events of them, those since its newest schema change where it has any) that the model neither selects as a column (as its run
    kept them: model_columns.sql) nor names in its code (unmapped.sql). List the source columns left out on purpose in `ignored`. A warning by
    default: a source's new column is drift to report, not a reason for a pipeline (dbt build,
    cdc-run) to stop applying; `config: {severity: error}` makes it fail. The columns found are
    also logged by name, as dbt's own line says only how many.
#}

{% test cdc_unmapped_columns(model, source_table, raw_relation, ignored=[], recent_events=1000) %}
{%- set model = cdc_merge.whole_relation(model) %}
{%- set raw_relation = cdc_merge.whole_relation(raw_relation) %}

{{ config(severity='warn') }}

{%- set mapped = [] -%}
{%- set since_changed = 'true' -%}
{%- if execute -%}
    {%- set nodes = graph.nodes.values() | selectattr('resource_type', 'equalto', 'model')
        | selectattr('alias', 'equalto', model.identifier) | list -%}
    {%- set code = nodes[0].raw_code if nodes else '' -%}
    {#- The model's own output columns where its run kept them (model_columns.sql), else the mirror's. -#}
    {%- set offsets = api.Relation.create(database=model.database, schema=(nodes[0].config.get('offsets_schema') if nodes else none) or model.schema,
        identifier='cdc_merge_offsets', type='table') -%}
    {%- set columns = cdc_merge.remembered_model_columns(model, offsets) if nodes else none -%}
    {%- if columns is none -%}
        {%- set columns = adapter.get_columns_in_relation(model) | map(attribute='name') | list -%}
    {%- endif -%}
    {%- set mapped = cdc_merge.mapped_names(code, columns) + (ignored | map('lower') | list) -%}
    {#- Images since the table's newest schema change where there are any: a column the source dropped or renamed
        is in the images before it, not in the table. -#}
    {%- set changed = run_query("select max(seq) as seq from " ~ raw_relation ~ " where table_name = '" ~ source_table
        ~ "' and key = '[]' and action = 'schema'").rows[0]['seq'] -%}
    {%- if changed is not none -%}
        {%- set since = "seq > '" ~ changed ~ "'" -%}
        {%- set later = run_query("select count(*) as images from " ~ raw_relation ~ " where table_name = '" ~ source_table
            ~ "' and action in ('insert', 'update', 'read') and raw_data is not null and " ~ since).rows[0]['images'] | int -%}
        {%- set since_changed = since if later > 0 else 'true' -%}
    {%- endif -%}
{%- endif %}

{%- set unmapped_sql %}
with

fields as (

    {{ cdc_merge.image_fields_sql(
        'select raw_data from ' ~ raw_relation ~ " where table_name = '" ~ source_table
        ~ "' and action in ('insert', 'update', 'read') and raw_data is not null and " ~ since_changed
        ~ " order by seq desc limit " ~ recent_events,
        'raw_data') }}

),

final as (

    select
        field as unmapped_column
    from fields
    where lower(field) not in ('{{ mapped | map("replace", "'", "''") | join("', '") }}')

)

select * from final
{%- endset %}

{#- dbt says only how many rows a test found: the columns, and what to do, are said here. -#}
{%- if execute -%}
    {%- set unmapped = run_query(unmapped_sql).columns[0].values() | list -%}
    {%- if unmapped -%}
        {{ log("cdc_unmapped_columns " ~ model ~ ": " ~ source_table ~ " has columns the mirror does not read: "
            ~ unmapped | join(', ') ~ ". Add them to the model (cdc-scaffold --overwrite writes it anew), or list them in"
            ~ " the test's ignored: (docs/schema_changes.md).", info=True) }}
    {%- endif -%}
{%- endif %}

{{ unmapped_sql }}

{% endtest %}
