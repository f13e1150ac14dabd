{#
    One catalog transaction per consistency group and run, on a catalog that has them (the
    cluster's CdcMergeJdbcCatalog, jvm/iceberg/): the group's mirrors join it at their start, and
    the cut publishes it (finish_group_member, consistency.sql); where no cut does, the invocation
    publishes it at its end (consistency_methods.py). docs/consistent_cuts.md.
#}

{% macro join_catalog_transaction(run, cfg, target_relation, tombstones, offsets, existing_relation) %}
    {#-
        On a catalog with transactions (the cluster's JDBC catalog) a group mirror's commits, its
        offsets' too, wait for the cut, which publishes them all at once. Its maintenance runs
        first, outside the transaction: it deletes the files of what it replaces and expires,
        which the published state, all that other sessions read until the publish, may still name.
        A rebuild aside joins only before its swap (join_catalog_transaction_for_swap).
    -#}
    {% if run.join_transaction != 'start' %}
        {{ return({'joined': false, 'maintained': none}) }}
    {% endif %}
    {% set maintained = cdc_merge.maintain_after_run(target_relation, tombstones, offsets, cfg) if existing_relation is not none else none %}
    {% do adapter.cdc_join_catalog_transaction(invocation_id, cfg.consistency_group) %}
    {{ return({'joined': true, 'maintained': maintained}) }}
{% endmacro %}


{% macro join_catalog_transaction_for_swap(transaction, cfg, replaced) %}
    {#-
        A group mirror's rebuild, built aside outside the transaction, joins it before it takes the
        mirror's place: replacing a table is a commit the transaction stages, so readers see the old
        mirror until the cut publishes the rebuilt one with the group's other mirrors. Creating a
        table is not: replaced, [(relation, source)], has each relation the swap replaces made
        first where it is missing, empty, so that the swap's rows wait for the cut too.
    -#}
    {% for relation, source in replaced if load_relation(relation) is none %}
        {% do run_query(cdc_merge.create_empty_like_sql(relation, source)) %}
        {% do adapter.cache_added(relation) %}
    {% endfor %}
    {% do adapter.cdc_join_catalog_transaction(invocation_id, cfg.consistency_group) %}
    {% do transaction.update({'joined': true}) %}
{% endmacro %}


{% macro create_empty_like_sql(relation, source) %}
    {{ return(adapter.dispatch('create_empty_like_sql', 'cdc_merge')(relation, source)) }}
{% endmacro %}

{% macro spark__create_empty_like_sql(relation, source) %}
    create table {{ relation }} using iceberg as select * from {{ source }} limit 0
{% endmacro %}

{% macro databend__create_empty_like_sql(relation, source) %}
    create table {{ relation }} as select * from {{ source }} limit 0
{% endmacro %}
