{#
    One catalog transaction per consistency group and run, on a catalog that has them (the
    cluster's CdcMergeJdbcCatalog, jvm/iceberg/): the group's mirrors join it at their start, and
    the cut publishes it (finish_group_member, consistency.sql); where no cut does, the invocation
    publishes it at its end (consistency_methods.py). docs/consistent_cuts.md.
#}

{% macro join_catalog_transaction(cfg, target_relation, tombstones, offsets, existing_relation) %}
    {#-
        On a catalog with transactions (the cluster's JDBC catalog) a group mirror's commits, its
        offsets' too, wait for the cut, which publishes them all at once. Its maintenance runs
        first, outside the transaction: it deletes the files of what it replaces and expires,
        which the published state, all that other sessions read until the publish, may still name.
    -#}
    {% if cfg.consistency_group is none or not adapter.cdc_catalog_has_transactions() %}
        {{ return({'joined': false, 'maintained': none}) }}
    {% endif %}
    {% set maintained = cdc_merge.maintain_after_run(target_relation, tombstones, offsets, cfg) if existing_relation is not none else none %}
    {% do adapter.cdc_join_catalog_transaction(invocation_id, cfg.consistency_group) %}
    {{ return({'joined': true, 'maintained': maintained}) }}
{% endmacro %}
