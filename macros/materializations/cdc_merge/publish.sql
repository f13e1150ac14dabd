{#
    A batch's writes to the mirror made visible in one commit: begin_mirror_writes gives the
    relation its statements write to (on Spark a branch of the Iceberg mirror),
    publish_mirror_writes makes them the mirror's, discard_mirror_writes drops an unused branch.
    A small batch skips all of this: write.sql's write_one_commit commits it to main at once.
#}

{% macro mirror_branch() %}
    {{- return('cdc_merge_batch') -}}
{% endmacro %}

{% macro begin_mirror_writes(target_relation, as_of_snapshot=none) %}
    {#- Where a batch's two mirror statements write: returns the relation to name in them. as_of_snapshot: from that snapshot, not the current one. -#}
    {{ return(adapter.dispatch('begin_mirror_writes', 'cdc_merge')(target_relation, as_of_snapshot)) }}
{% endmacro %}

{% macro spark__begin_mirror_writes(target_relation, as_of_snapshot) %}
    {#- A branch left by a run that died before publishing it holds nothing anyone reads. -#}
    {% do run_query('alter table ' ~ target_relation ~ ' drop branch if exists ' ~ cdc_merge.mirror_branch()) %}
    {% do run_query('alter table ' ~ target_relation ~ ' create branch ' ~ cdc_merge.mirror_branch()
        ~ (' as of version ' ~ as_of_snapshot if as_of_snapshot is not none else '')) %}
    {{ return(target_relation ~ '.branch_' ~ cdc_merge.mirror_branch()) }}
{% endmacro %}

{% macro databend__begin_mirror_writes(target_relation, as_of_snapshot) %}
    {{ return(target_relation) }}
{% endmacro %}


{% macro relation_at_snapshot(target_relation, snapshot_id) %}
    {#- The mirror as one of its snapshots holds it, to read (Iceberg time travel). -#}
    {{ return(target_relation ~ ' version as of ' ~ snapshot_id) }}
{% endmacro %}


{% macro publish_mirror_writes(target_relation) %}
    {{ return(adapter.dispatch('publish_mirror_writes', 'cdc_merge')(target_relation)) }}
{% endmacro %}

{% macro spark__publish_mirror_writes(target_relation) %}
    {#- Fails, rather than losing a write, if another writer moved main since the branch was made. -#}
    {% do cdc_merge.crash_point('apply-before-publish') %}
    {% do run_query("call system.fast_forward('" ~ target_relation.schema ~ "." ~ target_relation.identifier
        ~ "', 'main', '" ~ cdc_merge.mirror_branch() ~ "')") %}
    {% do run_query('alter table ' ~ target_relation ~ ' drop branch ' ~ cdc_merge.mirror_branch()) %}
{% endmacro %}

{% macro databend__publish_mirror_writes(target_relation) %}
{% endmacro %}


{% macro discard_mirror_writes(target_relation) %}
    {#- A batch that wrote nothing to the branch begin_mirror_writes made. -#}
    {{ return(adapter.dispatch('discard_mirror_writes', 'cdc_merge')(target_relation)) }}
{% endmacro %}

{% macro spark__discard_mirror_writes(target_relation) %}
    {% do run_query('alter table ' ~ target_relation ~ ' drop branch if exists ' ~ cdc_merge.mirror_branch()) %}
{% endmacro %}

{% macro databend__discard_mirror_writes(target_relation) %}
{% endmacro %}
