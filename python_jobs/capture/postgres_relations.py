"""Which relation each captured table name is: a table replaced under its name is read again, and so
is a table whose column is renamed (notice_renamed_columns).

Migrations replace tables: a copy built beside the table and renamed to its name (the old one renamed
away or dropped), or the table dropped and created again. The log names each change by the relation's
name when it was made, so the new table's rows written before the rename came under another name, and
the old table's rows leave without a delete. The capture keeps each name's relation (its oid; the
state's "relations"), and when a name is another relation than the written log's, reads that table
again online: its range records delete the rows that left (snapshot_pages.py).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from python_jobs.capture.snapshot_pages import TableSnapshot

Relations = dict[str, int]  # table -> the oid of the relation the name is


def read_relations(connection: Any, tables: Iterable[str]) -> Relations:
    """Each captured table's relation now; a table that does not exist is missing."""
    found: Relations = {}
    with connection.cursor() as cursor:
        for table in tables:
            cursor.execute("select to_regclass(%s)::oid::bigint", (table,))
            (oid,) = cursor.fetchone()
            if oid is not None:
                found[table] = int(oid)
    return found


def resumed(state: Mapping[str, Any], current: Relations) -> Relations:
    """The relations the written log has (the state's); the current one for a table the state has
    none of (a state written before relations were kept, or a table new to the capture)."""
    kept = {table: int(oid) for table, oid in (state.get("relations") or {}).items()}
    return {**current, **kept}


def replaced(known: Relations, now: Relations) -> list[str]:
    """The tables whose name is now another relation than the written log's. A table gone keeps its
    relation in `known`, so one dropped and created again later is found too."""
    return sorted(table for table, oid in now.items() if table in known and known[table] != oid)


def notice_renamed_columns(capture: Any, log: Any) -> None:
    """A table with a column renamed since the written log is read again online: the log has no change
    of its rows, whose newest events carry the value under the old name only, so a mirror reading the
    new name would hold null in every row not changed since (docs/schema_changes.md)."""
    for table, renames in capture.additions.renamed.items():
        capture.pages.request_once(TableSnapshot(table, f"{table}: column renamed ({', '.join(renames)}), which its rows' "
                                                        "events before it carry under the old name"), log)
    if capture.additions.renamed:
        capture.write_state({**capture.state, "columns": capture.additions.state(), "snapshots": capture.pages.state()})
