{#
    Time-range change query over the raw log (after Apache Phoenix's CDC design, PHOENIX-7001).
    (Why over 300 lines: its argument checks and the Spark and Databend queries side by side.)

        select * from ({{ cdc_merge.cdc_changes('shop.customers', '2026-01-01 00:00:00', '2026-01-01 01:00:00',
                                                  mirror=ref('shop_customers')) }}) as changes

    One row per change of source_table whose source commit time is in [from_ts, to_ts), in
    source order (seq), a replayed copy of an event counted once: change_ts, operation
    (insert, update, delete, read), _cdc_key, _cdc_seq, and the images asked for:
        pre_image     the row before the change: the event's before image when the source sent
                      one, else the after image of the key's previous event in the log (null
                      when there is none, or it was a delete)
        post_image    the row after it (null for a delete)
        change_image  the columns whose value the change set: post image fields that differ
                      from the pre image's (all of them when there is no pre image; null for a
                      delete). Spark: map<string, string> of JSON values; Databend: a VARIANT object.
        latest_image  the row as the mirror holds it now, as JSON (null when deleted); needs mirror
    Images are JSON as the source sent it (Spark: text; Databend: VARIANT). keys: a list of key
    values (a list per key for composite keys) to keep only those keys. images defaults to
    all four, 'latest' only when mirror is given. raw: the raw table
    (default ref('raw_events')). A range that starts before what a trimmed raw log still holds
    fails (materializations/cdc_history/retention.sql).
#}

