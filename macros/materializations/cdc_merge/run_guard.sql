{#
    What guards one mirror's apply against other runs and tests it against crashes:
    lock_mirror / unlock_mirror  one process applies (or maintains) a mirror or history at a time; another waits for it
                                 (python_jobs/run_locks.py; on a Thrift server with a JDBC catalog in
                                 PostgreSQL, on any machine: python_jobs/catalog_locks.py), so both
                                 never insert the same new key; there a consistency group's mirror
                                 first waits for the group, held by one run until its catalog
                                 transaction is published, which another run's would discard
    enter_large_batch            with dbt --threads, one mirror with a large chunk at a time in this
                                 process (python_jobs/apply/large_batch_gate.py); unlock_mirror ends it
    delete_from_shared_table     maintenance's trims of the offsets and runs tables: one at a time in
                                 this process, run again when another writer's commit won
    try_lock_raw_table / unlock_raw_table
                                 maintenance writes the raw table only while no landing does: two
                                 processes committing to one Iceberg table of the Hadoop catalog at
                                 the same instant could lose one commit (check-then-rename)
    crash_point                  dies here when CDC_MERGE_CRASH_AT names the point
                                 (python_jobs/crash_points.py, RELIABILITY.md); otherwise nothing
    On Databend only the mirror's lock holds (cdc_databend/mirror_locks.py): the others guard what runs in
    this process, and its statements run on the server.
#}

{% macro lock_mirror(target_relation, consistency_group=none) %}
    {% if cdc_merge.capabilities().mirror_locks %}
        {% do adapter.cdc_lock_mirror(target_relation | string, consistency_group) %}
    {% endif %}
{% endmacro %}


{% macro unlock_mirror(target_relation) %}
    {% if cdc_merge.capabilities().mirror_locks %}
        {% do adapter.cdc_unlock_mirror(target_relation | string) %}
    {% endif %}
{% endmacro %}


{% macro unlock_group(consistency_group) %}
    {#- A group's lock, where lock_mirror took one, before its run's end: cdc_maintain's, which publishes nothing. -#}
    {% if cdc_merge.capabilities().mirror_locks and consistency_group is not none %}
        {% do adapter.cdc_release_group(consistency_group) %}
    {% endif %}
{% endmacro %}


{% macro enter_large_batch(chunks) %}
    {% if cdc_merge.capabilities().guards and chunks | length %}
        {% do adapter.cdc_enter_large_batch(chunks) %}
    {% endif %}
{% endmacro %}


{% macro try_lock_raw_table(raw_relation) %}
    {#- true when this run may write the raw table now (no landing holds it); never waits. -#}
    {% if cdc_merge.capabilities().guards %}
        {{ return(adapter.cdc_try_lock_table(raw_relation | string)) }}
    {% endif %}
    {{ return(true) }}
{% endmacro %}


{% macro unlock_raw_table(raw_relation) %}
    {% if cdc_merge.capabilities().guards %}
        {% do adapter.cdc_unlock_table(raw_relation | string) %}
    {% endif %}
{% endmacro %}


{% macro delete_from_shared_table(table, sql) %}
    {#- sql, a DELETE by predicate from a table the mirrors share: one at a time, again after a lost commit race. -#}
    {% if cdc_merge.capabilities().guards %}
        {% do adapter.cdc_delete_from_shared_table(table | string, sql) %}
    {% else %}
        {% do run_query(sql) %}
    {% endif %}
{% endmacro %}


{% macro crash_point(name) %}
    {% if cdc_merge.capabilities().guards %}
        {% do adapter.cdc_crash_point(name) %}
    {% endif %}
{% endmacro %}
