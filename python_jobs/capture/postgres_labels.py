"""The enum labels and row types each captured table's rows show: a table whose rows show a renamed
label, or a row type with other attributes, is read again.

ALTER TYPE ... RENAME VALUE changes the text of every row holding that value, and ALTER TYPE ...
ADD (or DROP) ATTRIBUTE that of every row holding a value of the row type, and the log has no change
of those rows: the mirror would keep the old text. The capture keeps the labels of the enum values
each captured table's columns can hold, and the attributes' types of the row types they can hold
(in an enum or row type column, and in arrays, domains, ranges and row types of them; the state's
"labels", {table: {the enum value's oid, or "row type" and the type's oid: its label, or its
attributes}}), and when one of them changes reads that table again online, as a replaced table
(postgres_relations.py). A value added to an enum (ADD VALUE) changes no row: nothing is read for it.
"""

from __future__ import annotations

import logging
from typing import Any, Iterable, Mapping

from python_jobs.capture.snapshot_pages import TableSnapshot

log = logging.getLogger("cdc_merge.capture")

Labels = dict[str, dict[str, str]]  # table -> {an enum value's oid: its label, "row type <oid>": its attributes}
ROW_TYPE = "row type "

# Every type a table's columns show the text of: a domain's base type, an array's element, a
# range's (and multirange's) subtype, a row type's attributes; and of those, the enums' labels and
# the row types' attributes.
_LABELS_SQL = """
with recursive captured (table_name, relation) as materialized (
    select name, to_regclass(name)::oid from unnest(%s::text[]) as tables (name)
),
column_types (table_name, type_oid) as (
    select distinct captured.table_name, a.atttypid
    from pg_attribute as a inner join captured on captured.relation = a.attrelid
    where a.attrelid = any(array(select relation from captured)) and a.attnum > 0 and not a.attisdropped
),
shown (column_type, type_oid) as (
    select distinct type_oid, type_oid from column_types
    union
    select shown.column_type, inner_type.oid
    from shown
    inner join pg_type as t on t.oid = shown.type_oid
    cross join lateral (
        select t.typbasetype where t.typtype = 'd'
        union all
        select t.typelem where t.typelem <> 0 and t.typlen = -1
        union all
        select r.rngsubtype from pg_range as r where t.typtype in ('r', 'm') and t.oid in (r.rngtypid, r.rngmultitypid)
        union all
        select a.atttypid from pg_attribute as a
        where t.typtype = 'c' and a.attrelid = t.typrelid and a.attnum > 0 and not a.attisdropped
    ) as inner_type (oid)
),
table_types (table_name, type_oid, type_type, type_relation) as materialized (
    select distinct column_types.table_name, t.oid, t.typtype, t.typrelid
    from column_types
    inner join shown on shown.column_type = column_types.type_oid
    inner join pg_type as t on t.oid = shown.type_oid
    where t.typtype in ('e', 'c')
)
select table_types.table_name, e.oid::bigint::text, e.enumlabel
from table_types inner join pg_enum as e on e.enumtypid = table_types.type_oid
where table_types.type_type = 'e'
union all
select table_types.table_name, '""" + ROW_TYPE + """' || table_types.type_oid::bigint,
    format_type(table_types.type_oid, null) || ' (' || coalesce((
        select string_agg(format_type(a.atttypid, a.atttypmod), ', ' order by a.attnum) from pg_attribute as a
        where a.attrelid = table_types.type_relation and a.attnum > 0 and not a.attisdropped), '') || ')'
from table_types
where table_types.type_type = 'c'
"""


def read_labels(connection: Any, tables: Iterable[str]) -> Labels:
    """The labels of the enum values, and the row types' attributes, each captured table's rows can show now."""
    tables = list(tables)
    found: Labels = {table: {} for table in tables}
    with connection.cursor() as cursor:
        cursor.execute(_LABELS_SQL, (tables,))
        for table, oid, label in cursor.fetchall():
            found[table][str(oid)] = label
    return found


def resumed(state: Mapping[str, Any], current: Labels) -> Labels:
    """The labels the written log has (the state's); the current ones for a table the state has none
    of (a state written before labels were kept, or a table new to the capture)."""
    kept = {table: dict(labels) for table, labels in (state.get("labels") or {}).items()}
    return {**current, **kept}


def relabeled(known: Labels, now: Labels) -> dict[str, list[str]]:
    """The tables whose rows may show a label renamed, or a row type changed, since the written log's:
    what changed, as it is now."""
    found = {}
    for table, labels in now.items():
        before = known.get(table) or {}
        changed = sorted(f"row type {label}" if key.startswith(ROW_TYPE) else f"enum value renamed to {label}"
                         for key, label in labels.items() if key in before and before[key] != label)
        if changed:
            found[table] = changed
    return found


def notice_relabeled_tables(capture: Any, now: Labels) -> None:
    """A table whose rows show an enum label renamed, or a row type changed, since the written log's is
    read again online; the state has the read asked for with the new labels."""
    tables = relabeled(capture.labels, now)
    for table, labels in tables.items():
        capture.pages.request_once(TableSnapshot(table, f"{'; '.join(labels)} (ALTER TYPE), which its rows show without a "
                                                        "change in the log"), log)
    capture.labels = {**capture.labels, **now}
    if tables:
        capture.write_state({**capture.state, "snapshots": capture.pages.state()})
