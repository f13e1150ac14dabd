{#
    Change counts: what a classified batch holds per kind of change (change_counts_columns),
    added up per chunk and run (add_counts) for the offsets log and the run's summary line.
#}

{% macro change_counts_columns() %}
    {#- What apply_batch needs to know of a classified batch: its counts per change, as select-list items. -#}
    {{ return([
        "count(*) as events_read",
        "count_if(_cdc_change = 'insert') as inserted",
        "count_if(_cdc_change = 'update') as updated",
        "count_if(_cdc_change = 'update' and " ~ cdc_merge.any_unavailable_sql('_cdc_unavailable') ~ ") as partial_updates",
        "count_if(_cdc_change = 'delete') as deleted",
        "count_if(_cdc_change = 'tombstone') as tombstoned",
        "count_if(_cdc_change = 'skip') as skipped",
        "count_if(_cdc_change = 'insert' and _cdc_tombstone_seq is not null) as revived",
        "count_if(_cdc_tombstone_seq is not null) as stored_tombstones",
        "count_if(" ~ cdc_merge.tombstone_replaced_sql() ~ ") as tombstones_replaced",
        "count_if(" ~ cdc_merge.tombstone_added_sql() ~ ") as tombstones_added",
        "coalesce(cast(max(_cdc_source_ts) as string), '') as max_source_ts",
    ]) }}
    {#- '' rather than null for max_source_ts: databend-py hands a NULL over as the string 'NULL'. #}
{% endmacro %}

{% macro change_counts_sql(changes_view) %}
    select
        {{ cdc_merge.change_counts_columns() | join(',\n        ') }}
    from {{ changes_view }}
{% endmacro %}


{% macro add_counts(totals, counts) %}
    {#- Adds a batch's or chunk's counts into totals, in place; keeps the newest source time. -#}
    {% for name in ['events_read', 'inserted', 'updated', 'deleted', 'skipped'] %}
        {% do totals.update({name: totals[name] + counts[name]}) %}
    {% endfor %}
    {% if counts.max_source_ts and (totals.max_source_ts is none or counts.max_source_ts > totals.max_source_ts) %}
        {% do totals.update({'max_source_ts': counts.max_source_ts}) %}
    {% endif %}
{% endmacro %}


{% macro summary_line(totals) %}
    {%- set lag = 'n/a' -%}
    {%- if totals.max_source_ts -%}
        {%- set newest = modules.datetime.datetime.fromisoformat(totals.max_source_ts) -%}
        {%- set lag = (modules.datetime.datetime.utcnow() - newest).total_seconds() | round(1) ~ ' s' -%}
    {%- endif -%}
    {{ return(totals.chunks ~ " chunk(s), " ~ totals.events_read ~ " keys changed: " ~ totals.inserted ~ " inserted, "
        ~ totals.updated ~ " updated, " ~ totals.deleted ~ " deleted, " ~ totals.skipped ~ " skipped as not newer; lag "
        ~ lag ~ " (newest applied source commit to now)") }}
{% endmacro %}
