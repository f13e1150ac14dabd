{#
    Compaction: a table's small data files rewritten into few, with the rows its delete files
    remove left out, and the delete files that then point at nothing dropped. A rewrite is one
    commit: a run that dies during it leaves the table as it was (and files nobody references,
    for remove_orphan_files). The counts are files added and files removed.
#}

{% macro compact_table(relation) %}
    {{ return(adapter.dispatch('compact_table', 'cdc_merge')(relation)) }}
{% endmacro %}

{% macro spark__compact_table(relation) %}
    {#-
        Any two small files, or one file with a delete file, are worth a rewrite; bin-packing
        leaves alone the files already near the target size. Position deletes on files the
        rewrite left are then merged into one file per data file.
    -#}
    {% set name = relation.schema ~ "." ~ relation.identifier %}
    {#- A small table in the driver (driver_maintenance.py), where Spark's two procedures took 0.3-1.0 s
        each for a few thousand rows; it leaves no delete file on the files it rewrote. -#}
    {% set in_driver = adapter.cdc_compact_in_driver(name) if cdc_merge.capabilities().iceberg_helpers else none %}
    {% if in_driver is not none %}
        {{ return({'files_added': in_driver.files_added, 'files_removed': in_driver.files_removed}) }}
    {% endif %}
    {% set data = run_query("call system.rewrite_data_files(table => '" ~ name ~ "', options => map("
        ~ "'min-input-files', '2', 'delete-file-threshold', '1', 'remove-dangling-deletes', 'true'))").rows[0] %}
    {% set counts = {
        'files_added': data['added_data_files_count'] | int,
        'files_removed': (data['rewritten_data_files_count'] | int) + (data['removed_delete_files_count'] | int),
    } %}
    {#- The delete files left, from Iceberg's metadata in the JVM where the adapter reads it (no
        statement; the query over the files and snapshots tables took 0.3-1.2 s a table), else queried. -#}
    {% set known = adapter.cdc_table_metadata(name) if cdc_merge.capabilities().iceberg_helpers else none %}
    {% if (known.delete_files if known is not none else cdc_merge.table_maintenance_state(relation).delete_files) > 1 %}
        {% set deletes = run_query("call system.rewrite_position_delete_files(table => '" ~ name
            ~ "', options => map('rewrite-all', 'true'))").rows %}
        {% if deletes | length %}
            {% do counts.update({
                'files_added': counts.files_added + (deletes[0]['added_delete_files_count'] | int),
                'files_removed': counts.files_removed + (deletes[0]['rewritten_delete_files_count'] | int),
            }) %}
        {% endif %}
    {% endif %}
    {{ return(counts) }}
{% endmacro %}

{% macro databend__compact_table(relation) %}
    {#-
        Databend deletes by rewriting blocks: compaction merges small blocks and segments. It does
        not say which blocks it rewrote, so the counts are the net change in the current blocks.
    -#}
    {% set before = cdc_merge.table_maintenance_state(relation).data_files %}
    {% do run_query("optimize table " ~ relation ~ " compact") %}
    {% set after = cdc_merge.table_maintenance_state(relation).data_files %}
    {{ return({'files_added': [after - before, 0] | max, 'files_removed': [before - after, 0] | max}) }}
{% endmacro %}
