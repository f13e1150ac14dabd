"""Captured tables that are, or were, UNLOGGED: their changes are not in the log.

ALTER TABLE ... SET UNLOGGED makes a table write no WAL, so logical decoding never sees the inserts,
updates and deletes made to it until SET LOGGED, which writes its rows into a new file (relfilenode)
as a rewrite, again with no change in the log. The capture keeps, per captured table, each relation
holding its rows (the table, or its leaf partitions) with its persistence and relfilenode as the
written log has them (the state's "persistence", {table: {relation: [persistence, relfilenode]}}).
While one is unlogged it warns, once; when one is logged again, the table is read again online as a
replaced one (postgres_relations.py): its range records delete the rows that left.

SET UNLOGGED, the changes and SET LOGGED can all fall between two checks (the checks are made with
each file, and at a start), or while the capture is stopped; the catalog then shows a logged table
whose only trace is a new relfilenode, which VACUUM FULL, CLUSTER, SET TABLESPACE and an ALTER TABLE
that rewrites the table (a column's type, a volatile default) make too. So every new relfilenode of a
logged relation has its table read again. That costs a read of the whole table after each such
rewrite, far more than the rewrite itself (1,000,000 rows: VACUUM FULL 0.8 s, the capture's read
13 to 19 s and 310 MB of landed JSON, then the mirror's merge), but it is online, without the
rewrite's exclusive lock, paced by --snapshot-rows-per-second, and those rewrites are rare; a mirror
silently short of the rows an unlogged time changed is not found by anything else. An ALTER that
rewrites can also change values without a change in the log (USING, a volatile default), which the
read puts right. A new relfilenode a TRUNCATE in the log made is not read: the mirror empties with
that TRUNCATE, and the relation's pg_class row was last written by the TRUNCATE's transaction (its
xmin), so no rewrite came after it. (SET UNLOGGED, changes and SET LOGGED after a TRUNCATE in the same
transaction are not told from the TRUNCATE alone.)
"""

from __future__ import annotations

import logging
from typing import Any, Iterable, Mapping, Sequence

from python_jobs.capture.postgres_events import wal2json_record
from python_jobs.capture.snapshot_pages import TableSnapshot

log = logging.getLogger("cdc_merge.capture")

LOGGED = "p"
UNLOGGED = "u"
# table -> {relation holding its rows: [persistence, relfilenode]}, as the written log has them.
Persistence = dict[str, dict[str, list[int | str]]]
# table -> {relation: (persistence, relfilenode, the xid that last wrote its pg_class row)}, as now.
Found = dict[str, dict[str, tuple[str, int, int]]]

# A partitioned table has no storage: its leaves have.
_PERSISTENCE_SQL = """
select tables.name, n.nspname || '.' || c.relname, c.relpersistence::text,
       pg_relation_filenode(c.oid)::bigint, c.xmin::text::bigint
from unnest(%s::text[]) as tables (name)
inner join pg_class as top on top.oid = to_regclass(tables.name)
cross join lateral (
    select top.oid as relid where top.relkind <> 'p'
    union all
    select tree.relid from pg_partition_tree(top.oid) as tree where top.relkind = 'p' and tree.isleaf
) as leaves
inner join pg_class as c on c.oid = leaves.relid
inner join pg_namespace as n on n.oid = c.relnamespace
where pg_relation_filenode(c.oid) is not null
"""


def read_persistence(connection: Any, tables: Iterable[str]) -> Found:
    """Each captured table's relations now; a table that does not exist has none."""
    found: Found = {}
    with connection.cursor() as cursor:
        cursor.execute(_PERSISTENCE_SQL, (list(tables),))
        for table, relation, persistence, filenode, xmin in cursor.fetchall():
            found.setdefault(table, {})[relation] = (persistence, int(filenode), int(xmin))
    return found


def as_kept(found: Found) -> Persistence:
    return {table: {relation: [persistence, filenode] for relation, (persistence, filenode, _) in relations.items()}
            for table, relations in found.items()}


