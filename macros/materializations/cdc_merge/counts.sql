{#
    Change counts: what a classified batch holds per kind of change (change_counts_columns),
    added up per chunk and run (add_counts) for the offsets log and the run's summary line.
#}

{% macro change_counts() %}
    {#-
        What apply_batch needs to know of a classified batch, as [name, aggregate, operand]: count
        (rows), count_if (rows where the operand holds) or max (the newest of a timestamp, as a
        string). change_counts_columns() writes them as select-list items; the rows of a batch the
        driver holds are counted by the adapter instead, with no Spark job (driver_counts.py).
    -#}
    {{ return([
        ['events_read', 'count', '*'],
        ['inserted', 'count_if', "_cdc_change = 'insert'"],
        ['updated', 'count_if', "_cdc_change = 'update'"],
        ['partial_updates', 'count_if', "_cdc_change = 'update' and " ~ cdc_merge.any_unavailable_sql('_cdc_unavailable')],
        ['deleted', 'count_if', "_cdc_change = 'delete'"],
        ['tombstoned', 'count_if', "_cdc_change = 'tombstone'"],
        ['skipped', 'count_if', "_cdc_change = 'skip'"],
        ['revived', 'count_if', "_cdc_change = 'insert' and _cdc_tombstone_seq is not null"],
        ['stored_tombstones', 'count_if', '_cdc_tombstone_seq is not null'],
        ['tombstones_replaced', 'count_if', cdc_merge.tombstone_replaced_sql()],
        ['tombstones_added', 'count_if', cdc_merge.tombstone_added_sql()],
        ['max_source_ts', 'max', '_cdc_source_ts'],
    ]) }}
{% endmacro %}

{% macro change_counts_columns() %}
    {#- change_counts() as select-list items; '' rather than null for max_source_ts: databend-py hands a NULL over as the string 'NULL'. -#}
    {% set columns = [] %}
    {% for name, aggregate, operand in cdc_merge.change_counts() %}
        {% if aggregate == 'max' %}
            {% do columns.append("coalesce(cast(max(" ~ operand ~ ") as string), '') as " ~ name) %}
        {% else %}
            {% do columns.append(aggregate ~ "(" ~ operand ~ ") as " ~ name) %}
        {% endif %}
    {% endfor %}
    {{ return(columns) }}
{% endmacro %}

{% macro change_counts_sql(changes_view) %}
    select
        {{ cdc_merge.change_counts_columns() | join(',\n        ') }}
    from {{ changes_view }}
{% endmacro %}


{% macro no_counts(chunks=none) %}
    {#- A run's, chunk's or offset row's counts before anything is applied; with chunks: a run's totals. -#}
    {% set counts = {'events_read': 0, 'inserted': 0, 'updated': 0, 'deleted': 0, 'skipped': 0, 'max_source_ts': none} %}
    {% if chunks is not none %}
        {% do counts.update({'chunks': chunks}) %}
    {% endif %}
    {{ return(counts) }}
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
