{#
    Columns the source added with a value for the rows it already had (ALTER TABLE ... ADD COLUMN
    ... DEFAULT 0), which no row change carries: the captures write it in their schema change event
    (raw_data's existing_rows), and the mirror's rows older than that event take it
    (python_jobs/apply/column_defaults.py says why that is right whatever the order). Applied after a
    chunk's batches, for the chunk's events; and after a backfill, for every such event in the raw
    log, when the model adds the column later. A row keeps its _cdc_seq: the value is of that version.
    The same events say which columns the source widened from a 32-bit float to a double; a mirror's
    double column holds, in the rows older than that, the exact value of their float, as the source's
    rows do (the captures' schema events always carry existing_rows, so both are found alike).
    An event older than such an event that lands in a later chunk (a late or re-landed file, an online
    snapshot's page read before the ALTER) is older than the addition too: a chunk takes the table's
    events of the raw log newer than its oldest, and sets the rows it wrote older than them.
#}

{% macro chunk_column_defaults(chunk_view, cfg, chunk_plan) %}
    {#- [seq, raw_data] of the chunk's schema events that carry existing_rows; from the chunk plan where it has them. -#}
    {% if chunk_plan is not none and chunk_plan.get('column_defaults') is not none %}
        {{ return(chunk_plan['column_defaults']) }}
    {% endif %}
    {{ return(cdc_merge.column_default_events(chunk_view, cfg.source_table, "_change_type = 'INSERT'")) }}
{% endmacro %}


{% macro chunk_known_column_defaults(chunk_view, cfg, chunk_events, run_cache, chunk, target_relation, facts=none) %}
    {#-
        The chunk's events and those the mirror applied before it newer than the chunk's oldest (a chunk's
        late rows are older than them): as this process kept them (applied_schema_events.py), or else from
        the raw log, read once a run (run_cache: a dict kept for the run). The chunk's oldest event comes
        from the chunk's facts, or a query, and only where such events are outside the chunk.
    -#}
    {% set chunk_seqs = chunk_events | map('first') | list %}
    {% set applied = adapter.cdc_applied_column_defaults(target_relation | string, cfg.raw_relation | string, cfg.source_table, chunk) %}
    {% if applied is none %}
        {% if 'column_default_events' not in run_cache %}
            {% do run_cache.update({'column_default_events': cdc_merge.column_default_events(cfg.raw_relation, cfg.source_table)}) %}
        {% endif %}
        {% set applied = run_cache['column_default_events'] %}
    {% endif %}
    {% do run_cache.update({'applied_before_chunk': applied}) %}
    {% set outside = [] %}
    {% for event in applied if event[0] not in chunk_seqs %}
        {% do outside.append(event) %}
    {% endfor %}
    {% if not outside %}
        {{ return({'events': chunk_events, 'chunk_seqs': chunk_seqs, 'since': none}) }}
    {% endif %}
    {% set oldest = facts.get('oldest_seq') if facts is not none else none %}
    {% if oldest is none %}
        {% set oldest = run_query(adapter.dispatch('oldest_event_seq_sql', 'cdc_merge')(chunk_view, cfg.source_table)).rows[0][0] %}
    {% endif %}
    {% if not oldest %}
        {{ return({'events': chunk_events, 'chunk_seqs': chunk_seqs, 'since': none}) }}
    {% endif %}
    {% set events = chunk_events | list %}
    {% for event in outside if event[0] >= oldest %}
        {% do events.append(event) %}
    {% endfor %}
    {{ return({'events': events, 'chunk_seqs': chunk_seqs, 'since': oldest}) }}
{% endmacro %}


{% macro keep_applied_column_defaults(target_relation, cfg, chunk, offset_to, run_cache, chunk_events) %}
    {#- Once the chunk's offset is kept: what the mirror has applied, for its next chunk in this process (quiet chunks too). -#}
    {% do adapter.cdc_keep_applied_column_defaults(target_relation | string, cfg.raw_relation | string, cfg.source_table, chunk, offset_to,
        run_cache.pop('applied_before_chunk', none), chunk_events or []) %}
{% endmacro %}

{% macro spark__oldest_event_seq_sql(chunk_view, source_table) %}
    select min(seq) from {{ chunk_view }}
    where _change_type = 'INSERT' and table_name = '{{ source_table }}'
{% endmacro %}

{% macro databend__oldest_event_seq_sql(chunk_view, source_table) %}
    select min(seq) from {{ chunk_view }}
    where _change_type = 'INSERT' and table_name = '{{ source_table }}'
{% endmacro %}


{% macro apply_chunk_column_defaults(target_relation, chunk_view, cfg, chunk_events, column_types, run_cache, chunk, facts=none, kept_unless=none,
    values_seq='_cdc_seq') %}
    {% set known = cdc_merge.chunk_known_column_defaults(chunk_view, cfg, chunk_events, run_cache, chunk, target_relation, facts) %}
    {% if not known.events %}
        {{ return([]) }}
    {% endif %}
    {{ return(cdc_merge.apply_column_defaults(target_relation, known.events, column_types, kept_unless, known.chunk_seqs, known.since, values_seq)) }}
{% endmacro %}


{% macro column_default_events(relation, source_table, condition='true') %}
    {#-
        key = '[]' (a table's own event, python_jobs/formats/records.py TABLE_KEY) lets Iceberg skip, by its
        column bounds, every raw file holding only row events: a read of a few files, not of the table's whole log.
    -#}
    {% set found = run_query(adapter.dispatch('column_default_events_sql', 'cdc_merge')(relation, source_table, condition)) %}
    {{ return(found.rows | map('list') | list) }}
{% endmacro %}

{% macro spark__column_default_events_sql(relation, source_table, condition) %}
    select
        seq,
        raw_data
    from {{ relation }}
    where
        {{ condition }}
        and table_name = '{{ source_table }}'
        and key = '[]'
        and action = 'schema'
        and raw_data like '%"existing_rows":%'
{% endmacro %}

{% macro databend__column_default_events_sql(relation, source_table, condition) %}
    select
        seq,
        raw_data::string as raw_data
    from {{ relation }}
    where
        {{ condition }}
        and table_name = '{{ source_table }}'
        and key = '[]'
        and action = 'schema'
        and raw_data['existing_rows'] is not null
{% endmacro %}


{% macro apply_column_defaults(target_relation, events, column_types, kept_unless=none, chunk_seqs=none, since=none, values_seq='_cdc_seq') %}
    {#-
        events: [seq, raw_data] of schema events; column_types: {mirror column: type}. Each event's
        columns that the mirror has are set in its rows older than the event. Returns the columns set.
        kept_unless: a condition on a row (a history's is_current); a row older than the event that holds
        a value and does not meet it keeps that value (a version of a column dropped and added again).
        chunk_seqs, since: the chunk's events' seqs and its oldest event's; each column at its newest
        event, which sets, when the chunk does not hold it, only the rows from since on that differ.
        values_seq: a row's position (SQL), that of the event whose values it holds; a history's version
        that took later events in place (track_columns) holds its newest one's (_cdc_updated_seq).
    -#}
    {% set plan = adapter.cdc_column_defaults(events, column_types.keys() | list, model.unique_id, chunk_seqs) if events else [] %}
    {% set set_columns = [] %}
    {% for event in plan %}
        {% set late = since is not none and not event.get('in_chunk', true) %}
        {% set assignments = [] %}
        {% set changed = [] %}
        {% for column in event.columns %}
            {% set row = cdc_merge.json_literal(column.image) %}
            {% set value = cdc_merge.cdc_value(row, column.field, column_types[column.name]) %}
            {% if kept_unless is not none %}
                {% set value = 'case when ' ~ column.name ~ ' is null or ' ~ kept_unless ~ ' then ' ~ value ~ ' else ' ~ column.name ~ ' end' %}
            {% endif %}
            {% do assignments.append(column.name ~ ' = ' ~ value) %}
            {% do changed.append(cdc_merge.differs_sql(column.name, value)) %}
            {% do set_columns.append(column.name) %}
        {% endfor %}
        {#- A history's rows already holding the values are left alone: a replay of the event writes nothing. -#}
        {% set only_changed = (' and (' ~ changed | join(' or ') ~ ')') if (kept_unless is not none or late) else '' %}
        {% set written = (' and ' ~ values_seq ~ ' >= ' ~ cdc_merge.string_literal(since)) if late else '' %}
        {% do cdc_merge.update_rows_found(target_relation, assignments | join(', '), values_seq ~ " < '" ~ event.seq ~ "'" ~ written ~ only_changed,
            look_first=kept_unless is not none or late) %}
        {{ log("cdc_merge " ~ target_relation ~ ": " ~ event.columns | map(attribute='name') | join(', ')
            ~ " added to the source at " ~ event.seq ~ ": set in the rows older than that to the value the source gave them", info=True) }}
    {% endfor %}
    {#- A 32-bit float the source widened to a double: the older rows' values as the server widened them (column_defaults.py). -#}
    {% for event in (adapter.cdc_float_retypes(events, column_types) if events else []) %}
        {% set late = since is not none and event.seq not in chunk_seqs %}
        {% set written = (' and ' ~ values_seq ~ ' >= ' ~ cdc_merge.string_literal(since)) if late else '' %}
        {% for column in event.columns %}
            {% set exact = 'cast(cast(' ~ column ~ ' as float) as double)' %}
            {% do cdc_merge.update_rows_found(target_relation, column ~ ' = ' ~ exact,
                values_seq ~ ' < ' ~ cdc_merge.string_literal(event.seq) ~ written ~ ' and ' ~ column ~ ' <> ' ~ exact,
                look_first=kept_unless is not none or late) %}
        {% endfor %}
        {{ log("cdc_merge " ~ target_relation ~ ": " ~ event.columns | join(', ') ~ " widened from a 32-bit float by the source at "
            ~ event.seq ~ ": the rows older than that hold the float's exact value, as the source's do", info=True) }}
    {% endfor %}
    {{ return(set_columns) }}
{% endmacro %}


{% macro update_rows_found(relation, assignments, condition, look_first=false) %}
    {#- look_first: only when a row meets the condition (an Iceberg update that changes no row still commits a snapshot). -#}
    {% if look_first and not run_query('select 1 from ' ~ relation ~ ' where ' ~ condition ~ ' limit 1').rows %}
        {{ return(none) }}
    {% endif %}
    {% do run_query('update ' ~ relation ~ ' set ' ~ assignments ~ ' where ' ~ condition) %}
{% endmacro %}


{% macro json_literal(json_text) %}
    {#- A JSON text as a row image cdc_value() reads: a string literal on Spark, a VARIANT on Databend. -#}
    {{ return(adapter.dispatch('json_literal', 'cdc_merge')(json_text)) }}
{% endmacro %}

{% macro spark__json_literal(json_text) %}
    {{- return(cdc_merge.string_literal(json_text)) -}}
{% endmacro %}

{% macro databend__json_literal(json_text) %}
    {{- return("parse_json(" ~ cdc_merge.string_literal(json_text) ~ ")") -}}
{% endmacro %}
