{#
    Source columns a mirror does not read: the fields of recent row images that the model neither
    selects as a column nor names anywhere in its code (cdc_columns() names each field it reads, and
    json_fields the renamed ones). The run warns about them; the data test cdc_unmapped_columns
    fails on them. A source column the model leaves out on purpose goes in the test's `ignored`.
#}

{% macro mapped_names(model_code, columns) %}
    {#- Lowercased column names and every quoted literal of the model's code: a superset of the fields it reads. -#}
    {% set names = columns | map('lower') | list %}
    {% for literal in modules.re.findall("'([^']*)'|\"([^\"]*)\"", model_code) %}
        {% do names.append((literal[0] or literal[1]) | lower) %}
    {% endfor %}
    {{ return(names | unique | list) }}
{% endmacro %}


{% macro image_fields_sql(images_sql, column) %}
    {#- The distinct member names of the JSON objects in column of images_sql, as `field`. -#}
    {{ return(adapter.dispatch('image_fields_sql', 'cdc_merge')(images_sql, column)) }}
{% endmacro %}

{% macro spark__image_fields_sql(images_sql, column) %}
    select distinct explode(json_object_keys({{ column }})) as field
    from ({{ images_sql }}) as images
{% endmacro %}

{% macro databend__image_fields_sql(images_sql, column) %}
    select distinct member.key as field
    from ({{ images_sql }}) as images, json_each(images.{{ column }}) as member
{% endmacro %}


{% macro recent_images_sql(relation, source_table, limit) %}
    select raw_data
    from {{ relation }}
    where
        table_name = '{{ source_table }}'
        and action in ('insert', 'update', 'read')
        and raw_data is not null
    limit {{ limit }}
{% endmacro %}


{% macro unmapped_columns(changes_view, cfg, model_columns, fields=none) %}
    {#-
        The fields of up to 100 of the chunk's row images the model does not read (a cheap sample: no
        sort); fields: those of every image of the chunk, where one pass over the range found them.
    -#}
    {% set mapped = cdc_merge.mapped_names(model.raw_code, model_columns) %}
    {% if fields is none %}
        {% set fields = run_query(cdc_merge.image_fields_sql(cdc_merge.recent_images_sql(changes_view, cfg.source_table, 100), 'raw_data')).rows | map(attribute='field') | list %}
    {% endif %}
    {% set unmapped = [] %}
    {% for field in fields %}
        {% if field is not none and (field | lower) not in mapped %}
            {% do unmapped.append(field) %}
        {% endif %}
    {% endfor %}
    {{ return(unmapped | sort) }}
{% endmacro %}
