{#
    Snapshot expiry and orphan-file removal. Expiry keeps, of the chain of snapshots behind the
    table's current one, every snapshot from the oldest one still needed (a mirror's offset in
    the raw table) to the current one, every snapshot younger than snapshot_retention_hours (a
    batch that started within that time reads one of them), and the current one; it expires
    only snapshots older than all of those. Iceberg keeps the head of every branch, so the
    snapshot a batch writes on the mirror's cdc_merge_batch branch is never expired.
#}

{% macro kept_snapshots(relation, needed, keep_seconds) %}
    {#-
        {'kept': snapshot ids to keep, newest first, 'total': snapshots the table has,
         'safe': false when a needed snapshot exists but is not behind the current one, so the
         history is not a chain this macro understands and nothing may be expired}.
    -#}
    {% set history = cdc_merge.snapshot_history(relation, keep_seconds) %}
    {% set rows = history.snapshots %}
    {% set current = history.current %}
    {% set by_id = {} %}
    {% for row in rows %}
        {% do by_id.update({row['snapshot_id'] | string: row}) %}
    {% endfor %}
    {% set chain = [] %}
    {% set walk = namespace(cursor=(current | string) if current is not none else none) %}
    {% for _ in range(rows | length) %}
        {% if walk.cursor is not none and walk.cursor in by_id %}
            {% do chain.append(walk.cursor) %}
            {% set parent = by_id[walk.cursor]['parent_id'] %}
            {% set walk.cursor = (parent | string) if parent not in [none, '', 'NULL'] else none %}
        {% endif %}
    {% endfor %}
    {% set keep = namespace(count=[chain | length, 1] | min, safe=true) %}
    {% for snapshot_id in chain %}
        {% if by_id[snapshot_id]['recent'] | int == 1 or snapshot_id in needed %}
            {% set keep.count = [keep.count, loop.index] | max %}
        {% endif %}
    {% endfor %}
    {% for snapshot_id in needed %}
        {% if snapshot_id in by_id and snapshot_id not in chain %}
            {% set keep.safe = false %}
        {% endif %}
    {% endfor %}
    {{ return({'kept': chain[:keep.count], 'total': rows | length, 'safe': keep.safe}) }}
{% endmacro %}


{% macro snapshot_history(relation, keep_seconds) %}
    {#-
        {'current': the current snapshot id or none, 'snapshots': rows of snapshot_id, parent_id and
        recent}: from Iceberg's metadata in the JVM where the adapter reads it (two statements a table
        otherwise, 0.05-0.3 s each), else queried.
    -#}
    {% set known = adapter.cdc_snapshot_history(relation.schema ~ '.' ~ relation.identifier, keep_seconds) if cdc_merge.capabilities().iceberg_helpers else none %}
    {% if known is not none %}
        {{ return(known) }}
    {% endif %}
    {% set current = run_query(cdc_merge.current_raw_snapshot_sql(relation)).rows %}
    {{ return({'current': (current[0]['snapshot_id'] | string) if current | length else none,
               'snapshots': run_query(cdc_merge.snapshot_history_sql(relation, keep_seconds)).rows}) }}
{% endmacro %}


{% macro expire_snapshots(relation, needed, settings) %}
    {#- Expires what kept_snapshots does not keep; the number of snapshots expired and of files deleted with them. -#}
    {% set plan = cdc_merge.kept_snapshots(relation, needed, settings.snapshot_retention_hours * 3600) %}
    {% if not plan.safe %}
        {{ log("cdc_merge maintenance " ~ relation ~ ": a needed snapshot is not behind the current one; no snapshot expired", info=True) }}
        {{ return({'snapshots_expired': 0, 'files_removed': 0}) }}
    {% endif %}
    {% if plan.kept | length == 0 or plan.kept | length >= plan.total %}
        {{ return({'snapshots_expired': 0, 'files_removed': 0}) }}
    {% endif %}
    {% set removed = adapter.dispatch('expire_snapshots_before', 'cdc_merge')(relation, plan.kept) %}
    {% set left = cdc_merge.snapshot_history(relation, 0).snapshots | length %}
    {{ return({'snapshots_expired': plan.total - left, 'files_removed': removed}) }}
{% endmacro %}

{% macro spark__expire_snapshots_before(relation, kept) %}
    {#- A small table in the driver (driver_maintenance.py), where Spark's procedure took 1-2 s with its jobs. -#}
    {% set in_driver = adapter.cdc_expire_in_driver(relation.schema ~ '.' ~ relation.identifier, kept) if cdc_merge.capabilities().iceberg_helpers else none %}
    {% if in_driver is not none %}
        {{ return(in_driver.files_removed) }}
    {% endif %}
    {#- older_than: the oldest kept snapshot's own commit time, which expiry keeps (it removes older ones only). -#}
    {% set oldest = cdc_merge.timestamp_literal(
        "(select min(committed_at) from " ~ relation ~ ".snapshots where cast(snapshot_id as string) in ('" ~ kept | join("', '") ~ "'))") %}
    {% set result = run_query(
        "call system.expire_snapshots(table => '" ~ relation.schema ~ "." ~ relation.identifier ~ "', older_than => "
        ~ oldest ~ ", retain_last => " ~ kept | length ~ ")").rows[0] %}
    {{ return((result['deleted_data_files_count'] | int) + (result['deleted_position_delete_files_count'] | int)
        + (result['deleted_equality_delete_files_count'] | int)) }}
{% endmacro %}

{% macro databend__expire_snapshots_before(relation, kept) %}
    {#- PURGE BEFORE a snapshot keeps that snapshot and the newer ones; the session's retention would keep a day more. -#}
    {% do run_query('set data_retention_time_in_days = 0') %}
    {% do run_query("optimize table " ~ relation ~ " purge before (snapshot => '" ~ kept[-1] ~ "')") %}
    {% do run_query('unset data_retention_time_in_days') %}
    {{ return(0) }}
{% endmacro %}


{% macro remove_orphan_files(relation, settings) %}
    {#- Files under the table that no snapshot references and older than orphan_file_min_age_hours (so never a running batch's). -#}
    {{ return(adapter.dispatch('remove_orphan_files', 'cdc_merge')(relation, settings)) }}
{% endmacro %}

{% macro spark__remove_orphan_files(relation, settings) %}
    {% set older_than = cdc_merge.timestamp_literal(cdc_merge.seconds_ago_sql(settings.orphan_file_min_age_hours * 3600)) %}
    {% set removed = run_query("call system.remove_orphan_files(table => '" ~ relation.schema ~ "." ~ relation.identifier
        ~ "', older_than => " ~ older_than ~ ")") %}
    {{ return(removed.rows | length) }}
{% endmacro %}

{% macro databend__remove_orphan_files(relation, settings) %}
    {#- Open-source Databend has no VACUUM (Enterprise); PURGE removes what expired snapshots referenced. -#}
    {{ return(0) }}
{% endmacro %}
