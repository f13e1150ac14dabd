{#
    Consistency groups: mirrors with the same consistency_group apply whole source transactions
    only, and after a run in which every mirror of the group applied through one horizon, the
    group's cut is recorded: each mirror's snapshot at that state (cdc_merge_cuts). consistent()
    reads a mirror at its group's latest cut. Design and limits: docs/consistent_cuts.md.

    Per run the first mirror of a group scans the group's window (the raw snapshots after its tail
    start) for transactions and their end markers; python_jobs/apply/consistency_horizon.py decides
    the horizon, which the adapter keeps for the invocation's other mirrors of the group. Each mirror
    then reads the raw snapshots through the horizon's, skips the deferred transactions' events,
    and sets its offset to the horizon's tail start, so the next run reads those again, whole.
#}

{% macro cuts_relation(offsets) %}
    {{ return(api.Relation.create(schema=offsets.schema, identifier='cdc_merge_cuts', type='table')) }}
{% endmacro %}


{% macro create_cuts_table(relation) %}
    {{ return(adapter.dispatch('create_cuts_table', 'cdc_merge')(relation)) }}
{% endmacro %}

{% macro spark__create_cuts_table(relation) %}
    create table if not exists {{ relation }} (
        consistency_group string,
        cut_ordinal bigint,
        cut_seq string,
        tail_start string,
        settled string,
        raw_table string,
        raw_snapshot string,
        cut_source_ts timestamp,
        cut_lag_seconds double,
        target_table string,
        mirror_snapshot string,
        cut_at timestamp,
        invocation_id string
    )
    using iceberg
    tblproperties ('format-version' = '2', {{ cdc_merge.metadata_log_tblproperties() }})
{% endmacro %}

{% macro databend__create_cuts_table(relation) %}
    create table if not exists {{ relation }} (
        consistency_group string null,
        cut_ordinal bigint null,
        cut_seq string null,
        tail_start string null,
        settled string null,
        raw_table string null,
        raw_snapshot string null,
        cut_source_ts timestamp null,
        cut_lag_seconds double null,
        target_table string null,
        mirror_snapshot string null,
        cut_at timestamp null,
        invocation_id string null
    )
{% endmacro %}


