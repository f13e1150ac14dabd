"""Partitioned tables: PostgreSQL logs a partitioned table's row changes under its leaf partitions'
names (wal2json has no publish_via_partition_root), so the capture asks wal2json for the leaves and
writes their changes under the table's name.

The leaves are read from pg_partition_tree at the start and again after each file's transactions
were received, before the file is written. Only when they are the leaves the stream was decoding
with is the file written: a partition created after the stream started, and written to, would have
had its changes filtered out. Otherwise the transactions are dropped unwritten and unconfirmed (the
slot sends them again) and the stream starts over with the new leaves. The check is enough because
a change of a new leaf commits after the leaf does, so a leaf missing after the transactions were
received was written by none of them.

A leaf's rows need no log to enter or leave the table: a new leaf (ATTACH PARTITION of a table with
rows, or an empty new partition) is read online as the table's rows, without a range record, for the
other leaves' rows are not in its pages; a leaf gone (DETACH, DROP) has the whole table read again
online, whose range records delete the rows that left. A TRUNCATE of every leaf empties the mirror
at once; of some of them, the table is read again online too. The leaves the log was written with
are kept in the state, so a change made while the capture was stopped is noticed when it starts.
"""

from __future__ import annotations

import logging
from typing import Any, Iterable, Mapping, Sequence

log = logging.getLogger("cdc_merge.capture")

# {partitioned table: its leaf partitions (schema.table)}; only partitioned tables have an entry.
Partitions = dict[str, tuple[str, ...]]

# A leaf is a partition with no partitions of its own, at any depth; a table partitioned but without
# partitions yet has its row with null names.
_LEAVES_SQL = """
select
    tables.name,
    n.nspname,
    c.relname
from unnest(%s::text[]) as tables (name)
inner join pg_class as parent on parent.oid = to_regclass(tables.name) and parent.relkind = 'p'
left join lateral pg_partition_tree(parent.oid) as tree on tree.isleaf
left join pg_class as c on c.oid = tree.relid
left join pg_namespace as n on n.oid = c.relnamespace
order by 1, 2, 3
"""


class PartitionsChanged(Exception):
    """The leaves differ from those the stream decodes with: the received transactions are dropped
    unwritten, and the stream starts again with the new leaves."""


def read_partitions(connection: Any, tables: Sequence[str]) -> Partitions:
    found: Partitions = {}
    with connection.cursor() as cursor:
        cursor.execute(_LEAVES_SQL, (list(tables),))
        for table, schema, name in cursor.fetchall():
            leaves = found.setdefault(table, ())
            if name is not None:
                found[table] = (*leaves, f"{schema}.{name}")
    return found


def resumed(state: Mapping[str, Any], current: Partitions, tables: Sequence[str]) -> Partitions:
    """The leaves a capture resumes with: those the written log was decoded with (the state's) for
    the tables it captured, the current ones for a table new to it; a difference from now is then
    noticed before the first file."""
    kept = {table: tuple(leaves) for table, leaves in (state.get("partitions") or {}).items() if table in tables}
    if state.get("partitions") is None:
        return current
    return {**{table: leaves for table, leaves in current.items() if table not in kept}, **kept}


def leaves_of(partitions: Partitions) -> list[str]:
    return [leaf for leaves in partitions.values() for leaf in leaves]


def wal2json_table(table: str) -> str:
    """A table as wal2json's add-tables reads it: the characters its README calls special (space,
    quote, comma, period, asterisk) escaped in a name."""
    schema, name = table.split(".", 1)
    return ".".join("".join("\\" + char if char in " ',.*" else char for char in part) for part in (schema, name))


def reads_for_change(old: Partitions, new: Partitions) -> list[tuple[str, str, str | None]]:
    """What a change of the leaves needs read online: (table, reason, partition) for each new leaf
    (partition: read only it), and (table, reason, None) for a table with a leaf gone."""
    reads: list[tuple[str, str, str | None]] = []
    for table in sorted(set(old) | set(new)):
        before, after = set(old.get(table, ())), set(new.get(table, ()))
        gone = sorted(before - after)
        if gone:
            reads.append((table, f"partition {', '.join(gone)} detached or dropped", None))
        reads.extend((table, f"partition {leaf} attached", leaf) for leaf in sorted(after - before))
    return reads


def as_tables(changes: Iterable[dict[str, Any]], partitions: Partitions) -> tuple[list[dict[str, Any]], list[str]]:
    """wal2json records with each leaf's changes named as its table's; and the tables whose leaves
    were truncated, some but not all in this transaction, which must be read again. A TRUNCATE of
    every leaf is the table's own, at the place of the first."""
    table_of = {leaf: table for table, leaves in partitions.items() for leaf in leaves}
    named: list[dict[str, Any]] = []
    truncated: dict[str, tuple[int, set[str]]] = {}  # table -> (its truncate's index in named, leaves)
    for change in changes:
        leaf = f"{change.get('schema')}.{change.get('table')}"
        table = table_of.get(leaf) if change.get("action") in ("I", "U", "D", "T") else None
        if table is None:
            named.append(change)
            continue
        schema, name = table.split(".", 1)
        if change["action"] == "T":
            if table not in truncated:
                truncated[table] = (len(named), set())
                named.append({**change, "schema": schema, "table": name})
            truncated[table][1].add(leaf)
            continue
        named.append({**change, "schema": schema, "table": name})
    partly = [table for table, (_, leaves) in truncated.items() if not set(partitions[table]) <= leaves]
    if partly:
        dropped = {truncated[table][0] for table in partly}
        named = [change for index, change in enumerate(named) if index not in dropped]
    return named, sorted(partly)
