{#
    The offsets and cdc_merge_runs rows of a run's mirrors, written once for all of them: each
    mirror keeps its last offset row (offsets.sql keep_offset) and its runs row (metrics.sql
    keep_run) in the adapter (kept_rows.py), and the last mirror of the invocation to finish (or the
    adapter at the invocation's end, when one failed) writes them in one INSERT per table, offsets first;
    in dbt's own Spark session, what those INSERTs compute from the tables they read is computed from
    rows read in the driver, and the rows appended there, without a Spark job (kept_rows_in_driver.py).
    A mirror stays locked until its offset row is written (docs/apply_design.md).
#}

{% macro write_kept_rows(to_write) %}
    {#- to_write: {'groups': [{'kind', 'table', 'rows'}], 'release': mirrors to unlock once written}. -#}
    {% if not to_write.groups and not to_write.release %}
        {{ return(none) }}
    {% endif %}
    {% set statements = [] %}
    {% set in_driver = cdc_merge.capabilities().in_process_session %}
    {% for group in to_write.groups %}
        {% set table = cdc_merge.relation_of(group.table) %}
        {% set targets = group.rows | map(attribute='target_table') | list %}
        {% if group.kind == 'offset' %}
            {% set ordinals = adapter.cdc_kept_offset_ordinals(group.table, targets) if in_driver else none %}
            {% if ordinals is not none %}
                {% do statements.append({'append_to': group.table, 'rows': group.rows | length, 'follow': 'offsets',
                                         'select': cdc_merge.kept_offsets_sql(table, group.rows, ordinals)}) %}
            {% else %}
                {#- Each mirror's own ordinal where each row has one, one row a mirror: the INSERT then reads no offsets. -#}
                {% set carried = group.rows | map(attribute='offset_ordinal') | list %}
                {% set one_each = (targets | unique | list | length) == (targets | length) %}
                {% do statements.append(cdc_merge.append_offsets_sql(table, group.rows,
                    carried if (one_each and none not in carried) else none)) %}
            {% endif %}
        {% else %}
            {#- Created if dbt's relation cache, filled when the invocation starts, does not list it (a statement less a run). -#}
            {% if adapter.get_relation(database=table.database, schema=table.schema, identifier=table.identifier) is none %}
                {% do statements.append(cdc_merge.create_runs_table(table)) %}
            {% endif %}
            {% do cdc_merge.upgrade_runs_table(table) %}
            {% set by_quarantine = {} %}
            {% for row in group.rows %}
                {% do by_quarantine.setdefault(row.quarantine, []).append(row) %}
            {% endfor %}
            {% for quarantine, rows in by_quarantine.items() %}
                {% set lines = adapter.cdc_kept_runs_lines(group.table, quarantine, rows | map(attribute='target_table') | list)
                   if in_driver else none %}
                {% if lines is not none %}
                    {% do statements.append({'append_to': group.table, 'rows': rows | length, 'follow': 'runs',
                                             'select': cdc_merge.kept_runs_sql(table, quarantine, rows, lines)}) %}
                {% else %}
                    {% do statements.append(cdc_merge.append_runs_sql(table, quarantine, rows)) %}
                {% endif %}
            {% endfor %}
        {% endif %}
    {% endfor %}
    {% do cdc_merge.crash_point('apply-before-run-rows') %}
    {% do adapter.cdc_write_kept_rows(statements, to_write.release) %}
{% endmacro %}


{% macro relation_of(name) %}
    {#- A relation from 'schema.identifier', as a kept row names its table. -#}
    {% set schema, identifier = name.split('.', 1) %}
    {{ return(api.Relation.create(schema=schema, identifier=identifier, type='table')) }}
{% endmacro %}


{% macro write_kept_rows_for_readers() %}
    {#- Data tests that read the offsets or runs tables call this first: under `dbt build` a mirror's
        test runs once the mirror has finished, possibly before the invocation's last mirror writes
        the rows of all (the rows written now are those of finished mirrors only). -#}
    {% set can = cdc_merge.capabilities() if execute else {} %}
    {% if can.keeps_offset_rows or can.keeps_run_rows %}
        {% do cdc_merge.write_kept_rows(adapter.cdc_kept_rows_for_readers()) %}
    {% endif %}
{% endmacro %}