{% macro latest_cut_sql(cuts, group) %}
    {#- '' for null: the embedded Databend's driver hands a NULL over as the string 'NULL'. -#}
    select
        cut_ordinal,
        coalesce(cut_seq, '') as cut_seq,
        coalesce(tail_start, '') as tail_start,
        coalesce(settled, '') as settled,
        coalesce(cast(cut_source_ts as string), '') as cut_source_ts,
        raw_snapshot,
        target_table,
        mirror_snapshot
    from {{ cuts }}
    where consistency_group = '{{ group }}'
        and cut_ordinal = (select max(cut_ordinal) from {{ cuts }} where consistency_group = '{{ group }}')
{% endmacro %}


{% macro group_horizon(cfg, offsets) %}
    {#- The group's horizon for this invocation: {'through', 'cut_seq', 'deferred', 'tail_start', 'ordinal', ...}. -#}
    {% set group = cfg.consistency_group %}
    {% set known = adapter.cdc_group_horizon(invocation_id, group) %}
    {% if known is not none %}
        {{ return(known) }}
    {% endif %}
    {% set cuts = cdc_merge.cuts_relation(offsets) %}
    {% if adapter.get_relation(database=cuts.database, schema=cuts.schema, identifier=cuts.identifier) is none %}
        {% do run_query(cdc_merge.create_cuts_table(cuts)) %}
    {% endif %}
    {% set latest = run_query(cdc_merge.latest_cut_sql(cuts, group)).rows %}
    {% set tail_start = (latest[0]['tail_start'] or none) if latest | length else none %}
    {% set snapshot_log = cdc_merge.raw_snapshot_log(cfg.raw_relation) %}
    {% set window = cdc_merge.pending_raw_snapshots(cfg.raw_relation, tail_start, snapshot_log) | map(attribute='snapshot_id') | list %}
    {% set rows = cdc_merge.transaction_scan(cfg.raw_relation, tail_start, window, group) %}
    {{ return(adapter.cdc_decide_group_horizon(invocation_id, group, window, tail_start,
        (latest[0]['cut_seq'] or none) if latest | length else none, (latest[0]['cut_ordinal'] | int) if latest | length else 0,
        (latest[0]['settled'] or none) if latest | length else none, rows,
        (latest[0]['cut_source_ts'] or none) if latest | length else none)) }}
{% endmacro %}


{% macro transaction_scan(raw_relation, tail_start, window, group) %}
    {#- Rows of (tx_id, table_name, snapshot_id, events, marker_seq, marker_events, marker_tables, source_ts) over the window. -#}
    {{ return(adapter.dispatch('transaction_scan', 'cdc_merge')(raw_relation, tail_start, window, group)) }}
{% endmacro %}

{% macro transaction_scan_columns(snapshot_id) %}
    {#-
        Distinct events, so that a file landed twice does not make a transaction look whole early.
        '' and -1 for null (the embedded Databend's driver hands a NULL over as the string 'NULL').
    -#}
    select
        tx_id,
        table_name,
        {{ snapshot_id }} as snapshot_id,
        count(distinct case when action <> 'tx_end' then concat(key, '|', seq) end) as events,
        coalesce(max(case when action = 'tx_end' then seq end), '') as marker_seq,
        coalesce(max(case when action = 'tx_end' then tx_events end), -1) as marker_events,
        coalesce(max(case when action = 'tx_end' then cast(raw_data as string) end), '') as marker_tables,
        coalesce(cast(max(source_ts) as string), '') as source_ts
{% endmacro %}

{% macro spark__transaction_scan(raw_relation, tail_start, window, group) %}
    {#- Iceberg's changelog view tells each row's snapshot (_commit_snapshot_id): one scan of the window. -#}
    {% if not window %}
        {{ return([]) }}
    {% endif %}
    {% set view = 'cdc_merge_transaction_scan_' ~ group %}
    {% do run_query(cdc_merge.create_raw_changes_view(view, raw_relation, tail_start, window[-1])) %}
    {#- Only appended rows: raw retention's deletes show in the changelog too. -#}
    {% set rows = run_query(cdc_merge.transaction_scan_columns('cast(_commit_snapshot_id as string)') ~ '
        from ' ~ view ~ '
        where tx_id is not null
            and _change_type = \'INSERT\'
        group by tx_id, table_name, _commit_snapshot_id').rows %}
    {% do run_query('drop view if exists ' ~ view) %}
    {{ return(rows) }}
{% endmacro %}

{% macro databend__transaction_scan(raw_relation, tail_start, window, group) %}
    {#- Databend's CHANGES does not tell a row's snapshot: one scan per snapshot of the window (usually one or two). -#}
    {% set rows = [] %}
    {% set previous = namespace(snapshot=tail_start) %}
    {% for snapshot in window %}
        {% set found = run_query(cdc_merge.transaction_scan_columns("'" ~ snapshot ~ "'") ~ '
            from ' ~ raw_relation ~ (
                " changes (information => append_only) at (snapshot => '" ~ previous.snapshot ~ "') end (snapshot => '" ~ snapshot ~ "')"
                if previous.snapshot is not none else " at (snapshot => '" ~ snapshot ~ "')") ~ '
            where tx_id is not null
            group by tx_id, table_name').rows %}
        {% do rows.extend(found) %}
        {% set previous.snapshot = snapshot %}
    {% endfor %}
    {{ return(rows) }}
{% endmacro %}


{% macro group_snapshot_log(snapshot_log, horizon) %}
    {#- The raw snapshots a group's mirror reads: through the horizon's, not a later one landed since. -#}
    {{ return({'current': horizon.through, 'snapshots': snapshot_log.snapshots}) }}
{% endmacro %}


{% macro keep_whole_transactions(raw_changes_view, horizon) %}
    {#- The chunk's events without the deferred transactions': the name of the relation that holds them. -#}
    {% if horizon is none or not horizon.deferred %}
        {{ return(raw_changes_view) }}
    {% endif %}
    {{ return(adapter.dispatch('keep_whole_transactions', 'cdc_merge')(raw_changes_view, horizon.deferred)) }}
{% endmacro %}

{% macro deferred_list(deferred) -%}
    ({% for tx_id in deferred %}'{{ tx_id | replace("'", "''") }}'{{ ', ' if not loop.last }}{% endfor %})
{%- endmacro %}

{% macro spark__keep_whole_transactions(raw_changes_view, deferred) %}
    {% set whole = raw_changes_view ~ '__whole' %}
    {% do run_query('create or replace temporary view ' ~ whole ~ ' as select * from ' ~ raw_changes_view
        ~ ' where tx_id is null or tx_id not in ' ~ cdc_merge.deferred_list(deferred)) %}
    {{ return(whole) }}
{% endmacro %}

{% macro databend__keep_whole_transactions(raw_changes_view, deferred) %}
    {#- The chunk is a transient table of this run's own (raw_log.sql). -#}
    {% do run_query('delete from ' ~ raw_changes_view ~ ' where tx_id in ' ~ cdc_merge.deferred_list(deferred)) %}
    {{ return(raw_changes_view) }}
{% endmacro %}


{% macro group_members(group) %}
    {#- The mirrors (schema.alias) of a consistency group in the project, and whether this invocation selected them all. -#}
    {% set members = [] %}
    {% set all_selected = namespace(value=true) %}
    {% for node in graph.nodes.values() %}
        {% if node.resource_type == 'model' and node.config.get('consistency_group') == group and node.config.get('enabled', true) %}
            {% do members.append((node.schema ~ '.' ~ (node.alias or node.name)) | lower) %}
            {% if node.unique_id not in selected_resources %}
                {% set all_selected.value = false %}
            {% endif %}
        {% endif %}
    {% endfor %}
    {{ return({'members': members, 'all_selected': all_selected.value}) }}
{% endmacro %}


{% macro mirror_snapshot(relation) %}
    {{ return(adapter.dispatch('mirror_snapshot', 'cdc_merge')(relation)) }}
{% endmacro %}

{% macro spark__mirror_snapshot(relation) %}
    {% if cdc_merge.in_process_session() %}
        {{ return(adapter.cdc_current_snapshot(relation)) }}
    {% endif %}
    {% set rows = run_query("select cast(snapshot_id as string) as snapshot_id from " ~ relation ~ ".refs where name = 'main'").rows %}
    {{ return(rows[0]['snapshot_id'] if rows | length else none) }}
{% endmacro %}

{% macro databend__mirror_snapshot(relation) %}
    {% set rows = run_query("select snapshot_id from fuse_snapshot('" ~ relation.schema ~ "', '" ~ relation.identifier ~ "') order by timestamp desc limit 1").rows %}
    {{ return(rows[0]['snapshot_id'] if rows | length else none) }}
{% endmacro %}


{% macro finish_group_member(cfg, target_relation, offsets, horizon) %}
    {#-
        The mirror applied through the horizon: when it is the group's last of the invocation, the cut is recorded.
        horizon none: the mirror had nothing new (idle.sql); the cut then takes the horizon another member decided.
    -#}
    {% set group = cdc_merge.group_members(cfg.consistency_group) %}
    {% if not group.all_selected %}
        {% if horizon is not none %}
            {{ log("cdc_merge " ~ target_relation ~ ": the cut of group " ~ cfg.consistency_group ~ " stays: not every mirror of the group is selected", info=True) }}
        {% endif %}
        {{ return(none) }}
    {% endif %}
    {% set done = adapter.cdc_group_member_done(invocation_id, cfg.consistency_group, cdc_merge.mirror_name(target_relation),
        cdc_merge.mirror_snapshot(target_relation), group.members, horizon is not none) %}
    {% if done is none %}
        {{ return(none) }}
    {% endif %}
    {% set cut = done.snapshots %}
    {% set horizon = horizon if horizon is not none else adapter.cdc_decided_group_horizon(invocation_id, cfg.consistency_group) %}
    {% if not done.applied %}
        {#- No member had anything new: the latest cut stands, unless it is behind them (each was caught up in a run
            that selected only some of the group): then a horizon over what they applied, with nothing deferred, cuts. -#}
        {% set horizon = none %}
        {% set cuts = cdc_merge.cuts_relation(offsets) %}
        {% set latest = run_query(cdc_merge.latest_cut_sql(cuts, cfg.consistency_group)).rows
            if adapter.get_relation(database=cuts.database, schema=cuts.schema, identifier=cuts.identifier) is not none else [] %}
        {% set latest_snapshots = [] %}
        {% for row in latest %}
            {% do latest_snapshots.append([row['target_table'], row['mirror_snapshot']]) %}
        {% endfor %}
        {% if adapter.cdc_cut_behind(latest_snapshots, cut) %}
            {% set decided = cdc_merge.group_horizon(cfg, offsets) %}
            {% set horizon = decided if not decided.deferred else none %}
        {% endif %}
    {% endif %}
    {% if horizon is not none %}
        {#- The views at the cut first: they keep reading the previous cut until the INSERT (cut_views.sql). -#}
        {% do cdc_merge.replace_cut_views(cdc_merge.cuts_relation(offsets), cfg.consistency_group, horizon.ordinal, cut) %}
        {% do run_query(cdc_merge.insert_cut_sql(cdc_merge.cuts_relation(offsets), cfg.consistency_group, cfg.raw_relation, horizon, cut)) %}
        {{ log("cdc_merge: group " ~ cfg.consistency_group ~ " cut " ~ horizon.ordinal ~ " through source commit "
            ~ horizon.cut_source_ts ~ "; " ~ horizon.deferred | length ~ " transactions wait for the next run; cut lag "
            ~ (horizon.lag_seconds if horizon.lag_seconds is not none else 'unknown') ~ " s", info=True) }}
        {% set published = adapter.cdc_publish_catalog_transaction(invocation_id, cfg.consistency_group) %}
        {% if published %}
            {{ log("cdc_merge: group " ~ cfg.consistency_group ~ " published in one catalog transaction (" ~ published ~ " tables)", info=True) }}
        {% endif %}
    {% endif %}
{% endmacro %}


{% macro insert_cut_sql(cuts, group, raw_relation, horizon, cut) %}
    {#- One INSERT: the cut's rows become visible together. -#}
    insert into {{ cuts }}
    {%- for target_table, mirror_snapshot in cut.items() %}
    select
        '{{ group }}' as consistency_group,
        {{ horizon.ordinal }} as cut_ordinal,
        {{ "'" ~ horizon.cut_seq ~ "'" if horizon.cut_seq is not none else 'cast(null as string)' }} as cut_seq,
        {{ "'" ~ horizon.tail_start ~ "'" if horizon.tail_start is not none else 'cast(null as string)' }} as tail_start,
        '{{ horizon.settled | tojson }}' as settled,
        '{{ raw_relation }}' as raw_table,
        {{ "'" ~ horizon.through ~ "'" if horizon.through is not none else 'cast(null as string)' }} as raw_snapshot,
        {{ "cast('" ~ horizon.cut_source_ts ~ "' as timestamp)" if horizon.cut_source_ts is not none else 'cast(null as timestamp)' }} as cut_source_ts,
        {{ horizon.lag_seconds if horizon.lag_seconds is not none else 'cast(null as double)' }} as cut_lag_seconds,
        '{{ target_table }}' as target_table,
        {{ "'" ~ mirror_snapshot ~ "'" if mirror_snapshot is not none else 'cast(null as string)' }} as mirror_snapshot,
        current_timestamp() as cut_at,
        '{{ invocation_id }}' as invocation_id
    {{ 'union all' if not loop.last }}
    {%- endfor %}
{% endmacro %}


{% macro snapshots_cuts_need(offsets, raw_relation=none, target_relation=none) %}
    {#-
        What maintenance must keep for consistency groups whose cuts are in offsets' schema: of a
        mirror (target_relation), its snapshots in its group's two latest cuts (a reader may still be
        reading the one before); of a raw table, each group's latest tail start, where the next run's
        scan starts ('None' for the start of the log, which keeps every raw snapshot).
    -#}
    {% set cuts = cdc_merge.cuts_relation(offsets) %}
    {% if adapter.get_relation(database=cuts.database, schema=cuts.schema, identifier=cuts.identifier) is none %}
        {{ return([]) }}
    {% endif %}
    {% if target_relation is not none %}
        {% set rows = run_query("select mirror_snapshot as snapshot_id from " ~ cuts ~ " as cut where target_table = '"
            ~ cdc_merge.mirror_name(target_relation) ~ "' and cut_ordinal >= (select max(cut_ordinal) - 1 from " ~ cuts
            ~ " where consistency_group = cut.consistency_group)").rows %}
    {% else %}
        {% set rows = run_query("select coalesce(tail_start, 'None') as snapshot_id from " ~ cuts ~ " as cut where raw_table = '"
            ~ raw_relation ~ "' and cut_ordinal = (select max(cut_ordinal) from " ~ cuts
            ~ " where consistency_group = cut.consistency_group)").rows %}
    {% endif %}
    {{ return(rows | map(attribute='snapshot_id') | map('string') | unique | list) }}
{% endmacro %}
