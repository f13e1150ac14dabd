{#
    Maintenance of a mirror from its own run: the maintenance configs (checked with the others,
    before any SQL), the thresholds that make a run maintain, and the call into
    macros/maintenance/ (maintain_mirror), after the run's last offset is recorded, so that a
    run that dies while it maintains has already kept everything it applied. docs/maintenance.md.
#}

{% macro maintenance_defaults() %}
    {{ return({
        'maintenance': 'auto',
        'maintenance_max_files': 100,
        'maintenance_max_delete_files_per_data_file': 4,
        'maintenance_max_snapshots': 100,
        'maintenance_max_age_hours': 24,
        'snapshot_retention_hours': 1,
        'orphan_file_min_age_hours': 72,
        'raw_retention_hours': none,
        'tombstone_horizon_hours': none,
        'offsets_history': 100,
        'runs_history_days': 30,
    }) }}
{% endmacro %}


{% macro maintenance_validated_config(settings, fail_prefix) %}
    {#-
        settings: anything with .get(name, default) (the model's config, a node's config, or
        the arguments of cdc_maintain). Numbers set with Jinja in dbt_project.yml arrive as strings.
    -#}
    {% set defaults = cdc_merge.maintenance_defaults() %}
    {% set validated = {} %}
    {% set mode = settings.get('maintenance', defaults.maintenance) %}
    {% if mode not in ['auto', 'off'] %}
        {% do exceptions.raise_compiler_error(fail_prefix ~ "maintenance must be 'auto' (maintain the mirror when a maintenance_max_* threshold is crossed) or 'off' (only dbt run-operation cdc_maintain maintains it), got " ~ mode ~ ".") %}
    {% endif %}
    {% do validated.update({'maintenance': mode}) %}
    {% set whole = ['maintenance_max_files', 'maintenance_max_snapshots', 'offsets_history'] %}
    {% set optional = ['raw_retention_hours', 'tombstone_horizon_hours'] %}
    {% set hints = {
        'maintenance_max_files': "a whole number of small data files and delete files above which the run maintains the mirror, e.g. 100",
        'maintenance_max_delete_files_per_data_file': "delete files per data file above which the run maintains the mirror, e.g. 4",
        'maintenance_max_snapshots': "a whole number of snapshots older than snapshot_retention_hours above which the run maintains the mirror, e.g. 100",
        'maintenance_max_age_hours': "hours: the run maintains the mirror when a snapshot it could expire is older, e.g. 24",
        'snapshot_retention_hours': "hours of snapshots that expiry always keeps, for readers and running batches, e.g. 1",
        'orphan_file_min_age_hours': "hours: at least 24 (Iceberg refuses less: a younger unreferenced file may be a running write's), e.g. 72",
        'raw_retention_hours': "hours after which an applied raw event that a newer event of its key supersedes is removed, or none to keep the raw log whole",
        'tombstone_horizon_hours': "hours after which a delete's tombstone is removed (an older event landing later could then bring the row back), or none to keep tombstones",
        'offsets_history': "a whole number of offset rows kept per mirror besides its current one, e.g. 100",
        'runs_history_days': "days of rows kept in cdc_merge_runs, e.g. 30",
    } %}
    {% for name in hints %}
        {% set value = settings.get(name, defaults[name]) %}
        {% if value is string and (value | trim | lower) in ['', 'none', 'null'] and name in optional %}
            {% set value = none %}
        {% elif value is string and modules.re.match('^[0-9]+([.][0-9]+)?$', value) %}
            {% set value = value | float if '.' in value else value | int %}
        {% endif %}
        {% if value is none and name in optional %}
            {% do validated.update({name: none}) %}
        {% elif value is not number or value is string or value is boolean or value < 0 or (name in whole and value != value | int) or (name == 'maintenance_max_files' and value < 1) or (name == 'orphan_file_min_age_hours' and value < 24) %}
            {% do exceptions.raise_compiler_error(fail_prefix ~ name ~ " must be " ~ hints[name] ~ "; got " ~ value ~ ".") %}
        {% else %}
            {% do validated.update({name: value}) %}
        {% endif %}
    {% endfor %}
    {{ return(validated) }}
{% endmacro %}


{% macro maintenance_due(target_relation, settings, state=none) %}
    {#-
        Why the mirror needs maintaining now (an empty list when it does not): its small data files and
        delete files, its delete files per data file, its expirable snapshots (older than
        snapshot_retention_hours, not the current one) or the oldest of those crossing a
        threshold. One query on the mirror's metadata (table_maintenance_state), unless state
        holds the numbers already: the idle check reads them from Iceberg's metadata (idle.sql).
    -#}
    {% set keep_seconds = settings.snapshot_retention_hours * 3600 %}
    {% if state is none %}
        {% set state = cdc_merge.table_maintenance_state(target_relation, keep_seconds) %}
    {% else %}
        {% set ages = state.older_snapshot_ages_seconds | select('>', keep_seconds) | list %}
        {% set state = {
            'small_data_files': state.small_data_files,
            'data_files': state.data_files,
            'delete_files': state.delete_files,
            'expirable_snapshots': ages | length,
            'oldest_expirable_age_seconds': (ages | max) if ages else 0,
        } %}
    {% endif %}
    {% set files = state.small_data_files + state.delete_files %}
    {% set reasons = [] %}
    {% if files > settings.maintenance_max_files %}
        {% do reasons.append(files ~ " small data and delete files > maintenance_max_files " ~ settings.maintenance_max_files) %}
    {% endif %}
    {% if state.delete_files > settings.maintenance_max_delete_files_per_data_file * [state.data_files, 1] | max %}
        {% do reasons.append(state.delete_files ~ " delete files for " ~ state.data_files ~ " data files > maintenance_max_delete_files_per_data_file " ~ settings.maintenance_max_delete_files_per_data_file) %}
    {% endif %}
    {% if state.expirable_snapshots > settings.maintenance_max_snapshots %}
        {% do reasons.append(state.expirable_snapshots ~ " snapshots older than snapshot_retention_hours > maintenance_max_snapshots " ~ settings.maintenance_max_snapshots) %}
    {% endif %}
    {% if state.oldest_expirable_age_seconds > settings.maintenance_max_age_hours * 3600 %}
        {% do reasons.append("a snapshot " ~ (state.oldest_expirable_age_seconds / 3600) | round(1) ~ " h old > maintenance_max_age_hours " ~ settings.maintenance_max_age_hours) %}
    {% endif %}
    {{ return(reasons) }}
{% endmacro %}


{% macro maintain_after_run(target_relation, tombstones, offsets, cfg) %}
    {#- The run's maintenance, if its mirror crossed a threshold: the counts of maintain_mirror, or none. -#}
    {% if cfg.maintenance.maintenance == 'off' %}
        {{ return(none) }}
    {% endif %}
    {#- On cdc_spark the mirror's files and snapshots come from Iceberg's metadata in the JVM, not a query. -#}
    {% set state = adapter.cdc_table_metadata(target_relation | string) if adapter.type() == 'cdc_spark' else none %}
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
    {{ return(cdc_merge.maintain_mirror(target_relation, tombstones, offsets, cfg.raw_relation, cfg.source_table, cfg.maintenance, orphans.due)) }}
{% endmacro %}
