{#
    cdc-verify --repair (python_jobs/verify/cli.py), before it asks the capture to read keys again: the
    rows of keys a mirror holds more than once, deleted. Written into the mirror by hand (a backfill, a
    patch): each of its runs fails on such a key, and a page read again would update every copy alike.
    Once deleted, the key is missing until its page is applied, which brings back the source's row.
#}

{% macro cdc_delete_repeated_keys(mirrors) %}
    {#- mirrors: {"schema.mirror": [canonical keys, the mirror's _cdc_key]}. Mirrors only: a history keeps
        many versions of a key, which are not copies. Each with the mirror locked against its runs (run_guard.sql). -#}
    {% if not execute %}
        {{ return(none) }}
    {% endif %}
    {% for node in graph.nodes.values() if node.resource_type == 'model' and node.config.materialized == 'cdc_merge' %}
        {% set relation = api.Relation.create(database=node.database, schema=node.schema, identifier=node.alias, type='table') %}
        {% set keys = mirrors.get(node.schema ~ '.' ~ node.alias) %}
        {% if keys %}
            {% do cdc_merge.lock_mirror(relation) %}
            {% set literals = [] %}
            {% for key in keys %}
                {% do literals.append(cdc_merge.string_literal(key)) %}
            {% endfor %}
            {% do run_query('delete from ' ~ relation ~ ' where _cdc_key in (' ~ literals | join(', ') ~ ')') %}
            {% do cdc_merge.unlock_mirror(relation) %}
            {{ log("cdc_verify " ~ relation ~ ": deleted the rows of " ~ keys | length ~ " keys it held more than once: "
                ~ keys[:10] | join(', ') ~ "; they are read again from the source", info=True) }}
        {% endif %}
    {% endfor %}
{% endmacro %}
