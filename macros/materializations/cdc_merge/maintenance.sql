{#
    Maintenance of a mirror from its own run: the maintenance configs (checked with the others,
    before any SQL, in python_jobs/apply/mirror_config.py), the thresholds that make a run maintain, and the call into
    macros/maintenance/ (maintain_mirror), after the run's last offset is recorded, so that a
    run that dies while it maintains has already kept everything it applied. docs/maintenance.md.
#}

{% macro maintenance_validated_config(settings, fail_prefix, materialization='cdc_merge') %}
    {#- settings: a node's config or cdc_maintain's arguments; checked in python_jobs/apply/mirror_config.py. -#}
    {% set checked = adapter.cdc_maintenance_config(fail_prefix, settings, materialization) %}
    {% if checked.error %}
        {% do exceptions.raise_compiler_error(checked.error) %}
    {% endif %}
    {{ return(checked.config) }}
{% endmacro %}


{% macro maintenance_due(target_relation, settings, state=none) %}
    {#-
        Why the mirror needs maintaining now, an empty list when it does not (decided in
        python_jobs/apply/maintenance_due.py). One query on the mirror's metadata
        (table_maintenance_state), unless state holds the numbers already: the idle check reads them
        from Iceberg's metadata (idle.sql).
    -#}
    {% if state is none %}
        {% set state = cdc_merge.table_maintenance_state(target_relation, settings.snapshot_retention_hours * 3600) %}
    {% endif %}
    {{ return(adapter.cdc_maintenance_due(state, settings)) }}
{% endmacro %}


{% macro maintain_after_run(target_relation, tombstones, offsets, cfg, is_history=false) %}
    {#- The run's maintenance, if its mirror (or history) crossed a threshold: the counts of maintain_mirror, or none. -#}
    {% if cfg.maintenance.maintenance == 'off' %}
        {{ return(none) }}
    {% endif %}
    {#- On cdc_spark the mirror's files and snapshots come from Iceberg's metadata in the JVM, not a query. -#}
    {% set state = adapter.cdc_table_metadata(target_relation | string) if cdc_merge.capabilities().iceberg_helpers else none %}
    {% set due = cdc_merge.maintenance_due(target_relation, cfg.maintenance, state) %}
    {% if not due %}
        {{ return(none) }}
    {% endif %}
    {{ log("cdc_merge " ~ target_relation ~ ": maintaining (" ~ due | join('; ') ~ ")", info=True) }}
    {#-
        Listing every file under the tables for orphans is the slowest step, and orphans only come
        from writes that died: a run looks for them when its mirror crossed maintenance_max_age_hours.
    -#}
    {% set orphans = namespace(due=false) %}
    {% for reason in due if 'maintenance_max_age_hours' in reason %}
        {% set orphans.due = true %}
    {% endfor %}
    {{ return(cdc_merge.maintain_mirror(target_relation, tombstones, offsets, cfg.raw_relation, cfg.source_table, cfg.maintenance, orphans.due,
        is_history)) }}
{% endmacro %}