def resumed(state: Mapping[str, Any], current: Persistence) -> Persistence:
    """The persistence the written log has (the state's); the current one for a table the state has
    none of (a state written before it was kept, or a table new to the capture)."""
    kept = {table: {relation: list(value) for relation, value in relations.items()}
            for table, relations in (state.get("persistence") or {}).items()}
    return {**current, **kept}


def unlogged(now: Found) -> dict[str, list[str]]:
    """The tables with a relation unlogged now: those relations."""
    found = {table: sorted(relation for relation, (persistence, _, _) in relations.items() if persistence == UNLOGGED)
             for table, relations in now.items()}
    return {table: relations for table, relations in found.items() if relations}


def rewritten(known: Persistence, now: Found) -> list[str]:
    """The logged relations with another relfilenode than the written log's."""
    return sorted(relation for table, relations in now.items() for relation, (persistence, filenode, _) in relations.items()
                  if persistence == LOGGED and relation in (known.get(table) or {})
                  and int(known[table][relation][1]) != filenode)


def reads(known: Persistence, now: Found, truncated: Mapping[str, set[int]]) -> dict[str, str]:
    """The tables to read again, and why: a relation logged again since the written log's, or
    rewritten while logged by anything but a TRUNCATE in the log (truncated: relation -> the xids of
    the transactions that truncated it, in the transactions received)."""
    found: dict[str, str] = {}
    for table, relations in now.items():
        for relation, (persistence, filenode, xmin) in sorted(relations.items()):
            before = (known.get(table) or {}).get(relation)
            if persistence != LOGGED or before is None or int(before[1]) == filenode:
                continue
            if before[0] == UNLOGGED:
                found.setdefault(table, f"{relation} is logged again (SET LOGGED): its changes while it was unlogged are "
                                        "not in the log")
            elif xmin not in truncated.get(relation, ()):
                found.setdefault(table, f"{relation} was rewritten (a new relfilenode: SET UNLOGGED and SET LOGGED, "
                                        "VACUUM FULL, CLUSTER, or an ALTER TABLE that rewrites it), and changes made "
                                        "while it was unlogged would not be in the log")
    return found


def truncates(transactions: Sequence[Any]) -> dict[str, set[int]]:
    """relation -> the xids of the transactions that truncated it (wal2json's "T" records)."""
    found: dict[str, set[int]] = {}
    for tx in transactions:
        for payload in tx.records:
            if payload[11:12] == b"T":
                record = wal2json_record(payload)
                found.setdefault(f"{record.get('schema')}.{record.get('table')}", set()).add(tx.xid)
    return found


def unlogged_warnings(unlogged_relations: Iterable[str]) -> list[str]:
    """The status file's warnings (cdc-run's status page, metrics and cdc-status) of the relations unlogged now."""
    return [f"{relation} is unlogged: its changes are not in the log, so the mirror misses them until "
            f"ALTER TABLE {relation} SET LOGGED" for relation in sorted(unlogged_relations)]


def notice_persistence(capture: Any, transactions: Sequence[Any]) -> None:
    """Warn once for a captured table unlogged now; read again online a table logged again, or
    rewritten, since the written log's; the state has the read asked for with the new relfilenodes."""
    now = read_persistence(capture.connection, capture.config.tables)
    unlogged_now = unlogged(now)
    for table, relations in unlogged_now.items():
        for relation in relations:
            if relation not in capture.unlogged_warned:
                named = relation if relation == table else f"{relation} (a partition of {table})"
                log.warning("%s is unlogged (ALTER TABLE ... SET UNLOGGED): its inserts, updates and deletes are not in "
                            "the log, so the mirror misses them until ALTER TABLE %s SET LOGGED, after which the capture "
                            "reads %s again", named, relation, table)
                capture.unlogged_warned.add(relation)
    # Warned again if unlogged again after SET LOGGED.
    capture.unlogged_warned &= {relation for relations in unlogged_now.values() for relation in relations}
    truncated = truncates(transactions) if rewritten(capture.persistence, now) else {}
    tables = reads(capture.persistence, now, truncated)
    for table, reason in sorted(tables.items()):
        capture.pages.request_once(TableSnapshot(table, reason), log)
    capture.persistence = {**capture.persistence, **as_kept(now)}
    if tables:
        capture.write_state({**capture.state, "snapshots": capture.pages.state()})
