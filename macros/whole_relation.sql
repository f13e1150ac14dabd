{#
    The table a relation names, without the `where false limit 0` that `dbt build --empty` gives
    every ref of a data test: the cdc tests describe the mirror, read its offset and read the raw
    log at a snapshot, which a subquery cannot be (PARSE_SYNTAX_ERROR at its parenthesis).
#}
{% macro whole_relation(relation) %}
    {%- if relation is not none and relation.limit is defined and relation.limit is not none %}
        {{ return(relation.incorporate(limit=none)) }}
    {%- endif %}
    {{ return(relation) }}
{% endmacro %}
