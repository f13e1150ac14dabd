"""The enum labels each captured table's rows show: a table whose rows show a renamed label is read again.

ALTER TYPE ... RENAME VALUE changes the text of every row holding that value, and the log has no
change of those rows: the mirror would keep the old label. The capture keeps the labels of the enum
values each captured table's columns can hold (of an enum column, and of enums in arrays, domains,
ranges and row types; the state's "labels", {table: {value oid: label}}), and when one of them is
renamed reads that table again online, as a replaced table (postgres_relations.py). A value added
to an enum (ADD VALUE) changes no row: nothing is read for it.
"""

from __future__ import annotations

import logging
from typing import Any, Iterable, Mapping

from python_jobs.capture.snapshot_pages import TableSnapshot

log = logging.getLogger("cdc_merge.capture")

Labels = dict[str, dict[str, str]]  # table -> {the enum value's oid: its label}

# Every type a table's columns show the text of, down to the enums: a domain's base type, an
# array's element, a range's (and multirange's) subtype, a row type's attributes. Nothing is read
# where the database has no enum.
_LABELS_SQL = """
with recursive captured (table_name, relation) as materialized (
    select name, to_regclass(name) from unnest(%s::text[]) as tables (name) where exists (select from pg_enum)
),
column_types (table_name, type_oid) as (
    select distinct captured.table_name, columns.atttypid
    from captured cross join lateral (
        select a.atttypid from pg_attribute as a where a.attrelid = captured.relation and a.attnum > 0 and not a.attisdropped
    ) as columns
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
)
select distinct column_types.table_name, e.oid::bigint, e.enumlabel
from column_types
inner join shown on shown.column_type = column_types.type_oid
inner join pg_enum as e on e.enumtypid = shown.type_oid
"""


def read_labels(connection: Any, tables: Iterable[str]) -> Labels:
    """The labels of the enum values each captured table's rows can show now (a table without any: {})."""
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
    """The tables whose rows may show a label renamed since the written log's, with the new labels."""
    found = {}
    for table, labels in now.items():
        before = known.get(table) or {}
        renamed = sorted(label for oid, label in labels.items() if oid in before and before[oid] != label)
        if renamed:
            found[table] = renamed
    return found


def notice_relabeled_tables(capture: Any, now: Labels) -> None:
    """A table whose rows show an enum label renamed since the written log's is read again online; the
    state has the read asked for with the new labels."""
    tables = relabeled(capture.labels, now)
    for table, labels in tables.items():
        capture.pages.request_once(TableSnapshot(table, f"enum values renamed to {', '.join(labels)} (ALTER TYPE ... "
                                                        "RENAME VALUE), which its rows show without a change in the log"), log)
    capture.labels = {**capture.labels, **now}
    if tables:
        capture.write_state({**capture.state, "snapshots": capture.pages.state()})
