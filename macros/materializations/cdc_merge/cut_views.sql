{#
    Views at the cut: <mirror>_at_cut reads a consistency group's mirror at the group's latest cut,
    looked up by the reading query itself. Each view carries the previous and the new cut's
    snapshot as two branches, and a branch is read only when the group's latest cut in
    cdc_merge_cuts is its own: every view of a query reads cdc_merge_cuts at one snapshot (Databend
    reads a table once per query), so two views of one query never read different cuts. The views
    are replaced before the cut's INSERT, so until it readers stay on the previous cut, which old
    and new views both carry. docs/consistent_cuts.md, "Views at the cut".
#}

{% macro replace_cut_views(cuts, group, ordinal, cut) %}
    {{ return(adapter.dispatch('replace_cut_views', 'cdc_merge')(cuts, group, ordinal, cut)) }}
{% endmacro %}

{% macro spark__replace_cut_views(cuts, group, ordinal, cut) %}
    {#-
        None: the embedded target's catalogs keep no view another session sees (Iceberg's Hadoop
        catalog has none, the session catalog lives in memory), and on the cluster the group's
        mirrors themselves hold the cut (their catalog transaction).
    -#}
    {{ return(none) }}
{% endmacro %}

{% macro databend__replace_cut_views(cuts, group, ordinal, cut) %}
    {% set previous = {} %}
    {% for row in run_query("select target_table, mirror_snapshot from " ~ cuts ~ " where consistency_group = '"
        ~ group ~ "' and cut_ordinal = " ~ (ordinal - 1)).rows %}
        {% do previous.update({row['target_table']: row['mirror_snapshot']}) %}
    {% endfor %}
    {% for mirror, snapshot in cut.items() %}
        {#- A mirror made again (--full-refresh) has not the previous cut's snapshot: its view reads the new cut only. -#}
        {% set kept = previous.get(mirror) if cdc_merge.databend_has_snapshot(mirror, previous.get(mirror)) else none %}
        {% set branches = [(ordinal - 1, kept), (ordinal, snapshot)] %}
        {% do run_query(cdc_merge.cut_view_sql(cuts, group, mirror, branches, cdc_merge.cut_branch_columns(mirror, branches))) %}
    {% endfor %}
{% endmacro %}

{% macro cut_branch_columns(mirror, branches) %}
    {#- {ordinal: the mirror's columns at that cut's snapshot}: a column added, dropped or renamed between the two cuts is in one branch only. -#}
    {% set columns = {} %}
    {% for ordinal, snapshot in branches if snapshot is not none %}
        {% do columns.update({ordinal: run_query('select * from ' ~ cdc_merge.relation_at_snapshot_sql(mirror, snapshot)
            ~ ' limit 0').column_names | list}) %}
    {% endfor %}
    {{ return(columns) }}
{% endmacro %}

{% macro databend_has_snapshot(table, snapshot_id) %}
    {% if snapshot_id is none %}
        {{ return(false) }}
    {% endif %}
    {% set schema, name = (table | string).split('.')[-2:] %}
    {{ return(run_query("select count(*) as found from fuse_snapshot('" ~ schema ~ "', '" ~ name
        ~ "') where snapshot_id = '" ~ snapshot_id ~ "'").rows[0]['found'] | int > 0) }}
{% endmacro %}


{% macro cut_view_sql(cuts, group, mirror, branches, columns) %}
    {#-
        A semi join: Databend made `exists` and a scalar subquery a cross join, 50-60x slower here.
        Each branch selects the new cut's columns (columns: cut_branch_columns), null for one its
        snapshot has not: a union of two snapshots of other columns was refused, and every later cut of
        the group with it.
    #}
    {% set names = columns[branches[-1][0]] %}
    create or replace view {{ mirror }}_at_cut as
    {% for ordinal, snapshot in branches if snapshot is not none %}
    select
        {% for name in names -%}
        {{ adapter.quote(name) if name in columns[ordinal] else 'null as ' ~ adapter.quote(name) }}{{ ',' if not loop.last }}
        {% endfor %}
    from {{ cdc_merge.relation_at_snapshot_sql(mirror, snapshot) }}
    where {{ ordinal }} in (select max(cut_ordinal) from {{ cuts }} where consistency_group = '{{ group }}')
    {{ 'union all' if not loop.last }}
    {% endfor %}
{% endmacro %}
