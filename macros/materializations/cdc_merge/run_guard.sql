{#
    What guards one mirror's apply against other runs and tests it against crashes:
    lock_mirror / unlock_mirror  one process applies a mirror at a time; another waits for it
                                 (python_jobs/run_locks.py), so both never insert the same new key
    crash_point                  dies here when CDC_MERGE_CRASH_AT names the point
                                 (python_jobs/crash_points.py, RELIABILITY.md); otherwise nothing
    On Databend all three do nothing: its statements run on the server, not in this process.
#}

{% macro lock_mirror(target_relation) %}
    {% if target.type == 'cdc_spark' %}
        {% do adapter.cdc_lock_mirror(target_relation | string) %}
    {% endif %}
{% endmacro %}


{% macro unlock_mirror(target_relation) %}
    {% if target.type == 'cdc_spark' %}
        {% do adapter.cdc_unlock_mirror(target_relation | string) %}
    {% endif %}
{% endmacro %}


{% macro crash_point(name) %}
    {% if target.type == 'cdc_spark' %}
        {% do adapter.cdc_crash_point(name) %}
    {% endif %}
{% endmacro %}
