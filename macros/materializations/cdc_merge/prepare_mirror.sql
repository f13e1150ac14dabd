{#
    Before a cdc_merge run's chunks: the model's output columns, read from the first chunk's batch
    (or an empty one), checked against the config; source columns the model does not read, warned;
    the mirror created, or its stored columns changed as on_schema_change says (schema_change.sql);
    its tombstones created. Sets run_state's columns, column_types, by_position, model_columns and model_sql.
#}

{% macro prepare_mirror(run, chunks, run_state) %}
    {% set target_relation = run_state.target_relation %}
    {% set tombstones = run_state.tombstones %}
    {% set cfg = run_state.cfg %}
    {% set raw_changes_view = run_state.raw_changes_view %}
    {% set batch_view = run_state.batch_view %}
    {% set horizon = run_state.horizon %}
    {% set batch_view_sql = run_state.batch_view_sql %}
    {% set notes = run_state.notes %}
    {#-
        The model's output columns, from the first chunk's batch (or an empty one; never from
        a stream: reading it here, outside the chunk's transaction, could consume it).
    -#}
    {% do cdc_merge.enter_large_batch(chunks) %}
    {#- batch_view_sql: the batch view's statement; a batch's own is not run again when it is this one. -#}
    {% set first_plan = none %}
    {% set first_facts = none %}
    {#- A quiet chunk holds none of the source's events (chunk_plan.py): not read, as an empty batch tells the same columns. -#}
    {% set read_first = chunks | length and chunks[0].stream is not defined and not chunks[0].get('quiet') %}
    {% if read_first %}
        {% do cdc_merge.read_chunk(chunks[0], raw_changes_view, cfg) %}
        {% set first_plan = cdc_merge.chunk_plan(chunks[0], cfg) %}
        {#- Where no pass over the range gave the plan, one query over the chunk does, and its first batch uses it (apply_chunk.sql). -#}
        {% set first_facts = cdc_merge.chunk_facts(first_plan, raw_changes_view, cfg) %}
        {% if first_plan is none %}
            {% do run_state.update({'first_facts': first_facts}) %}
        {% endif %}
        {#- One round when no event has placeholders: then the first batch's own view is this one. -#}
        {% set first_rounds = 1 if (first_facts is not none and chunks[0].buckets == 1 and (first_facts['placeholder_events'] | int) == 0) else none %}
        {#- A small range's newest events per key, deduplicated once for all its mirrors (dedup.sql newest_events_view).
            Here for the model's columns and row count only, which a TOAST fill does not change: whether the batches
            read it is asked per chunk (apply_chunk.sql), with the mirror's stored seqs. -#}
        {% set first_newest = cdc_merge.newest_events_view(chunks[0], raw_changes_view, cfg, first_plan, horizon is none) %}
        {% set batch_view_sql.value = cdc_merge.create_batch_view_sql(batch_view, first_newest or raw_changes_view, cfg.source_table, 0, 1, 1,
            first_rounds, first_newest is not none) %}
    {% else %}
        {% set batch_view_sql.value = cdc_merge.create_empty_batch_view_sql(batch_view) %}
    {% endif %}
    {% do run_query(batch_view_sql.value) %}
    {% set model_described = cdc_merge.cdc_query_columns(run_state.model_sql, cfg.raw_relation) %}
    {% set model_columns = model_described | map(attribute='0') | list %}
    {% do cdc_merge.cdc_merge_validate_columns(model_columns, cfg) %}
    {#- A model SQL the mirror has not run with: one row for each row of its batch (model_rows.sql), before anything is written. -#}
    {% set stored_checksum = none if run.create else cdc_merge.checked_model_checksum(target_relation, cfg) %}
    {% do cdc_merge.check_model_keeps_rows(run_state.model_sql, batch_view, stored_checksum == cdc_merge.model_checksum(compiled_code, cfg)) %}
    {% set metadata_columns = ['_cdc_key', '_cdc_action', '_cdc_seq', '_cdc_source_ts', '_cdc_unavailable'] %}
    {% set columns = model_columns | reject('in', metadata_columns) | list %}
    {% if model.contract is defined and model.contract.enforced %}
        {% do cdc_merge.check_model_contract(model_described, metadata_columns) %}
    {% endif %}

    {#- Source columns the model does not read (unmapped.sql), from a sample of the first chunk's images. -#}
    {% set unmapped = cdc_merge.unmapped_columns(raw_changes_view, cfg, model_columns, first_facts.fields if first_facts is not none else none) if read_first else [] %}
    {% if unmapped %}
        {% do exceptions.warn("cdc_merge model '" ~ model.name ~ "': " ~ cfg.source_table ~ " has columns the model does not read: "
            ~ unmapped | join(', ') ~ ". Add them to the model (the mirror gets them, backfilled: docs/schema_changes.md), or list them"
            ~ " under ignored in its cdc_unmapped_columns test.") %}
        {% do notes.append('not read from the source: ' ~ unmapped | join(', ')) %}
    {% endif %}
    {% if run.create %}
        {% do run_query(cdc_merge.create_mirror_sql(target_relation, '(' ~ run_state.model_sql ~ ') as model_output', columns, cfg)) %}
        {% if run.build_aside %}
            {% do cdc_merge.start_rebuild_offset(run_state) %}
        {% endif %}
        {% if run.rebuild %}
            {% do cdc_merge.crash_point('full-refresh-before-offset') %}
        {% endif %}
    {% else %}
        {#- A stored mirror whose columns differ from the model's is changed as on_schema_change says (schema_change.sql). -#}
        {% set evolved = cdc_merge.evolve_mirror(target_relation, run_state.model_sql, model_described, cfg) %}
        {% set columns = evolved.columns %}
        {% do run_state.update({'model_sql': evolved.model_sql}) %}
        {% do notes.insert(0, evolved.note) %}
        {% if evolved.batch_view_replaced %}
            {% set batch_view_sql.value = none %}
        {% endif %}
    {% endif %}
    {#- The model as compiled, not as evolve_mirror rewrote it: the idle check compares the compiled code. -#}
    {% do cdc_merge.remember_model_checksum(target_relation, compiled_code, cfg, stored_checksum, run_state.offsets, model_columns) %}
    {#- Created with a new mirror, or when the run's list of relations does not have them. -#}
    {% if tombstones is not none and (run.create or load_cached_relation(tombstones) is none) %}
        {% do run_query(cdc_merge.create_tombstones_sql(tombstones)) %}
    {% endif %}
    {% set by_position = cdc_merge.deletes_by_position(target_relation, cfg) %}
    {#- The written columns' types, for the values the source gave older rows in columns it added (column_defaults.sql). -#}
    {% set column_types = {} %}
    {% set written_names = columns | map('lower') | list %}  {#- NewCol as newcol, as lower_names has it -#}
    {% for name, data_type in cdc_merge.lower_names(model_described) if name in written_names %}
        {% do column_types.update({name: data_type}) %}
    {% endfor %}
    {% do run_state.update({'columns': columns, 'column_types': column_types, 'by_position': by_position, 'model_columns': model_columns}) %}
{% endmacro %}


{% macro check_model_contract(model_described, metadata_columns, materialization='cdc_merge', own_columns=[]) %}
    {#- An enforced contract, before anything is written: the declared types as the engine spells them (cast in a
        query of no rows, as dbt's own contract check does), against the model's columns; the _cdc_ columns and
        own_columns (a history's) are the materialization's. Mirrors and histories (cdc_history.sql) alike. -#}
    {% set declared_columns = [] %}
    {% for column in model.columns.values() if not (column.name | lower).startswith('_cdc_') and (column.name | lower) not in own_columns %}
        {% do declared_columns.append(column) %}
    {% endfor %}
    {% set typed = [] %}
    {% for column in declared_columns if column.data_type %}
        {% do typed.append('cast(null as ' ~ column.data_type ~ ') as ' ~ adapter.quote(column.name)) %}
    {% endfor %}
    {% set engine_types = dict(cdc_merge.cdc_query_columns('select ' ~ typed | join(', '))) if typed else {} %}
    {% set declared = [] %}
    {% for column in declared_columns %}
        {% do declared.append([column.name, engine_types.get(column.name, column.data_type) if column.data_type else '']) %}
    {% endfor %}
    {% set produced = [] %}
    {% for name, data_type in model_described if name not in metadata_columns %}
        {% do produced.append([name, data_type]) %}
    {% endfor %}
    {% set error = adapter.cdc_contract_error(model.name, declared, produced, materialization, own_columns) %}
    {% if error %}
        {% do exceptions.raise_compiler_error(error) %}
    {% endif %}
{% endmacro %}
