{#
    What maintenance removes from the log and the bookkeeping, and what it must keep:
      applied_offsets        where every mirror of a raw table stands, from every offsets table of the project
      histories_yet_to_run   the histories of a source table with no offset yet: their first run reads every version
      remove_superseded_raw_events   raw events every mirror applied, older than raw_retention_hours,
                             that a newer event of the same key supersedes (the newest stays)
      collect_tombstones     tombstones older than tombstone_horizon_hours
      trim_offsets           offset rows beyond the current one and offsets_history more
#}

{% macro offsets_relations_in_project() %}
    {#- The offsets table of every cdc_merge and cdc_history model of the project (offsets_schema, or the model's schema):
        a history's offset keeps the raw events and snapshots it has not applied as a mirror's does. -#}
    {% set schemas = [] %}
    {% for node in graph.nodes.values() if node.resource_type == 'model' and node.config.materialized in ['cdc_merge', 'cdc_history'] %}
        {% set schema = node.config.get('offsets_schema') or node.schema %}
        {% if schema not in schemas %}
            {% do schemas.append(schema) %}
        {% endif %}
    {% endfor %}
    {% set relations = [] %}
    {% for schema in schemas %}
        {% set relation = adapter.get_relation(database=none, schema=schema, identifier='cdc_merge_offsets') %}
        {% if relation is not none %}
            {% do relations.append(relation) %}
        {% endif %}
    {% endfor %}
    {{ return(relations) }}
{% endmacro %}


{% macro applied_offsets(raw_relation, source_table=none, extra_offsets=[]) %}
    {#- The current offset_snapshot of every mirror that reads raw_relation (and source_table), from every offsets table. -#}
    {% set relations = cdc_merge.offsets_relations_in_project() %}
    {% for relation in extra_offsets if relation | string not in relations | map('string') | list %}
        {% do relations.append(relation) %}
    {% endfor %}
    {% set offsets = [] %}
    {% for relation in relations %}
        {% set rows = run_query(cdc_merge.current_offsets_sql(relation, raw_relation, source_table)).rows %}
        {% for row in rows %}
            {% do offsets.append({'target_table': row['target_table'], 'offset_snapshot': row['offset_snapshot'] | string}) %}
        {% endfor %}
        {#- A consistency group's next scan starts at its latest cut's tail start (consistency.sql). -#}
        {% for snapshot_id in cdc_merge.snapshots_cuts_need(relation, raw_relation=raw_relation) %}
            {% do offsets.append({'target_table': 'cut tail start', 'offset_snapshot': snapshot_id}) %}
        {% endfor %}
    {% endfor %}
    {{ return(offsets) }}
{% endmacro %}

{% macro current_offsets_sql(offsets, raw_relation, source_table) %}
    select
        target_table,
        offset_snapshot
    from (
        select
            target_table,
            cast(offset_snapshot as string) as offset_snapshot,
            row_number() over (partition by target_table order by offset_ordinal desc) as newest_first
        from {{ offsets }}
        where raw_table = '{{ raw_relation }}'
        {%- if source_table is not none %}
            and source_table = '{{ source_table }}'
        {%- endif %}
    ) as offsets
    where newest_first = 1
{% endmacro %}


{% macro histories_yet_to_run(source_table, offsets) %}
    {#- The cdc_history models of source_table that no offsets table knows: a mirror rebuilds from the newest
        events alone, but a history's first run takes every version from the log, the superseded ones too. -#}
    {% set known = offsets | map(attribute='target_table') | list %}
    {% set waiting = [] %}
    {% for node in graph.nodes.values() if node.resource_type == 'model' and node.config.materialized == 'cdc_history'
            and node.config.get('source_table') == source_table %}
        {% set name = node.schema ~ '.' ~ (node.alias or node.name) %}
        {% if name not in known %}
            {% do waiting.append(name) %}
        {% endif %}
    {% endfor %}
    {{ return(waiting) }}
{% endmacro %}


{% macro oldest_applied_snapshot(raw_relation, offsets) %}
    {#-
        The raw snapshot every mirror in offsets has applied: the one farthest behind the raw table's
        current snapshot. none when there is no offset, when a mirror reads a stream, or when an
        offset is not behind the current snapshot (then nobody knows what it has applied).
    -#}
    {% set needed = offsets | map(attribute='offset_snapshot') | list %}
    {% if needed | length == 0 or 'stream' in needed %}
        {{ return(none) }}
    {% endif %}
    {% set plan = cdc_merge.kept_snapshots(raw_relation, needed, 0) %}
    {% for snapshot_id in needed if snapshot_id not in plan.kept %}
        {{ return(none) }}
    {% endfor %}
    {{ return(plan.kept[-1]) }}
{% endmacro %}


{% macro relation_at_snapshot_sql(relation, snapshot_id) %}
    {{ return(adapter.dispatch('relation_at_snapshot_sql', 'cdc_merge')(relation, snapshot_id)) }}
{% endmacro %}

{% macro spark__relation_at_snapshot_sql(relation, snapshot_id) -%}
    {#- A number: a quoted version is read as a branch or tag name. -#}
    {{ relation }} version as of {{ snapshot_id }}
{%- endmacro %}

{% macro databend__relation_at_snapshot_sql(relation, snapshot_id) -%}
    {{ relation }} at (snapshot => '{{ snapshot_id }}')
{%- endmacro %}


{% macro remove_superseded_raw_events(raw_relation, source_table, settings, extra_offsets=[]) %}
    {#-
        One MERGE, so all or nothing. An event goes only if (1) it is in the raw snapshot every
        mirror of source_table has applied, (2) it landed more than raw_retention_hours ago, and
        (3) an event of the same key with a greater seq that sent every value is in the log: the
        newest event of every key stays, and so do the events a Postgres update that left a TOAST
        value unchanged takes it from (those since the key's newest whole event), so a new mirror
        or a full refresh still rebuilds every row (the table's own events, truncates and schema
        changes, all stay), and cdc_mirror_matches_log compares the same newest events as before.
    -#}
    {% if settings.raw_retention_hours is none %}
        {{ return(0) }}
    {% endif %}
    {% set offsets = cdc_merge.applied_offsets(raw_relation, source_table, extra_offsets) %}
    {% set waiting = cdc_merge.histories_yet_to_run(source_table, offsets) %}
    {% if waiting | length > 0 %}
        {{ log("cdc_merge maintenance " ~ raw_relation ~ ": no raw event of " ~ source_table ~ " removed: "
            ~ waiting | join(', ') ~ " has not run yet and reads every version from the log", info=True) }}
        {{ return(0) }}
    {% endif %}
    {% set oldest = cdc_merge.oldest_applied_snapshot(raw_relation, offsets) %}
    {% if oldest is none %}
        {{ log("cdc_merge maintenance " ~ raw_relation ~ ": no raw event of " ~ source_table ~ " removed: not every mirror's offset is known", info=True) }}
        {{ return(0) }}
    {% endif %}
    {% set count_sql = "select count(*) as events from " ~ raw_relation ~ " where table_name = '" ~ source_table ~ "'" %}
    {% set before = run_query(count_sql).rows[0]['events'] | int %}
    {% do run_query(cdc_merge.remove_superseded_raw_events_sql(raw_relation, source_table, oldest, settings.raw_retention_hours * 3600)) %}
    {{ return(before - (run_query(count_sql).rows[0]['events'] | int)) }}
{% endmacro %}

{% macro remove_superseded_raw_events_sql(raw_relation, source_table, applied_snapshot, retention_seconds) %}
    merge into {{ raw_relation }} as event
    using (
        select distinct
            applied.key,
            applied.seq,
            applied.landed_file,
            applied.landed_line
        from {{ cdc_merge.relation_at_snapshot_sql(raw_relation, applied_snapshot) }} as applied
        inner join (
            select
                key,
                max(case when not {{ cdc_merge.has_unavailable_sql('raw_data') }} then seq end) as newest_whole_seq
            from {{ raw_relation }}
            where table_name = '{{ source_table }}'
            group by key
        ) as newest
            on applied.key = newest.key and applied.seq < newest.newest_whole_seq
        where applied.table_name = '{{ source_table }}'
            {#- A table's own events (truncates, schema changes with older rows' values) are few and every rebuild needs them. #}
            and applied.key != '[]'
            and applied.landed_at < {{ cdc_merge.timestamp_literal(cdc_merge.seconds_ago_sql(retention_seconds)) }}
    ) as removable
        on event.table_name = '{{ source_table }}'
        and event.key = removable.key
        and event.seq = removable.seq
        and event.landed_file = removable.landed_file
        and event.landed_line = removable.landed_line
    when matched then delete
{% endmacro %}


{% macro collect_tombstones(tombstones, settings) %}
    {#- Tombstones of deletes committed in the source more than tombstone_horizon_hours ago (docs/maintenance.md: the trade-off). -#}
    {% if tombstones is none or settings.tombstone_horizon_hours is none %}
        {{ return(0) }}
    {% endif %}
    {% set count_sql = "select count(*) as tombstones from " ~ tombstones %}
    {% set before = run_query(count_sql).rows[0]['tombstones'] | int %}
    {#- A literal: Databend deletes only with a deterministic predicate, not now(). -#}
    {% do run_query("delete from " ~ tombstones ~ " where _cdc_source_ts < "
        ~ cdc_merge.timestamp_literal(cdc_merge.seconds_ago_sql(settings.tombstone_horizon_hours * 3600))) %}
    {{ return(before - (run_query(count_sql).rows[0]['tombstones'] | int)) }}
{% endmacro %}


{% macro trim_offsets(offsets, target_relation, settings) %}
    {#- The current offset row of the mirror and offsets_history rows before it stay (newest_offset: known in the adapter where it can be). -#}
    {% set keep_after = (cdc_merge.newest_offset(offsets, target_relation).offset_ordinal | int) - settings.offsets_history - 1 %}
    {% if keep_after < 1 %}
        {{ return(0) }}
    {% endif %}
    {% set count_sql = "select count(*) as offsets from " ~ offsets ~ " where target_table = '" ~ target_relation ~ "' and offset_ordinal <= " ~ keep_after %}
    {% set removed = run_query(count_sql).rows[0]['offsets'] | int %}
    {% if removed > 0 %}
        {% do cdc_merge.delete_from_shared_table(offsets, "delete from " ~ offsets ~ " where target_table = '" ~ target_relation
            ~ "' and offset_ordinal <= " ~ keep_after) %}
    {% endif %}
    {{ return(removed) }}
{% endmacro %}
