{#
    maintain_mirror: every maintenance step for one mirror, its tombstones, its source table's
    part of the raw log, and the shared offsets, runs and raw tables. Each step is one commit
    of its own, and no step relies on an earlier one having run: a run that dies between two
    steps leaves every table as some earlier state that was already correct, and the next
    maintenance takes up from there. cdc_maintain runs it as a run-operation.

    A cdc_history is maintained by the same steps: its table as the mirror, its
    __cdc_history_deletes table in the tombstones' place (is_history). Its settings (mirror_config.py) have raw_retention_hours and
    tombstone_horizon_hours none: it removes no raw event and none of its deletes, which its
    chains are rebuilt from. Its offset is a row of cdc_merge_offsets, so raw expiry keeps what
    it has not applied (applied_offsets).
#}

{% macro maintain_mirror(target_relation, tombstones, offsets, raw_relation, source_table, settings, remove_orphans=true, is_history=false) %}
    {% set counts = {'files_added': 0, 'files_removed': 0, 'snapshots_expired': 0, 'orphan_files_removed': 0,
                     'raw_events_removed': 0, 'tombstones_removed': 0, 'offsets_removed': 0, 'unsent_entries_removed': 0} %}
    {#- A history made by an earlier version, maintained before its next run, may have no runs table yet. -#}
    {% set runs = cdc_merge.runs_relation(offsets) %}
    {% set runs = none if is_history and load_relation(runs) is none else runs %}
    {% set own_tables = [target_relation] + ([tombstones] if tombstones is not none else []) %}
    {#- Tables the mirrors share are maintained by the first mirror of an invocation that maintains. -#}
    {% set shared_tables = [] %}
    {% for relation in [offsets] + ([runs] if runs is not none else []) if cdc_merge.first_time_in_invocation('maintain ' ~ relation) %}
        {% do shared_tables.append(relation) %}
    {% endfor %}

    {#- A table made before its DDL bounded its metadata log gets the properties first, so this maintenance's commits delete old metadata files too. -#}
    {% for relation in own_tables + shared_tables %}
        {% do cdc_merge.bound_metadata_log(relation) %}
    {% endfor %}
    {#- So do a mirror's tables made before their DDL kept _cdc_seq's bounds whole, before compaction rewrites their files (a history reads no bound). -#}
    {% for relation in own_tables if not is_history %}
        {% do cdc_merge.keep_seq_bounds_whole(relation) %}
    {% endfor %}
    {% for relation in own_tables %}
        {% do cdc_merge.add_maintenance_counts(counts, cdc_merge.compact_table(relation)) %}
    {% endfor %}
    {% do counts.update({'tombstones_removed': cdc_merge.collect_tombstones(tombstones, settings)}) %}
    {#- A mirror's kept unsent TOAST columns of rows it no longer holds (unsent_columns.sql); a history keeps its own. -#}
    {% if not is_history %}
        {% do counts.update({'unsent_entries_removed': cdc_merge.remove_dead_unsent_entries(target_relation)}) %}
    {% endif %}
    {#- The raw table is maintained only while no landing of this machine writes it (run_guard.sql). -#}
    {% set raw_free = cdc_merge.try_lock_raw_table(raw_relation) %}
    {% if raw_free %}
        {% do counts.update({'raw_events_removed': cdc_merge.remove_superseded_raw_events(raw_relation, source_table, settings, [offsets])}) %}
    {% else %}
        {{ log("cdc_merge maintenance " ~ raw_relation ~ ": a landing is writing it; left for the next maintenance", info=True) }}
    {% endif %}
    {% do counts.update({'offsets_removed': cdc_merge.trim_offsets(offsets, target_relation, settings)}) %}
    {% if runs is not none %}
        {% do cdc_merge.trim_runs(runs, target_relation, settings) %}
    {% endif %}

    {#- A consistency group's latest cuts read the mirror at its snapshots then (consistency.sql). -#}
    {% set cut_snapshots = cdc_merge.snapshots_cuts_need(offsets, target_relation=target_relation) %}
    {% for relation in own_tables + shared_tables %}
        {% do cdc_merge.add_maintenance_counts(counts, cdc_merge.expire_snapshots(relation, cut_snapshots if relation == target_relation else [], settings)) %}
        {% if remove_orphans %}
            {% do counts.update({'orphan_files_removed': counts.orphan_files_removed + cdc_merge.remove_orphan_files(relation, settings)}) %}
        {% endif %}
    {% endfor %}

    {#- A crash point (run_guard.sql): the mirror maintained, the raw table not yet. -#}
    {% do cdc_merge.crash_point('maintenance') %}
    {#- The raw table: compacted, and expired only behind the oldest offset of any mirror reading it. -#}
    {% if raw_free and cdc_merge.first_time_in_invocation('maintain ' ~ raw_relation) %}
        {% do cdc_merge.bound_metadata_log(raw_relation) %}
        {% do cdc_merge.add_maintenance_counts(counts, cdc_merge.compact_table(raw_relation)) %}
        {% set raw_offsets = cdc_merge.applied_offsets(raw_relation, none, [offsets]) %}
        {% if 'stream' in raw_offsets | map(attribute='offset_snapshot') | list %}
            {{ log("cdc_merge maintenance " ~ raw_relation ~ ": a mirror reads it through a stream; no raw snapshot expired", info=True) }}
        {% else %}
            {% do cdc_merge.add_maintenance_counts(counts, cdc_merge.expire_snapshots(raw_relation, raw_offsets | map(attribute='offset_snapshot') | list, settings)) %}
        {% endif %}
        {% if remove_orphans %}
            {% do counts.update({'orphan_files_removed': counts.orphan_files_removed + cdc_merge.remove_orphan_files(raw_relation, settings)}) %}
        {% endif %}
    {% endif %}
    {% if raw_free %}
        {% do cdc_merge.unlock_raw_table(raw_relation) %}
    {% endif %}

    {% for relation in shared_tables %}
        {% do cdc_merge.add_maintenance_counts(counts, cdc_merge.compact_table(relation)) %}
    {% endfor %}
    {{ log("cdc_merge maintenance " ~ target_relation ~ ": " ~ cdc_merge.maintenance_summary(counts), info=True) }}
    {{ return(counts) }}
{% endmacro %}


{% macro first_time_in_invocation(key) %}
    {#- True for the first caller with this key in the dbt invocation (run_state.py); always on adapters without the plugin's state. -#}
    {{ return(adapter.cdc_first_time_in_invocation(invocation_id, key)) }}
{% endmacro %}


{% macro add_maintenance_counts(counts, step) %}
    {% for name, value in step.items() %}
        {% do counts.update({name: counts.get(name, 0) + value}) %}
    {% endfor %}
{% endmacro %}


{% macro maintenance_summary(counts) %}
    {{ return(counts.files_added ~ " files added, " ~ counts.files_removed ~ " removed by compaction and expiry, "
        ~ counts.snapshots_expired ~ " snapshots expired, " ~ counts.orphan_files_removed ~ " orphan files removed, "
        ~ counts.raw_events_removed ~ " superseded raw events removed, " ~ counts.tombstones_removed ~ " tombstones collected, "
        ~ counts.offsets_removed ~ " offset rows trimmed, " ~ counts.unsent_entries_removed ~ " unsent-column entries of replaced rows removed") }}
{% endmacro %}


{% macro cdc_maintain(models=none, force=true, settings={}) %}
    {#-
        dbt run-operation cdc_maintain --args '{models: [shop_orders], settings: {raw_retention_hours: 168}}'
        Maintains each cdc_merge and cdc_history model named in models (all of them by default):
        every step when force (the default), or only those whose table crossed a threshold when
        force is false. settings override the model's maintenance configs for this call (a
        history ignores raw_retention_hours and tombstone_horizon_hours). A model whose table
        does not exist yet is skipped.
    -#}
    {% set selected = [models] if models is string else models %}
    {% set maintained = namespace(count=0) %}
    {% for node in graph.nodes.values() if node.resource_type == 'model' and node.config.materialized in ['cdc_merge', 'cdc_history']
        and (selected is none or node.name in selected) %}
        {% set fail_prefix = "cdc_maintain, model '" ~ node.name ~ "': " %}
        {% set is_history = node.config.materialized == 'cdc_history' %}
        {% set merged = {} %}
        {% do merged.update(node.config) %}
        {% do merged.update(settings) %}
        {% set node_settings = cdc_merge.maintenance_validated_config(merged, fail_prefix, node.config.materialized) %}
        {% set target_relation = adapter.get_relation(database=none, schema=node.schema, identifier=node.alias) %}
        {% set offsets = api.Relation.create(schema=node.config.get('offsets_schema') or node.schema, identifier='cdc_merge_offsets', type='table') %}
        {% if target_relation is none %}
            {{ log("cdc_maintain " ~ node.name ~ ": no " ~ ('history' if is_history else 'mirror') ~ " yet, skipped", info=True) }}
        {% else %}
            {% set raw = namespace(relation=none) %}
            {% for upstream in node.depends_on.nodes %}
                {% if upstream in graph.nodes %}
                    {% set raw.relation = api.Relation.create(schema=graph.nodes[upstream].schema, identifier=graph.nodes[upstream].alias, type='table') %}
                {% elif upstream in graph.sources %}
                    {% set raw.relation = api.Relation.create(schema=graph.sources[upstream].schema, identifier=graph.sources[upstream].identifier, type='table') %}
                {% endif %}
            {% endfor %}
            {% set raw_relation = raw.relation %}
            {% set tombstones = cdc_merge.model_deletes_relation(target_relation, is_history) if node.config.get('deletes', 'hard') == 'hard' else none %}
            {% set due = ['forced'] if force else cdc_merge.maintenance_due(target_relation, node_settings) %}
            {% if due %}
                {{ log("cdc_maintain " ~ target_relation ~ ": maintaining (" ~ due | join('; ') ~ ")", info=True) }}
                {#- As a run of it does (run_guard.sql): a run applying it meanwhile waits, and this waits for one. Their
                    commits would otherwise race, and one of them fail (Iceberg: "found new position delete ..."). -#}
                {% do cdc_merge.lock_mirror(target_relation, node.config.get('consistency_group')) %}
                {% do cdc_merge.maintain_mirror(target_relation, tombstones, offsets, raw_relation, node.config.source_table, node_settings,
                    is_history=is_history) %}
                {% do cdc_merge.unlock_mirror(target_relation) %}
                {% do cdc_merge.unlock_group(node.config.get('consistency_group')) %}
                {% set maintained.count = maintained.count + 1 %}
            {% else %}
                {{ log("cdc_maintain " ~ target_relation ~ ": no threshold crossed, nothing to do", info=True) }}
            {% endif %}
        {% endif %}
    {% endfor %}
    {{ log("cdc_maintain: " ~ maintained.count ~ " mirror(s) and history(ies) maintained", info=True) }}
{% endmacro %}


{% macro model_deletes_relation(target_relation, is_history) %}
    {#- A mirror's tombstones; a history's deletes table, when it has one (hard deletes, created by its runs). -#}
    {% if not is_history %}
        {{ return(cdc_merge.tombstones_relation(target_relation)) }}
    {% endif %}
    {% set deletes = cdc_merge.history_deletes_relation(target_relation) %}
    {{ return(adapter.get_relation(database=deletes.database, schema=deletes.schema, identifier=deletes.identifier)) }}
{% endmacro %}
