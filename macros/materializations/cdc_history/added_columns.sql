{#
    Columns a history's model adds, taken in place (python_jobs/apply/history_columns.py decides;
    docs/history.md, "Columns the model adds"). Each is added at its place among the model's columns
    and recorded as pending in the schema changes log (cdc_merge's schema_changes_log.sql) first, and
    recorded filled only once it is: a run that dies in between fills it on the next one.

    The fill gives each version what a rebuild from the raw log gives it: the value its newest event
    holds (the raw log's event of its key at its _cdc_updated_seq, else its _cdc_seq, through the
    model's SQL); where that event sent none (an unchanged TOAST value, named in _cdc_unsent_columns as
    the chain names it), the value of the key's newest event before it that sent one (with
    track_columns, an earlier event the version took in place); a version with no event of its own (a
    truncate's or a range's delete version, an event retention removed) that of the newest event before
    it, or where that holds none and the source added the column with a value for its rows in between,
    that value (as a chunk closes it, column_defaults.sql); then the columns the source added with a
    value for its rows then are set in the versions older than that (column_defaults.sql).
#}

{% macro follow_history_columns(target_relation, columns, model_sql, cfg) %}
    {#- columns: the model's own columns. The stored history's columns checked, added, widened and filled; raises what to change.
        Returns whether it filled columns (through the batch view, which then reads the versions' events). -#}
    {% set bookkeeping = cdc_merge.history_columns() %}
    {% set actual = adapter.get_columns_in_relation(target_relation) | map(attribute='name') | list %}
    {% if '_cdc_unsent_columns' not in (actual | map('lower') | list) %}
        {#- A history written before it kept _cdc_unsent_columns gets it: its rows sent every value it holds. -#}
        {% do run_query(cdc_merge.add_unsent_columns_column_sql(target_relation)) %}
        {% set actual = actual + ['_cdc_unsent_columns'] %}
    {% endif %}
    {% set stored = [] %}
    {% for name in actual if name | lower not in bookkeeping %}
        {% do stored.append(name) %}
    {% endfor %}
    {% set plan = adapter.cdc_history_columns_plan(stored, columns, cfg.on_schema_change, cfg.track_columns, model.name,
        target_relation | string) %}
    {% if plan.error %}
        {% do exceptions.raise_compiler_error(plan.error) %}
    {% endif %}
    {#- A column the model retypes: widened in place where every stored value fits, else refused (history_columns.py). -#}
    {% set model_types = cdc_merge.history_column_types(model_sql, columns) %}
    {% set stored_types = cdc_merge.relation_column_types(target_relation) | selectattr('0', 'in', model_types) | list %}
    {% set retypes = adapter.cdc_history_retypes_plan(stored_types, model_types.items() | list, cfg.on_schema_change, model.name,
        target_relation | string, target.type) %}
    {% if retypes.error %}
        {% do exceptions.raise_compiler_error(retypes.error) %}
    {% endif %}
    {% for step in retypes.widen %}
        {% do run_query(cdc_merge.widen_column_sql(target_relation, step.column, step.new_type)) %}
        {{ log("cdc_history " ~ target_relation ~ ": schema change: " ~ step.column ~ " widened " ~ step.old_type ~ " -> "
            ~ step.new_type, info=True) }}
    {% endfor %}
    {% set changes_relation = cdc_merge.schema_changes_relation(cfg) %}
    {% set logged = {'columns': [], 'ordinal': 0} %}
    {% if plan.add %}
        {% do run_query(cdc_merge.create_schema_changes_table(changes_relation)) %}
    {% endif %}
    {% if load_relation(changes_relation) is not none %}
        {% set logged = cdc_merge.pending_backfills(changes_relation, target_relation) %}
    {% endif %}
    {% set ordinal = namespace(value=logged.ordinal) %}
    {% set types = cdc_merge.history_column_types(model_sql, columns) if (plan.add or logged.columns) else {} %}
    {% for step in plan.add %}
        {% set ordinal.value = ordinal.value + 1 %}
        {% do run_query(cdc_merge.record_schema_change_sql(changes_relation, target_relation, ordinal.value, step.column, 'add_pending',
            none, types[step.column | lower], none)) %}
        {% do run_query(cdc_merge.add_column_sql(target_relation, step.column, types[step.column | lower],
            ('after ' ~ step.after) if step.after else 'first')) %}
    {% endfor %}
    {% set pending = [] %}
    {% for name in columns if name in logged.columns or name in plan.add | map(attribute='column') | list %}
        {% do pending.append(name) %}
    {% endfor %}
    {% if pending %}
        {% set pending_types = {} %}
        {% for name in pending %}
            {% do pending_types.update({name: types[name | lower]}) %}
        {% endfor %}
        {% set default_events = cdc_merge.column_default_events(cfg.raw_relation, cfg.source_table) %}
        {% set filled = cdc_merge.fill_history_columns(target_relation, model_sql, pending, cfg,
            cdc_merge.history_added_defaults(default_events, types)) %}
        {% do cdc_merge.apply_column_defaults(target_relation, default_events, pending_types, kept_unless='is_current',
            values_seq=cdc_merge.history_values_seq_sql()) %}
        {% for name in pending %}
            {% set ordinal.value = ordinal.value + 1 %}
            {% do run_query(cdc_merge.record_schema_change_sql(changes_relation, target_relation, ordinal.value, name, 'backfilled', none,
                types[name | lower], filled)) %}
        {% endfor %}
        {{ log("cdc_history " ~ target_relation ~ ": schema change: " ~ pending | join(', ') ~ " added; " ~ filled
            ~ " version rows given their values from their events in the raw log", info=True) }}
    {% endif %}
    {{ return(pending | length > 0) }}
{% endmacro %}


{% macro fill_history_columns(target_relation, model_sql, new_columns, cfg, added_defaults) %}
    {#- Each version's values of new_columns, as the header says (added_defaults: history_added_defaults). Returns the version
        rows whose values changed. -#}
    {% set key_events = model.name ~ '__cdc_history_key_events' %}
    {% set filled = model.name ~ '__cdc_history_filled' %}
    {% do run_query(cdc_merge.create_applied_events_sql(key_events, cfg.raw_relation, target_relation, cfg.source_table, every_event=true)) %}
    {% do run_query(cdc_merge.create_history_batch_view_sql(cdc_merge.history_batch_view_name(model.name), key_events, cfg.source_table, 0, 1)) %}
    {% do run_query(cdc_merge.create_history_fill_sql(filled, cdc_merge.history_fill_sql(target_relation, model_sql, new_columns, added_defaults))) %}
    {% set changed = [] %}
    {% for column in new_columns %}
        {% do changed.append(cdc_merge.differs_sql('version.' ~ column, 'filled.' ~ column)) %}
    {% endfor %}
    {% do changed.append(cdc_merge.differs_sql('version._cdc_unsent_columns', 'filled._cdc_unsent_columns')) %}
    {% set count_sql %}
        select count(*) as changed
        from {{ target_relation }} as version
        inner join {{ filled }} as filled
            on version._cdc_key = filled._cdc_key
            and version._cdc_seq = filled._cdc_seq
        where {{ changed | join(' or ') }}
    {% endset %}
    {% set rows = run_query(count_sql).rows[0]['changed'] | int %}
    {% if rows > 0 %}
        {% set fill_sql %}
            merge into {{ target_relation }} as version
            using {{ filled }} as filled
                on version._cdc_key = filled._cdc_key
                and version._cdc_seq = filled._cdc_seq
            when matched and ({{ changed | join(' or ') }}) then update set
                {%- for column in new_columns %}
                {{ column }} = filled.{{ column }},
                {%- endfor %}
                _cdc_unsent_columns = filled._cdc_unsent_columns
        {% endset %}
        {% do run_query(fill_sql) %}
    {% endif %}
    {% do cdc_merge.drop_scratch(filled) %}
    {% do cdc_merge.drop_scratch(key_events) %}
    {{ return(rows) }}
{% endmacro %}


{% macro history_fill_sql(target_relation, model_sql, new_columns, added_defaults={}) %}
    {#-
        Every version's key and seq, its values of new_columns and its _cdc_unsent_columns with those its event did not send.
        As the chain gives them (chain.sql, unsent.sql): each of the key's events takes its own value, or that of the
        newest event before it that sent one; a version holds its newest event's (the one at its _cdc_updated_seq,
        or the newest before that where retention removed it). One ordered pass over the key's events and its
        versions' probes (a probe after the event at its _cdc_updated_seq), not a join of versions to seq ranges:
        a key with many versions stays linear.
    -#}
    with

    events as (
        select
            _cdc_key,
            _cdc_seq as _cdc_at,
            0 as _cdc_probe,
            cast(null as string) as _cdc_version_seq,
            false as _cdc_own_event,
            cast(null as string) as _cdc_unsent_columns,
            {%- for column in new_columns %}
            {{ column }},
            case when coalesce({{ cdc_merge.is_unavailable_sql(column) }}, false) then 0 else 1 end as _cdc_sent_{{ loop.index }}{{ ',' if not loop.last }}
            {%- endfor %}
        from ({{ model_sql }}) as change
    ),

    {#- A probe's values are never read (it sent none), only typed. A truncate's or a range's delete version keeps its
        closed version's _cdc_updated_seq, below its own seq: that event is not its own. -#}
    probes as (
        select
            _cdc_key,
            coalesce(_cdc_updated_seq, _cdc_seq) as _cdc_at,
            1 as _cdc_probe,
            _cdc_seq as _cdc_version_seq,
            coalesce(_cdc_updated_seq, _cdc_seq) >= _cdc_seq as _cdc_own_event,
            _cdc_unsent_columns,
            {%- for column in new_columns %}
            {{ column }},
            0 as _cdc_sent_{{ loop.index }}{{ ',' if not loop.last }}
            {%- endfor %}
        from {{ target_relation }}
    ),

    timeline as (
        select * from events
        union all
        select * from probes
    ),

    {#- An event that sent no value and the rows after it until one did: one group, which takes its first row's. -#}
    grouped as (
        select
            *,
            {%- for column in new_columns %}
            sum(_cdc_sent_{{ loop.index }}) over (
                partition by _cdc_key order by _cdc_at, _cdc_probe rows between unbounded preceding and current row
            ) as _cdc_group_{{ loop.index }},
            max(case when _cdc_probe = 0 and _cdc_sent_{{ loop.index }} = 0 then 1 else 0 end) over (
                partition by _cdc_key, _cdc_at
            ) as _cdc_unsent_at_{{ loop.index }},
            {%- endfor %}
            max(1 - _cdc_probe) over (partition by _cdc_key, _cdc_at) as _cdc_event_at
        from timeline
    ),

    filled as (
        select
            _cdc_key,
            _cdc_probe,
            _cdc_version_seq,
            {%- for column in new_columns %}
            first_value(case when _cdc_sent_{{ loop.index }} = 1 then {{ column }} end) over (
                partition by _cdc_key, _cdc_group_{{ loop.index }} order by _cdc_at, _cdc_probe
            ) as {{ column }},
            first_value(case when _cdc_sent_{{ loop.index }} = 1 then _cdc_at end) over (
                partition by _cdc_key, _cdc_group_{{ loop.index }} order by _cdc_at, _cdc_probe
            ) as _cdc_from_{{ loop.index }},
            case when _cdc_own_event and _cdc_unsent_at_{{ loop.index }} = 1
                and coalesce(_cdc_unsent_columns, '') not like '%,{{ column }},%' then '{{ column }},' else '' end
                as _cdc_unsent_{{ loop.index }},
            {%- endfor %}
            _cdc_own_event and _cdc_event_at = 1 as _cdc_has_event,
            _cdc_unsent_columns
        from grouped
    ),

    final as (
        select
            _cdc_key,
            _cdc_version_seq as _cdc_seq,
            {%- for column in new_columns %}
            {%- if (column | lower) in added_defaults %}
            case when _cdc_has_event then {{ column }} else {{ cdc_merge.history_range_value_sql(column, column, '_cdc_from_' ~ loop.index,
                '_cdc_version_seq', added_defaults) }} end as {{ column }},
            {%- else %}
            {{ column }},
            {%- endif %}
            {%- endfor %}
            {%- set unsent = [] %}
            {%- for column in new_columns %}
            {%- do unsent.append('_cdc_unsent_' ~ loop.index) %}
            {%- endfor %}
            case
                when {{ unsent | join(' || ') }} = '' then _cdc_unsent_columns
                else coalesce(_cdc_unsent_columns, ',') || {{ unsent | join(' || ') }}
            end as _cdc_unsent_columns
        from filled
        where _cdc_probe = 1
    )

    select * from final
{% endmacro %}


{% macro create_history_fill_sql(name, sql) %}
    {{ return(adapter.dispatch('create_history_fill_sql', 'cdc_merge')(name, sql)) }}
{% endmacro %}

{% macro spark__create_history_fill_sql(name, sql) %}
    create or replace temporary view {{ name }} as
    {{ sql }}
{% endmacro %}

{% macro databend__create_history_fill_sql(name, sql) %}
    {#- A table, not a view: the merge reads the history it writes. -#}
    create or replace transient table {{ name }} as
    {{ sql }}
{% endmacro %}
