{#
    Helpers for the SELECT of a cdc_merge model:

        select
            {{ cdc_merge.cdc_columns({'id': 'int', 'name': 'string'}) }},
            {{ cdc_merge.cdc_metadata_columns() }}
        from {{ cdc_merge.cdc_events(ref('raw_events')) }}

    cdc_columns() gives each column as cdc_column() would, but on Spark it parses the row
    once for all of them; cdc_column() parses it once per column.
#}

{% macro cdc_events(raw_relation) %}
    {#
        The deduplicated batch the materialization prepares before it runs the model:
        one row per key with _cdc_key, _cdc_action, _cdc_seq, _cdc_source_ts,
        _cdc_row (the after image, or the before image for a delete) and _cdc_unavailable
        (columns whose value the source did not send, e.g. unchanged Postgres TOAST values). Passing the raw
        relation puts it in the lineage graph. Outside a cdc_merge run (dbt show, dbt compile)
        it is a query over the events not applied yet: preview.sql.
    #}
    {{ return(cdc_merge.cdc_events_relation(raw_relation)) }}
{% endmacro %}


{% macro batch_view_name(model_name) %}
    {{ return(model_name ~ '__cdc_batch') }}
{% endmacro %}


{% macro cdc_metadata_columns() %}
    {#-
        _cdc_unavailable names JSON fields; a column the model reads from a field of another name
        (cdc_columns' json_fields, cdc_column's json_field) is named by the model's name, which the
        mirror keeps a value by: renamed_json_fields, noted when the model's columns rendered.
    -#}
    {%- set renamed = cdc_merge.renamed_json_fields() -%}
    {%- if model is mapping -%}
        {%- do model.update({'cdc_merge_metadata_rendered': true}) -%}
        {#- For the materialization's added columns (column_defaults.sql), which cannot render the model's columns again. -#}
        {%- if execute and adapter.cdc_note_renamed_fields is defined -%}
            {%- do adapter.cdc_note_renamed_fields(model.unique_id, renamed) -%}
        {%- endif -%}
    {%- endif %}
    _cdc_key,
    _cdc_action,
    _cdc_seq,
    _cdc_source_ts,
    {% if renamed -%}
    {{ adapter.dispatch('unavailable_renamed_sql', 'cdc_merge')('_cdc_unavailable', renamed) }} as _cdc_unavailable
    {%- else -%}
    _cdc_unavailable
    {%- endif %}
{% endmacro %}


{% macro note_json_fields(names, fields) %}
    {#- The model's columns (names) read from JSON fields of other names (fields), for its cdc_metadata_columns(). -#}
    {%- set renamed = {} -%}
    {%- for name in names -%}
        {%- if fields[loop.index0] != name -%}
            {%- do renamed.update({name: fields[loop.index0]}) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if renamed and model is mapping -%}
        {%- if execute and model.get('cdc_merge_metadata_rendered') -%}
            {%- do exceptions.raise_compiler_error(
                "Model '" ~ model.name ~ "' selects cdc_metadata_columns() before the columns it reads from JSON fields of"
                ~ " other names (" ~ renamed | join(', ') ~ "): select them first, so that an unchanged TOAST value"
                ~ " of theirs keeps the mirror's value.") -%}
        {%- endif -%}
        {%- do model.setdefault('cdc_merge_json_fields', {}).update(renamed) -%}
    {%- endif -%}
{% endmacro %}


{% macro renamed_json_fields() %}
    {{ return(model.get('cdc_merge_json_fields', {}) if model is mapping else {}) }}
{% endmacro %}


{% macro spark__unavailable_renamed_sql(column, renamed) -%}
    transform({{ column }}, field -> case field
        {%- for name, field in renamed.items() %} when {{ cdc_merge.string_literal(field) }} then {{ cdc_merge.string_literal(name) }}{% endfor %}
        else field end)
{%- endmacro %}

{% macro databend__unavailable_renamed_sql(column, renamed) -%}
    {#- ',a,b,' text: each field's name replaced, marked by char(1) until all are, so that no name is replaced twice. -#}
    {%- set mark = "cast(char(1) as string)" -%}
    {%- set replaced = namespace(sql=column) -%}
    {%- for name, field in renamed.items() -%}
        {%- set replaced.sql = "replace(" ~ replaced.sql ~ ", " ~ cdc_merge.string_literal(',' ~ field ~ ',') ~ ", ',' || " ~ mark ~ " || " ~ cdc_merge.string_literal(name ~ ',') ~ ")" -%}
    {%- endfor -%}
    replace({{ replaced.sql }}, {{ mark }}, '')
{%- endmacro %}


{% macro cdc_column(name, data_type, json_field=none) %}
    {% do cdc_merge.check_declared_types({name: data_type}) %}
    {% do cdc_merge.note_json_fields([name], [json_field or name]) %}
    {{ return(adapter.dispatch('cdc_column', 'cdc_merge')(name, data_type, json_field or name)) }}
{% endmacro %}

{% macro spark__cdc_column(name, data_type, json_field) %}
    {{ cdc_merge.spark__cdc_value('_cdc_row', json_field, data_type) }} as {{ name }}
{%- endmacro %}

{% macro cdc_value(row, json_field, data_type) %}
    {#- json_field of a row image (row: a string column or literal on Spark, a VARIANT on Databend) as data_type. -#}
    {{ return(adapter.dispatch('cdc_value', 'cdc_merge')(row, json_field, data_type)) }}
{% endmacro %}

{% macro spark__cdc_value(row, json_field, data_type) %}
    {#- from_json with a typed schema keeps decimals exact; get_json_object goes through double. -#}
    {{ cdc_merge.spark_json_value(cdc_merge.spark_parsed_row(row, {json_field: data_type}), cdc_merge.spark_unread_field([json_field]), row, json_field, data_type) }}
{%- endmacro %}

{% macro spark_parsed_row(row, field_types) %}
    {#-
        from_json of row with field_types ({JSON field: type}), and the unread-row field
        (spark_unread_field) where a field is one spark_json_value may read again as text.
    -#}
    {%- set schema = [] -%}
    {%- for field, data_type in field_types.items() -%}
        {%- do schema.append(cdc_merge.spark_schema_field(field) ~ ' ' ~ data_type) -%}
    {%- endfor -%}
    {%- set unread = cdc_merge.spark_unread_field(field_types) -%}
    {%- set checked = namespace(any=false) -%}
    {%- for data_type in field_types.values() if cdc_merge.spark_type_read_again(data_type) -%}
        {%- set checked.any = true -%}
    {%- endfor -%}
    {%- if checked.any -%}
        {%- do schema.append(unread ~ ' string') -%}
    {%- endif -%}
    {{- return("from_json(" ~ row ~ ", " ~ cdc_merge.string_literal(schema | join(', ')) ~ ", " ~ cdc_merge.spark_json_options(unread) ~ ")") -}}
{% endmacro %}

{% macro spark_types_read_again() %}
    {#-
        Spark's JSON reader takes a number type only from a JSON number and a boolean only from true or
        false: the digits of a text key ("42") as int, a numeric's exact text ("12.50") as double, a
        boolean as int were null, where Databend's cast reads each. A row where a field of these types
        did not read names itself in the unread-row field, and such a field is read again as its JSON
        text (a number's digits, the string's own text) and cast from it. Only those rows are read
        again: reading every such field as text made selecting a model's rows twice as slow.
    -#}
    {{- return(['tinyint', 'byte', 'smallint', 'short', 'int', 'integer', 'bigint', 'long', 'float', 'real', 'double', 'boolean']) -}}
{% endmacro %}

{% macro spark_type_read_again(data_type) %}
    {#-
        A type whose field spark_json_value reads again as text where the row did not read whole: those of
        spark_types_read_again, and decimals, whose reader makes a value wider than the type null
        (12345.67 as decimal(5,2)) where Databend's cast fails the statement.
    -#}
    {%- set bare = data_type | lower | trim -%}
    {{- return(bare in cdc_merge.spark_types_read_again() or cdc_merge.is_decimal_type(bare)) -}}
{% endmacro %}

{% macro is_decimal_type(data_type) %}
    {{- return(modules.re.match('^(decimal|numeric|dec)\\b', data_type | lower | trim) is not none) -}}
{% endmacro %}

{% macro spark_unread_field(fields) %}
    {#- The field from_json puts a row it could not read whole into (its corrupt record): a name none of fields has. -#}
    {%- set name = namespace(text='_cdc_unread') -%}
    {%- for _ in fields if name.text in fields -%}
        {%- set name.text = name.text ~ '_' -%}
    {%- endfor -%}
    {{- return(name.text) -}}
{% endmacro %}

{% macro spark_json_value(parsed, unread, row, json_field, data_type) %}
    {#-
        json_field of parsed (spark_parsed_row of row, its unread-row field unread); where its type is
        one Spark's reader may not read (spark_types_read_again) and the row did not read whole, its
        text cast to data_type. true and false are 1 and 0 as a number, as Databend casts them. A value
        the type does not hold (1.5 or 3000000000 as int, 'abc', 12345.67 as decimal(5,2)) fails the statement, naming the field
        and the value, as Databend's cast fails it: a null there would be a mirror unlike its source.
        The text is read again only where the cast needs it.
    -#}
    {%- set value = parsed ~ '.' ~ cdc_merge.spark_field_reference(json_field) -%}
    {%- if not cdc_merge.spark_type_read_again(data_type) -%}
        {{- return(value) -}}
    {%- endif -%}
    {%- set text = cdc_merge.spark_parsed_row(row, {json_field: 'string'}) ~ '.' ~ cdc_merge.spark_field_reference(json_field) -%}
    {%- if (data_type | lower | trim) == 'boolean' -%}
        {%- set cast = 'try_cast(' ~ text ~ ' as boolean)' -%}
    {%- elif cdc_merge.is_decimal_type(data_type) -%}
        {%- set cast = 'try_cast(' ~ text ~ ' as ' ~ data_type ~ ')' -%}
    {%- else -%}
        {%- set cast = "coalesce(try_cast(" ~ text ~ " as " ~ data_type ~ "), case " ~ text ~ " when 'true' then cast(1 as " ~ data_type
            ~ ") when 'false' then cast(0 as " ~ data_type ~ ") end)" -%}
    {%- endif -%}
    {%- set refused = "raise_error(concat(" ~ cdc_merge.string_literal("cdc_merge: JSON field '" ~ json_field ~ "' holds ") ~ ", " ~ text ~ ", "
        ~ cdc_merge.string_literal(", which " ~ data_type ~ " cannot hold" ~ (" (model '" ~ model.name ~ "')" if model is mapping else '')
        ~ ": type the column so that it holds every value of the source's (cdc-scaffold --overwrite writes the source's types; docs/type_mapping.md)") ~ "))" -%}
    {{- return('coalesce(' ~ value ~ ', if(' ~ parsed ~ '.' ~ cdc_merge.spark_field_reference(unread) ~ ' is null or ' ~ text ~ ' is null, null, coalesce('
        ~ cast ~ ', ' ~ refused ~ ')))') -}}
{% endmacro %}

{% macro spark_json_options(unread) %}
    {#-
        A timestamp without a zone (PostgreSQL's `timestamp`) is read as UTC whatever the session's
        time zone: in a session of another zone the stored instant would depend on who ran the apply,
        and a wall time that zone skips (02:30 on a spring-forward night) would move an hour. unread:
        the field that holds a row not read whole (spark_unread_field).
    -#}
    {{- return("map('mode', 'PERMISSIVE', 'timeZone', 'UTC', 'columnNameOfCorruptRecord', '" ~ unread ~ "')") -}}
{% endmacro %}

{% macro spark_field_reference(field) %}
    {{- return(field if modules.re.match('^[A-Za-z_][A-Za-z0-9_]*$', field) else cdc_merge.spark_schema_field(field)) -}}
{% endmacro %}

{% macro string_literal(text) %}
    {#- A string literal of the target's SQL, whatever Spark adapter runs it (a plain dbt-spark target is refused later, by name). -#}
    {{ return(adapter.dispatch('string_literal', 'cdc_merge')(text)) }}
{% endmacro %}

{% macro spark__string_literal(text) %}
    {#- Backslash escapes; $ as \u0024, for Spark substitutes ${...} in a statement's text before it parses it. -#}
    {{- return("'" ~ text | replace('\\', '\\\\') | replace("'", "\\'") | replace('$', '\\u0024') ~ "'") -}}
{% endmacro %}

{% macro databend__string_literal(text) %}
    {{- return(adapter.sql_string_literal(text)) -}}
{% endmacro %}

{% macro spark_schema_field(field) %}
    {{- return('`' ~ field | replace('`', '``') ~ '`') -}}
{% endmacro %}

{% macro databend__cdc_column(name, data_type, json_field) %}
    {{ cdc_merge.databend__cdc_value('_cdc_row', json_field, data_type) }} as {{ name }}
{%- endmacro %}

{% macro databend__cdc_value(row, json_field, data_type) %}
    {#-
        A JSON null is a VARIANT null, not SQL null. Decimals go through their text: a
        VARIANT does not cast to DECIMAL, and a JSON string "12.50" stays exact. Databend's dates
        run from year 1000 to 9999: a text outside them (year 999, 10000, infinity) is null, as
        Spark has a value it cannot hold, where a cast would clamp it to 1000-01-01 or fail the run.
        A boolean from a number or a text (MySQL's tinyint(1): 1 and 0) reads as Spark's cast reads it,
        where Databend's cast takes only true and false. A decimal text is cast one digit wider first:
        Databend's cast rounds 999.995 to 1000.00 and keeps it as a decimal(5,2), where the second cast
        fails the statement, as for 12345.67 and as Spark does.
    -#}
    {#- get(), not row['field']: Databend reads a bracket's key as a key path, which a backslash breaks. -#}
    {%- set field = "get(" ~ row ~ ", " ~ cdc_merge.string_literal(json_field) ~ ")" -%}
    {%- set value = field ~ '::string' if cdc_merge.is_decimal_type(data_type) else field -%}
    {%- set decimal = modules.re.match('^(decimal|numeric|dec)\\s*\\(\\s*(\\d+)\\s*,\\s*(\\d+)\\s*\\)$', data_type | lower | trim) -%}
    {%- if decimal and (decimal.group(2) | int) < 76 -%}
        {%- set value = 'cast(' ~ value ~ ' as decimal(' ~ (decimal.group(2) | int + 1) ~ ', ' ~ decimal.group(3) ~ '))' -%}
    {%- endif %}
    case
        when is_null_value({{ field }}) then null
        {%- if modules.re.match('^(date|timestamp)', data_type | lower) %}
        when is_string({{ field }}) and not regexp_like({{ field }}::string, '^[1-9][0-9]{3}-') then null
        {%- elif (data_type | lower | trim) == 'boolean' %}
        when not is_boolean({{ field }}) and lower(trim({{ field }}::string)) in ('t', 'true', 'y', 'yes', '1') then true
        when not is_boolean({{ field }}) and lower(trim({{ field }}::string)) in ('f', 'false', 'n', 'no', '0') then false
        {%- endif %}
        else cast({{ value }} as {{ data_type }})
    end
{%- endmacro %}


{% macro cdc_columns(columns, json_fields={}) %}
    {#-
        columns: {name: data type}, in the order the model selects them; json_fields:
        {name: JSON field} for the names that differ from their field in the row image.
    -#}
    {%- set fields = [] -%}
    {%- for name in columns -%}
        {%- set field = json_fields.get(name, name) -%}
        {%- if field in fields -%}
            {%- do exceptions.raise_compiler_error(
                "cdc_columns() in model '" ~ model.name ~ "': JSON field '" ~ field ~ "' is named twice."
                ~ " Select it once and derive the other column from it in a later CTE.") -%}
        {%- endif -%}
        {%- do fields.append(field) -%}
    {%- endfor -%}
    {%- set unknown = json_fields.keys() | reject('in', columns) | list -%}
    {%- if unknown -%}
        {%- do exceptions.raise_compiler_error(
            "cdc_columns() in model '" ~ model.name ~ "': json_fields names " ~ unknown | join(', ')
            ~ ", which are not in its columns. Add them to the columns, or remove them from json_fields.") -%}
    {%- endif -%}
    {%- do cdc_merge.check_declared_types(columns) -%}
    {%- do cdc_merge.note_json_fields(columns | list, fields) -%}
    {{ return(adapter.dispatch('cdc_columns', 'cdc_merge')(columns, fields)) }}
{% endmacro %}


{% macro check_declared_types(columns) %}
    {#- A type no engine knows fails the compile naming the column (declared_types.py), not the engine's parser naming neither. -#}
    {%- if execute -%}
        {%- do cdc_merge.require_cdc_adapter("cdc_columns() in model '" ~ (model.name if model is mapping else '') ~ "'") -%}
        {%- for name, data_type in columns.items() -%}
            {%- set problem = adapter.cdc_declared_type_problem(model.name if model is mapping else '', name, data_type) -%}
            {%- if problem -%}
                {%- do exceptions.raise_compiler_error(problem) -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endif -%}
{% endmacro %}

{% macro spark__cdc_columns(columns, fields) %}
    {#-
        Every column reads the same from_json of the whole row, which Spark computes once per
        row. The options map is what keeps it whole: without options Spark's optimizer cuts
        each from_json down to its one field, and each column parses the row again.
    -#}
    {%- set field_types = {} -%}
    {%- for data_type in columns.values() -%}
        {%- do field_types.update({fields[loop.index0]: data_type}) -%}
    {%- endfor -%}
    {%- set parsed = cdc_merge.spark_parsed_row('_cdc_row', field_types) -%}
    {%- set unread = cdc_merge.spark_unread_field(fields) -%}
    {%- for name, data_type in columns.items() -%}
        {{ cdc_merge.spark_json_value(parsed, unread, '_cdc_row', fields[loop.index0], data_type) }} as {{ name }}
        {{- ",\n        " if not loop.last }}
    {%- endfor -%}
{% endmacro %}

{% macro databend__cdc_columns(columns, fields) %}
    {#- A VARIANT is parsed already: each column as cdc_column() gives it. -#}
    {%- for name, data_type in columns.items() -%}
        {{ cdc_merge.databend__cdc_column(name, data_type, fields[loop.index0]) }}
        {{- ",\n        " if not loop.last }}
    {%- endfor -%}
{% endmacro %}