{% macro cdc_changes(source_table, from_ts, to_ts=none, keys=none, images=none, mirror=none, raw=none) %}
    {% set images = images if images is not none else (['pre', 'post', 'change'] + (['latest'] if mirror is not none else [])) %}
    {% set raw = raw if raw is not none else ref('raw_events') %}
    {% set cfg = cdc_merge.cdc_changes_validated(source_table, from_ts, to_ts, keys, images, mirror) %}
    {% set mirror_columns = [] %}
    {#- dbt run --empty renders ref() as a subquery of no rows: the rows are read from it, the tables' metadata from the tables. -#}
    {% set raw_table = raw.incorporate(limit=none) if raw.limit is defined and raw.limit is not none else raw %}
    {% set mirror_table = mirror.incorporate(limit=none) if mirror is not none and mirror.limit is defined and mirror.limit is not none else mirror %}
    {#- A raw table not created yet (a fresh project being compiled or linted) holds nothing to check. -#}
    {% if execute and adapter.get_relation(database=raw.database, schema=raw.schema, identifier=raw.identifier) is not none %}
        {% do cdc_merge.check_range_is_retained(raw_table, source_table, from_ts) %}
        {% if 'latest' in images %}
            {% for column in adapter.get_columns_in_relation(mirror_table) %}
                {% if column.name | lower == '_cdc_deleted' %}
                    {% do mirror_columns.append({'name': column.name, 'soft_deletes': true}) %}
                {% elif not column.name.startswith('_cdc_') %}
                    {% do mirror_columns.append({'name': column.name, 'exact_text': 'decimal' in (column.dtype | lower)}) %}
                {% endif %}
            {% endfor %}
        {% endif %}
    {% endif %}
    {{ return(adapter.dispatch('cdc_changes_sql', 'cdc_merge')(raw, source_table, from_ts, to_ts, cfg.key_texts, images, mirror, mirror_columns)) }}
{% endmacro %}


{% macro cdc_changes_validated(source_table, from_ts, to_ts, keys, images, mirror) %}
    {% set fail_prefix = "cdc_changes() in " ~ model.name ~ ": " %}
    {% if source_table is not string or not modules.re.match('^[A-Za-z_][A-Za-z0-9_$]*\.[A-Za-z_][A-Za-z0-9_$]*$', source_table) %}
        {% do exceptions.raise_compiler_error(fail_prefix ~ "source_table must be the schema-qualified source table, e.g. 'shop.customers' (got " ~ source_table ~ ").") %}
    {% endif %}
    {% set bounds = [] %}
    {% for name, value in [('from_ts', from_ts), ('to_ts', to_ts)] %}
        {% if value is not none %}
            {% set parsed = none %}
            {% if value is string and modules.re.match('^[0-9]{4}-[0-9]{2}-[0-9]{2}([ T][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,6})?)?)?$', value) %}
                {% set parsed = modules.datetime.datetime.fromisoformat(value) %}
            {% endif %}
            {% if parsed is none %}
                {% do exceptions.raise_compiler_error(fail_prefix ~ name ~ " must be a UTC time as 'YYYY-MM-DD HH:MM:SS', got " ~ value ~ ".") %}
            {% endif %}
            {% do bounds.append(parsed) %}
        {% elif name == 'from_ts' %}
            {% do exceptions.raise_compiler_error(fail_prefix ~ "from_ts is required: the range is [from_ts, to_ts) of source commit times.") %}
        {% endif %}
    {% endfor %}
    {% if bounds | length == 2 and bounds[0] >= bounds[1] %}
        {% do exceptions.raise_compiler_error(fail_prefix ~ "from_ts " ~ from_ts ~ " is not before to_ts " ~ to_ts ~ ": the range [from_ts, to_ts) is empty.") %}
    {% endif %}
    {% set unknown = images | reject('in', ['pre', 'post', 'change', 'latest']) | list if images is sequence and images is not string else [images] %}
    {% if unknown %}
        {% do exceptions.raise_compiler_error(fail_prefix ~ "images must be a list of 'pre', 'post', 'change', 'latest'; " ~ unknown | join(', ') ~ " is not one.") %}
    {% endif %}
    {% if 'latest' in images and mirror is none %}
        {% do exceptions.raise_compiler_error(fail_prefix ~ "the latest image is read from the mirror: pass mirror=ref('<mirror model>'), or leave 'latest' out of images.") %}
    {% endif %}
    {% set key_texts = none %}
    {% if keys is not none %}
        {% if keys is string or keys is not sequence or keys | length == 0 %}
            {% do exceptions.raise_compiler_error(fail_prefix ~ "keys must be a non-empty list of key values, a list of values per key for a composite key, e.g. keys=[1001, 1002] or keys=[[7, 'ACME']].") %}
        {% endif %}
        {% set key_texts = [] %}
        {% for key in keys %}
            {% set values = key if (key is sequence and key is not string) else [key] %}
            {#- The raw log's canonical key: a JSON array of the values' source text. -#}
            {% set quoted = [] %}
            {% for value in values %}
                {% do quoted.append('"' ~ (value | string).replace('\\', '\\\\').replace('"', '\\"') ~ '"') %}
            {% endfor %}
            {% do key_texts.append('[' ~ quoted | join(',') ~ ']') %}
        {% endfor %}
    {% endif %}
    {{ return({'key_texts': key_texts}) }}
{% endmacro %}


{% macro check_range_is_retained(raw, source_table, from_ts) %}
    {% set horizon = cdc_merge.raw_log_horizon(raw, source_table) %}
    {% if horizon is not none %}
        {% set start = modules.datetime.datetime.fromisoformat(from_ts) %}
        {% set oldest = modules.datetime.datetime.fromisoformat(horizon.oldest[:26]) if horizon.oldest else none %}
        {% if oldest is none or start < oldest %}
            {% do exceptions.raise_compiler_error(
                "cdc_changes() in " ~ model.name ~ ": " ~ raw ~ " was trimmed by retention and holds events of " ~ source_table
                ~ " only since " ~ (horizon.oldest or 'none at all') ~ "; the range from " ~ from_ts ~ " would miss the changes"
                ~ " that were deleted. Ask for a range that starts at or after " ~ (horizon.oldest or 'the next event') ~ ".") %}
        {% endif %}
    {% endif %}
{% endmacro %}


{% macro cdc_changes_literal(value) -%}
    cast('{{ value }}' as timestamp)
{%- endmacro %}


{% macro changes_range_filter(source_table, from_ts, to_ts, keys, alias=none) -%}
    {%- set prefix = alias ~ '.' if alias else '' -%}
    {{ prefix }}table_name = '{{ source_table }}'
    and {{ prefix }}source_ts >= {{ cdc_merge.cdc_changes_literal(from_ts) }}
    {%- if to_ts is not none %}
    and {{ prefix }}source_ts < {{ cdc_merge.cdc_changes_literal(to_ts) }}
    {%- endif %}
    {%- if keys is not none %}
    and {{ prefix }}key in ({% for key in keys %}{{ cdc_merge.string_literal(key) }}{{ ', ' if not loop.last }}{% endfor %})
    {%- endif %}
{%- endmacro %}


{% macro changes_range_ctes(raw, source_table, from_ts, to_ts, keys, images) %}
    {#- The range's events, one per (key, seq), and for the pre image every event of their keys. -#}
    changes_range as (
        select *
        from (
            select
                key,
                seq,
                action,
                raw_data,
                before_data,
                source_ts,
                row_number() over (partition by key, seq order by landed_file desc, landed_line desc) as _cdc_copy
            from {{ raw }}
            where {{ cdc_merge.changes_range_filter(source_table, from_ts, to_ts, keys) }}
        ) as copies
        where _cdc_copy = 1
    ),

    {%- set rebuilds_pre = 'pre' in images or 'change' in images %}
    {%- if rebuilds_pre %}
    changes_previous as (
        select
            key,
            seq,
            lag(case when action = 'delete' then null else raw_data end) over (partition by key order by seq) as previous_image
        from (
            select
                key,
                seq,
                action,
                raw_data,
                row_number() over (partition by key, seq order by landed_file desc, landed_line desc) as _cdc_copy
            from {{ raw }}
            {#- A join, not key in (subquery): Databend 1.2.453 panics decorrelating one next to json_each. #}
            join (select distinct key as range_key from changes_range) as range_keys
                on key = range_keys.range_key
            where table_name = '{{ source_table }}'
        ) as copies
        where _cdc_copy = 1
    ),
    {%- endif %}

    changes_events as (
        select
            changes_range.*,
            {%- if rebuilds_pre %}
            coalesce(changes_range.before_data, changes_previous.previous_image) as pre_image,
            {%- else %}
            changes_range.before_data as pre_image,
            {%- endif %}
            case when changes_range.action = 'delete' then null else changes_range.raw_data end as post_image
        from changes_range
        {%- if rebuilds_pre %}
        left join changes_previous
            on changes_range.key = changes_previous.key and changes_range.seq = changes_previous.seq
        {%- endif %}
    )
{%- endmacro %}


{% macro spark__cdc_changes_sql(raw, source_table, from_ts, to_ts, keys, images, mirror, mirror_columns) %}
    with

    {{ cdc_merge.changes_range_ctes(raw, source_table, from_ts, to_ts, keys, images) }},

    changes_final as (
        select
            changes_events.source_ts as change_ts,
            changes_events.action as operation,
            changes_events.key as _cdc_key,
            changes_events.seq as _cdc_seq
            {%- if 'pre' in images %},
            changes_events.pre_image
            {%- endif %}
            {%- if 'post' in images %},
            changes_events.post_image
            {%- endif %}
            {%- if 'change' in images %},
            {#- A Postgres TOAST value the update left unchanged (its placeholder) is not one it set. #}
            case
                when changes_events.post_image is null then cast(null as map<string, string>)
                when changes_events.pre_image is null then map_filter(
                    {{ cdc_merge.spark_exact_json_map('changes_events.post_image') }},
                    (name, value) -> not (value <=> '{{ cdc_merge.unavailable_marker() }}')
                )
                else map_filter(
                    {{ cdc_merge.spark_exact_json_map('changes_events.post_image') }},
                    (name, value) -> not (value <=> {{ cdc_merge.spark_exact_json_map('changes_events.pre_image') }}[name])
                        and not (value <=> '{{ cdc_merge.unavailable_marker() }}')
                )
            end as change_image
            {%- endif %}
            {%- if 'latest' in images %},
            case
                when mirror._cdc_key is null then cast(null as string)
                else to_json(named_struct(
                    {%- for column in mirror_columns if column.soft_deletes is not defined %}
                    '{{ column.name }}', mirror.{{ column.name }}{{ ',' if not loop.last }}
                    {%- endfor %}
                ))
            end as latest_image
            {%- endif %}
        from changes_events
        {%- if 'latest' in images %}
        left join (
            select *
            from {{ mirror }}
            {%- if mirror_columns | selectattr('soft_deletes', 'defined') | list %}
            where not _cdc_deleted
            {%- endif %}
        ) as mirror
            on changes_events.key = mirror._cdc_key
        {%- endif %}
    )

    select * from changes_final
    order by _cdc_seq, _cdc_key
{% endmacro %}


{% macro spark_exact_json_map(image) -%}
    {#-
        A JSON object as map<string, string> of each field's JSON text. from_json alone renders a
        fractional number through a double (972148868047250.95 -> 9.72148868047251E14): such
        values are cut out of the text instead, at their field's name (an unescaped quote is
        never inside a JSON string, so the name cannot match inside a value); a string that looks
        like a number finds no number after its name and is kept.
    -#}
    transform_values(
        from_json({{ image }}, 'map<string, string>'),
        (name, value) -> case
            when value rlike '^-?[0-9]+[.eE]'
                then coalesce(nullif(regexp_extract({{ image }}, concat('(?<!\\\\)"\\Q', name, '\\E"\\s*:\\s*(-?[0-9][0-9.eE+-]*)'), 1), ''), value)
            else value
        end
    )
{%- endmacro %}


{% macro databend__cdc_changes_sql(raw, source_table, from_ts, to_ts, keys, images, mirror, mirror_columns) %}
    {#- No map_filter or JSON object aggregate here: the change image is put together as JSON text from json_each. -#}
    with

    {{ cdc_merge.changes_range_ctes(raw, source_table, from_ts, to_ts, keys, images) }}

    {%- if 'change' in images %},

    {#-
        json_each reads the raw table itself: over the CTEs above (windows) Databend 1.2.453 panics
        planning it. Copies of one event give the same fields: kept once. dbt run --empty renders
        ref() as a subquery with an alias of its own: wrapped in one more, it takes the alias landed.
    #}
    {%- set landed = '(select * from ' ~ raw ~ ')' if raw.limit is defined and raw.limit is not none else raw %}
    changes_post_fields as (
        select
            landed.key,
            landed.seq,
            field.key as name,
            any(field.value) as value
        from {{ landed }} as landed, json_each(landed.raw_data) as field
        where
            {{ cdc_merge.changes_range_filter(source_table, from_ts, to_ts, keys, 'landed') }}
            and landed.action != 'delete'
        group by landed.key, landed.seq, field.key
    ),

    changes_fields as (
        select
            changes_events.key,
            changes_events.seq,
            field.name,
            field.value,
            {#- A JSON null and a missing field are alike: both no value, as on Spark. #}
            changes_events.pre_image is null as no_pre_image,
            case when is_null_value(field.value) then null else field.value end as compared_value,
            case when is_null_value(get(changes_events.pre_image, field.name)) then null
                else get(changes_events.pre_image, field.name) end as previous_value
        from changes_post_fields as field
        join changes_events
            on field.key = changes_events.key and field.seq = changes_events.seq
    ),

    changes_changed as (
        select
            key,
            seq,
            parse_json('{' || string_agg(
                substr(to_string(json_object_keep_null(name, value)), 2, (length(to_string(json_object_keep_null(name, value))) - 2)::uint64), ','
            ) || '}') as change_image
        from changes_fields
        where
            (no_pre_image or compared_value is distinct from previous_value)
            {#- A Postgres TOAST value the update left unchanged (its placeholder) is not one it set. #}
            and not coalesce(compared_value::string = '{{ cdc_merge.unavailable_marker() }}', false)
        group by key, seq
    )
    {%- endif %},

    changes_final as (
        select
            changes_events.source_ts as change_ts,
            changes_events.action as operation,
            changes_events.key as _cdc_key,
            changes_events.seq as _cdc_seq
            {%- if 'pre' in images %},
            changes_events.pre_image
            {%- endif %}
            {%- if 'post' in images %},
            changes_events.post_image
            {%- endif %}
            {%- if 'change' in images %},
            case
                when changes_events.post_image is null then null
                else coalesce(changes_changed.change_image, parse_json('{}'))
            end as change_image
            {%- endif %}
            {%- if 'latest' in images %},
            case
                when mirror._cdc_key is null then null
                {#- A decimal would become a JSON float: as text, like the raw log's fractional numbers on Databend. #}
                else json_object_keep_null(
                    {%- for column in mirror_columns if column.soft_deletes is not defined %}
                    '{{ column.name }}', mirror.{{ column.name }}{{ '::string' if column.exact_text }}{{ ',' if not loop.last }}
                    {%- endfor %}
                )
            end as latest_image
            {%- endif %}
        from changes_events
        {%- if 'change' in images %}
        left join changes_changed
            on changes_events.key = changes_changed.key and changes_events.seq = changes_changed.seq
        {%- endif %}
        {%- if 'latest' in images %}
        left join (
            select *
            from {{ mirror }}
            {%- if mirror_columns | selectattr('soft_deletes', 'defined') | list %}
            where not _cdc_deleted
            {%- endif %}
        ) as mirror
            on changes_events.key = mirror._cdc_key
        {%- endif %}
    )

    select * from changes_final
    order by _cdc_seq, _cdc_key
{% endmacro %}
