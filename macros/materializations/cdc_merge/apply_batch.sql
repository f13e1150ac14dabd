{#
    One batch of a chunk applied to the mirror (apply_chunk.sql runs it for each bucket and round).
#}

{% macro apply_batch(target_relation, tombstones, changes, model_sql, batch_keys_sql, key_range, columns, cfg, by_position, one_commit=false) %}
    {#-
        Classify the batch against the mirror (classify.sql), plan its writes in Python
        (python_jobs/apply/write_plan.py), then write tombstones, then the mirror (write.sql),
        publishing the mirror's writes in one commit (publish.sql).
        by_position (deletes_by_position): the classification reads the branch the batch then writes
        to, with the positions of the stored rows, and the replaced rows are deleted at those positions.
        one_commit (with by_position): the classification reads main at its current snapshot, and the
        deletes and new rows are committed to main together (write.sql write_one_commit), no branch.
    -#}
    {#- A mirror with no snapshot yet has nothing to classify against at one: the branch path. -#}
    {% set classified_at = adapter.cdc_current_snapshot(target_relation) if one_commit else none %}
    {% set one_commit = one_commit and classified_at is not none %}
    {% if one_commit %}
        {% set classified = cdc_merge.relation_at_snapshot(target_relation, classified_at) %}
    {% else %}
        {% set classified = cdc_merge.begin_mirror_writes(target_relation) if by_position else target_relation %}
    {% endif %}
    {#- With one commit, the tombstones too are classified at their current snapshot and written by position. -#}
    {% set tombstones_at = adapter.cdc_current_snapshot(tombstones) if (one_commit and tombstones is not none) else none %}
    {% set classified_tombstones = cdc_merge.relation_at_snapshot(tombstones, tombstones_at) if tombstones_at is not none else tombstones %}
    {#- A small batch held in the driver lists its keys' hashes, and where the tables are small reads their stored rows there (classify.sql). -#}
    {% set key_hashes = adapter.cdc_batch_key_hashes(batch_keys_sql) if one_commit else none %}
    {% set stored_rows = adapter.cdc_stored_rows_in_driver(batch_keys_sql, target_relation, classified_at, by_position, tombstones, tombstones_at) if key_hashes is not none else none %}
    {#- A larger one-commit batch reads its stored rows from the key indexes a long-lived process keeps (stored_keys.py), where it keeps them. -#}
    {% set stored_views = adapter.cdc_indexed_stored_rows_views(batch_keys_sql, model.name, target_relation, classified_at, tombstones, tombstones_at)
        if (one_commit and stored_rows is none) else none %}
    {% set classified_sql = cdc_merge.classified_batch_sql(model_sql, batch_keys_sql, key_range, classified, classified_tombstones, by_position,
        tombstones_at is not none, key_hashes, stored_rows, one_commit, stored_views) %}
    {% set created = cdc_merge.create_changes(changes, classified_sql, by_position, one_commit) %}
    {% for view in (stored_views or {}).values() if view is not none %}
        {% do adapter.cdc_drop_temporary_view(view) %}
    {% endfor %}
    {% set batch_changes = created.changes %}
    {% set row = created.counts if created.counts is not none else run_query(cdc_merge.change_counts_sql(batch_changes)).rows[0] %}
    {% set counts = {} %}
    {% for name in ['events_read', 'inserted', 'updated', 'partial_updates', 'deleted', 'tombstoned', 'skipped', 'revived', 'stored_tombstones',
                    'tombstones_replaced', 'tombstones_added'] %}
        {% do counts.update({name: row[name] | int}) %}
    {% endfor %}
    {% do counts.update({'max_source_ts': row['max_source_ts']}) %}
    {#- The batch's writes, decided in python_jobs/apply/write_plan.py; each step rendered by write.sql, publish.sql. -#}
    {% set plan = adapter.cdc_write_plan(counts, cfg.deletes, tombstones is not none, tombstones_at is not none, by_position, one_commit) %}
    {% if plan.tombstones == 'one_commit' %}
        {% do cdc_merge.write_tombstones_one_commit(tombstones, tombstones_at, batch_changes, counts) %}
    {% elif plan.tombstones == 'statement' %}
        {% do run_query(cdc_merge.write_tombstones_sql(tombstones, batch_changes, counts.stored_tombstones)) %}
    {% endif %}
    {% if plan.one_commit %}
        {% do cdc_merge.write_one_commit(target_relation, classified_at, batch_changes, columns, cfg, counts, key_range) %}
    {% else %}
        {% if plan.branch_from_classified %}
            {% set classified = cdc_merge.begin_mirror_writes(target_relation, classified_at) %}
        {% endif %}
        {% if plan.changes_as_table %}
            {#- The MERGE must know how small the changes are, to broadcast them: Spark knows it of a table, not of a checkpoint. -#}
            {% set batch_changes = cdc_merge.changes_as_table(batch_changes, changes) %}
        {% endif %}
        {% set mirror = {'classified': classified, 'branch': none, 'main': target_relation}[plan.mirror] %}
        {% if plan.mirror == 'branch' %}
            {% set mirror = cdc_merge.begin_mirror_writes(target_relation) %}
        {% endif %}
        {% if plan.delete == 'by_position' %}
            {% do cdc_merge.delete_replaced_rows_by_position(target_relation, batch_changes, counts.updated + counts.deleted) %}
        {% elif plan.delete == 'delete' %}
            {% do cdc_merge.run_query_with_settings(cdc_merge.delete_replaced_rows_sql(mirror, batch_changes, key_range), cdc_merge.mirror_merge_settings()) %}
        {% elif plan.delete == 'merge' %}
            {% do cdc_merge.run_query_with_settings(
                cdc_merge.merge_mirror_sql(mirror, batch_changes, key_range, columns, cfg, plan.partial_updates), cdc_merge.mirror_merge_settings()) %}
        {% endif %}
        {% if plan.insert %}
            {% do run_query(cdc_merge.insert_mirror_sql(mirror, batch_changes, columns, cfg, plan.replaces_rows)) %}
        {% endif %}
        {% if plan.finish == 'discard' %}
            {% do cdc_merge.discard_mirror_writes(target_relation) %}
        {% elif plan.finish == 'publish' %}
            {% do cdc_merge.publish_mirror_writes(target_relation) %}
        {% endif %}
    {% endif %}
    {% do cdc_merge.drop_changes(batch_changes) %}
    {% do counts.update({'skipped': counts.skipped + counts.tombstoned}) %}
    {{ return(counts) }}
{% endmacro %}
