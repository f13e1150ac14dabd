{#
    Key ranges an online snapshot page read completely (docs/online_snapshots.md): after a chunk's
    batches, the mirror's rows in each range of the chunk whose _cdc_seq is older than the page's low
    watermark are rows the source no longer has (python_jobs/apply/snapshot_ranges.py says why). They
    go as a delete at the low watermark: hard deletes leave a tombstone there, soft deletes mark them.
#}

{% macro chunk_snapshot_ranges(chunk_view, cfg, chunk_plan) %}
    {#- [seq, raw_data] of the chunk's range events of the table; from the chunk plan where it has them. -#}
    {% if chunk_plan is not none and chunk_plan.get('snapshot_ranges') is not none %}
        {{ return(chunk_plan['snapshot_ranges']) }}
    {% endif %}
    {% set found = run_query(adapter.dispatch('range_events_sql', 'cdc_merge')(chunk_view, cfg.source_table)) %}
    {{ return(found.rows | map('list') | list) }}
{% endmacro %}

{% macro spark__range_events_sql(relation, source_table) %}
    select
        seq,
        raw_data
    from {{ relation }}
    where _change_type = 'INSERT' and table_name = '{{ source_table }}' and action = 'range'
{% endmacro %}

{% macro databend__range_events_sql(relation, source_table) %}
    select
        seq,
        raw_data::string as raw_data
    from {{ relation }}
    where _change_type = 'INSERT' and table_name = '{{ source_table }}' and action = 'range'
{% endmacro %}


{% macro ranges_waiting_for_deferred(raw_changes_view, cfg, horizon) %}
    {#-
        The seqs of the chunk's range records that wait for the consistency group's next run: a deferred
        transaction changed the table between the page's low watermark and the range record. The page
        left such a key to its change, so the mirror still holds the key's older row, which the range
        would delete as one the source no longer has. Read before the deferred events leave the chunk.
    -#}
    {% if horizon is none or not horizon.deferred %}
        {{ return([]) }}
    {% endif %}
    {% set events = run_query(adapter.dispatch('range_events_sql', 'cdc_merge')(raw_changes_view, cfg.source_table)).rows | map('list') | list %}
    {% set waiting = [] %}
    {% for range in (adapter.cdc_snapshot_ranges(events, cfg.unique_key) if events else []) %}
        {% set changes = run_query("select count(*) as changes from " ~ raw_changes_view
            ~ " where _change_type = 'INSERT' and table_name = '" ~ cfg.source_table ~ "' and tx_id in "
            ~ cdc_merge.deferred_list(horizon.deferred) ~ " and seq > '" ~ range.low ~ "' and seq < '" ~ range.seq ~ "'").rows[0]['changes'] | int %}
        {% if changes > 0 %}
            {% do waiting.append(range.seq) %}
        {% endif %}
    {% endfor %}
    {{ return(waiting) }}
{% endmacro %}


{% macro apply_snapshot_ranges(target_relation, tombstones, events, column_types, cfg, chunk_view, waiting=[]) %}
    {#- Returns how many rows the ranges removed (or marked deleted); chunk_view: the chunk's events; waiting: seqs of ranges left for the next run. -#}
    {% if not events %}
        {{ return(0) }}
    {% endif %}
    {% set removed = namespace(rows=0) %}
    {% set ranges = [] %}
    {% for range in adapter.cdc_snapshot_ranges(events, cfg.unique_key) %}
        {% if range.seq in waiting %}
            {{ log("cdc_merge " ~ target_relation ~ ": the online snapshot range record at " ~ range.seq ~ " waits for the group's next run: "
                ~ "a deferred transaction changed " ~ cfg.source_table ~ " after the page's low watermark, and the range would remove its keys' rows", info=True) }}
        {% else %}
            {% do ranges.append(range) %}
        {% endif %}
    {% endfor %}
    {#- A key column the model casts to text where the source's is a number orders otherwise: refused before any delete. -#}
    {% set problem = adapter.cdc_snapshot_range_problem(ranges, column_types, model.name) if ranges else none %}
    {% if problem %}
        {% do exceptions.raise_compiler_error(problem) %}
    {% endif %}
    {#-
        The ranges of the chunk go together, up to 50 a statement: each statement scans the mirror, and an
        online snapshot's chunk holds a range record a page. In a group, the ranges of consecutive pages
        form a ladder, and a row finds its range by a search over the ladder's upper bounds (range_search.py:
        a resnapshot of 1M rows in pages of 10,000 spent 250 s on its 100 ranges tested one at a time,
        and 49 s tested 50 to a statement each in turn; BENCHMARKS.md, "A lost slot read again"). A row
        in two ladders goes by the first that holds it, as the ranges one after the other would remove it.
    -#}
    {% for group in ranges | batch(50) %}
        {% set ladders = adapter.cdc_range_ladders(group, column_types) %}
        {% set holds = [] %}
        {% set lows = [] %}
        {% for ladder in ladders %}
            {% set leaves = [] %}
            {% for range in ladder.ranges %}
                {% do leaves.append("'" ~ range.low ~ "'") %}
            {% endfor %}
            {% do lows.append(cdc_merge.range_search_sql(ladder.tree, ladder.ranges, leaves, column_types)) %}
            {% do holds.append('(' ~ cdc_merge.key_range_predicate(ladder.hull, column_types) ~ ' and _cdc_seq < ' ~ lows[-1] ~ ')') %}
        {% endfor %}
        {#-
            Older than the group's newest low watermark first: the rows of the pages after the group's
            (their seqs are newer) skip the test of its ranges (one group of 100 ranges took as long as
            two of 50 with this test).
        -#}
        {% set older = "_cdc_seq < '" ~ (group | map(attribute='low') | max) ~ "' and (" ~ holds | join(' or ') ~ ')'
            ~ (' and not _cdc_deleted' if cfg.deletes == 'soft' else '') %}
        {#-
            The delete is the page's, at the range record's time, not the row's last change's (months ago maybe):
            a soft-deleted row's _cdc_source_ts and a tombstone's (which tombstone collection's horizon counts from).
            Literals: an UPDATE's assignments take no subquery.
        -#}
        {% set stamped = run_query('select seq, cast(max(source_ts) as string) as range_ts from ' ~ chunk_view ~ " where table_name = '"
            ~ cfg.source_table ~ "' and action = 'range' and seq in ('" ~ (group | map(attribute='seq') | join("', '")) ~ "') group by seq").rows %}
        {% set range_ts = {} %}
        {% for row in stamped if row['range_ts'] %}
            {% do range_ts.update({row['seq']: row['range_ts']}) %}
        {% endfor %}
        {% set low_of_row = [] %}
        {% set ts_of_row = [] %}
        {% for ladder in ladders %}
            {% do low_of_row.append('when ' ~ holds[loop.index0] ~ ' then ' ~ lows[loop.index0]) %}
            {% set leaves = [] %}
            {% for range in ladder.ranges %}
                {% do leaves.append(("timestamp'" ~ range_ts[range.seq] ~ "'") if range.seq in range_ts else 'null') %}
            {% endfor %}
            {% if range_ts %}
                {% do ts_of_row.append('when ' ~ holds[loop.index0] ~ ' then ' ~ cdc_merge.range_search_sql(ladder.tree, ladder.ranges, leaves, column_types)) %}
            {% endif %}
        {% endfor %}
        {% set low_sql = 'case ' ~ low_of_row | join(' ') ~ ' end' %}
        {% set ts_sql = ('coalesce(case ' ~ ts_of_row | join(' ') ~ ' end, _cdc_source_ts)') if ts_of_row else '_cdc_source_ts' %}
        {#- The rows to remove, with their tombstones' seq and time: found once where the engine keeps them (the mirror scanned once, not at every statement). -#}
        {% set removals_sql = 'select _cdc_key, ' ~ low_sql ~ ' as _cdc_seq, ' ~ ts_sql ~ ' as _cdc_source_ts from ' ~ target_relation ~ ' where ' ~ older %}
        {% set removals = adapter.dispatch('range_removals', 'cdc_merge')(target_relation, removals_sql, cfg.deletes == 'hard') %}
        {% set rows = removals.rows if removals.view is not none else run_query('select count(*) as removed from ' ~ target_relation ~ ' where ' ~ older).rows[0]['removed'] | int %}
        {% set removed_keys = ('select _cdc_key from ' ~ removals.view) if removals.view is not none else ('select _cdc_key from ' ~ target_relation ~ ' where ' ~ older) %}
        {% if rows > 0 %}
            {% if cfg.deletes == 'soft' %}
                {% do run_query('update ' ~ target_relation ~ ' set _cdc_deleted = true, _cdc_seq = ' ~ low_sql
                    ~ ', _cdc_source_ts = ' ~ ts_sql ~ ' where ' ~ older) %}
            {% else %}
                {% if tombstones is not none %}
                    {#- The key's tombstone, at the low watermark: an older event of it arriving late brings nothing back. -#}
                    {% do run_query('delete from ' ~ tombstones ~ ' where _cdc_key in (' ~ removed_keys ~ ')') %}
                    {% do run_query('insert into ' ~ tombstones ~ ' ' ~ (('select * from ' ~ removals.view) if removals.view is not none else removals_sql)) %}
                {% endif %}
                {#- By its own predicate: a delete joined to the kept keys took twice as long. -#}
                {% do run_query('delete from ' ~ target_relation ~ ' where ' ~ older) %}
            {% endif %}
        {% endif %}
        {% if removals.view is not none %}
            {% do adapter.drop_checkpoint_view(removals.view) %}
        {% endif %}
        {% set removed.rows = removed.rows + rows %}
    {% endfor %}
    {% if removed.rows %}
        {{ log("cdc_merge " ~ target_relation ~ ": " ~ removed.rows ~ " rows the source no longer has "
            ~ ('marked deleted' if cfg.deletes == 'soft' else 'removed') ~ " (online snapshot ranges)", info=True) }}
    {% endif %}
    {{ return(removed.rows) }}
{% endmacro %}


{% macro spark__range_removals(target_relation, removals_sql, hard) %}
    {#- {'view': the rows of removals_sql kept in memory, 'rows': how many}; view none where they are not kept: the soft
        deletes' one UPDATE reads the mirror once anyway, and a Thrift server's session is not in this process. -#}
    {% set view = target_relation.identifier ~ '__cdc_range_removals' %}
    {% set counted = adapter.create_checkpoint_view(view, removals_sql, ['count(*) as removed']) if hard else none %}
    {{ return({'view': view if counted is not none else none, 'rows': (counted or {}).get('removed', 0) | int}) }}
{% endmacro %}

{% macro databend__range_removals(target_relation, removals_sql, hard) %}
    {{ return({'view': none, 'rows': 0}) }}
{% endmacro %}


{% macro key_range_predicate(range, column_types, key_expressions=none) %}
    {#-
        The rows whose key is in (after, through] ([from, through] when the range starts at a key),
        compared column by column in key order; key_expressions: {key column: SQL expression} where the
        key is not in the columns themselves (default: the columns).
    -#}
    {% set parts = [] %}
    {% for bound, strict, operator in [(range.after, true, '>'), (range['from'], false, '>'), (range.through, false, '<')] if bound is not none %}
        {% set alternatives = [] %}
        {% for column in bound %}
            {% set equal_before = [] %}
            {% for earlier in bound[:loop.index0] %}
                {% do equal_before.append(cdc_merge.key_expression(earlier.name, key_expressions) ~ ' = '
                    ~ cdc_merge.range_bound_value(earlier, column_types)) %}
            {% endfor %}
            {% set value = cdc_merge.range_bound_value(column, column_types) %}
            {% do alternatives.append('(' ~ (equal_before + [cdc_merge.key_expression(column.name, key_expressions) ~ ' ' ~ operator ~ ' ' ~ value]) | join(' and ') ~ ')') %}
        {% endfor %}
        {% if not strict %}
            {#- from and through are inclusive: their own key too. -#}
            {% set equal_all = [] %}
            {% for column in bound %}
                {% do equal_all.append(cdc_merge.key_expression(column.name, key_expressions) ~ ' = '
                    ~ cdc_merge.range_bound_value(column, column_types)) %}
            {% endfor %}
            {% do alternatives.append('(' ~ equal_all | join(' and ') ~ ')') %}
        {% endif %}
        {% do parts.append('(' ~ alternatives | join(' or ') ~ ')') %}
    {% endfor %}
    {{ return(parts | join(' and ') if parts else 'true') }}
{% endmacro %}

{% macro range_bound_value(column, column_types) %}
    {#- A bound's key column as a value of the column's type: its literal where range_search.py gave one, else its image read as cdc_value reads it. -#}
    {% if column.number is defined %}
        {{ return(column.number) }}
    {% elif column.text is defined %}
        {{ return(cdc_merge.string_literal(column.text)) }}
    {% endif %}
    {{ return(cdc_merge.cdc_value(cdc_merge.json_literal(column.image), column.name, column_types[column.name])) }}
{% endmacro %}

{% macro range_search_sql(tree, ranges, leaves, column_types) %}
    {#- leaves[i] for a row in ranges[i] of a ladder, found by the search tree (range_search.py search_tree). -#}
    {% if tree.leaf is defined %}
        {{ return(leaves[tree.leaf]) }}
    {% endif %}
    {% set at_or_below = cdc_merge.key_range_predicate({'after': none, 'from': none, 'through': ranges[tree.split].through}, column_types) %}
    {{ return('case when ' ~ at_or_below ~ ' then ' ~ cdc_merge.range_search_sql(tree.below, ranges, leaves, column_types)
        ~ ' else ' ~ cdc_merge.range_search_sql(tree.above, ranges, leaves, column_types) ~ ' end') }}
{% endmacro %}

{% macro key_expression(column, key_expressions) %}
    {{- return(key_expressions[column] if key_expressions is not none else column) -}}
{% endmacro %}
