{#
    A row for each source column the mirror does not read: a field of the table's newest row
    images (up to recent_events of them, since its newest schema change or whole row, below) that the model neither
    selects as a column (as its run kept them: model_columns.sql) nor names in its code (unmapped.sql). List the source columns left out on purpose in `ignored`. A warning by
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
{%- set columns_after = none -%}
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
    {#- A column the source dropped or renamed is in the images before the change, not in the table: the images read
        are those since its newest schema change where there are any, and those since its newest insert or read
        (a whole row: a column missing there was dropped, as PostgreSQL's log says nothing of a drop) where that is
        newer. With no image since the newest schema change, its columns (where it lists them) are the table's. -#}
    {%- set where_table = raw_relation ~ " where table_name = '" ~ source_table ~ "'" -%}
    {%- set changes = run_query("select seq, raw_data from " ~ where_table ~ " and key = '[]' and action = 'schema'"
        ~ " order by seq desc limit 1").rows -%}
    {%- set whole = run_query("select max(seq) as seq from " ~ where_table
        ~ " and action in ('insert', 'read') and raw_data is not null").rows[0]['seq'] -%}
    {%- set start = none -%}
    {%- if changes -%}
        {%- set later = run_query("select count(*) as images from " ~ where_table ~ " and action in ('insert', 'update', 'read')"
            ~ " and raw_data is not null and seq > '" ~ changes[0]['seq'] ~ "'").rows[0]['images'] | int -%}
        {%- if later > 0 -%}
            {%- set start = changes[0]['seq'] -%}
            {%- set since_changed = "seq > '" ~ start ~ "'" -%}
        {%- else -%}
            {%- set change = changes[0]['raw_data'] -%}
            {%- set change = fromjson(change) if change is string else change -%}
            {%- if change is mapping and change.get('columns') is iterable and change.get('columns') is not string -%}
                {%- set columns_after = change['columns'] | map(attribute='name') | map('lower') | list -%}
            {%- endif -%}
        {%- endif -%}
    {%- endif -%}
    {%- if whole is not none and (start is none or whole > start) -%}
        {%- set since_changed = "seq >= '" ~ whole ~ "'" -%}
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
    where
        lower(field) not in ('{{ mapped | map("replace", "'", "''") | join("', '") }}')
        {%- if columns_after is not none %}
        and lower(field) in ('{{ columns_after | map("replace", "'", "''") | join("', '") }}')
        {%- endif %}

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
