"""Each captured table's primary key and replica identity as the written log has them: a table whose
key or identity was made again since is read again online.

The capture checks a table's key and identity with each file and at a start (postgres_columns.
identity_problem), as the catalog shows them then. Changes made while the table had none that logs
its old keys fall between two checks when the key is recreated around them (`alter table ... drop
constraint t_pkey, add primary key (id) deferrable`, changes, and the key made again without
DEFERRABLE; or REPLICA IDENTITY NOTHING and back), or the capture stops at such a check and the user
puts the key right, as it says, before the next run. Meanwhile the server logged what it could: with
REPLICA IDENTITY DEFAULT and no usable key wal2json sends no update or delete at all (a warning in the
server's log), with FULL the changes without their key (`pk` empty), so a key change became an update
of the new key and the old one stayed in the mirror. So the capture keeps, per table, its replica
identity and the oids of its primary key's and identity's indexes (the state's "key_indexes"), and
when they differ from the written log's it reads the table again online: its range records delete
the rows that left (snapshot_pages.py). A REINDEX CONCURRENTLY of the key, which makes a new index,
has the table read again too.
"""

from __future__ import annotations

import logging
from typing import Any, Iterable, Mapping

from python_jobs.capture.snapshot_pages import TableSnapshot

log = logging.getLogger("cdc_merge.capture")

KeyIndexes = dict[str, str]  # table -> "replica identity:primary key index oid:identity index oid"

_KEY_INDEXES_SQL = """
select c.relreplident::text || ':'
    || coalesce((select i.indexrelid::text from pg_index as i where i.indrelid = c.oid and i.indisprimary), '') || ':'
    || coalesce((select i.indexrelid::text from pg_index as i where i.indrelid = c.oid and i.indisreplident), '')
from pg_class as c
where c.oid = to_regclass(%s)
"""


def read_key_indexes(connection: Any, tables: Iterable[str]) -> KeyIndexes:
    """Each captured table's key and identity now; a table that does not exist is missing."""
    found: KeyIndexes = {}
    with connection.cursor() as cursor:
        for table in tables:
            cursor.execute(_KEY_INDEXES_SQL, (table,))
            row = cursor.fetchone()
            if row is not None:
                found[table] = str(row[0])
    return found


def resumed(state: Mapping[str, Any], current: KeyIndexes) -> KeyIndexes:
    """The keys the written log has (the state's); the current one for a table the state has none of
    (a state written before keys were kept, or a table new to the capture)."""
    return {**current, **{table: str(key) for table, key in (state.get("key_indexes") or {}).items()}}


def rekeyed(known: KeyIndexes, now: KeyIndexes) -> list[str]:
    """The tables whose key or identity now is another than the written log's."""
    return sorted(table for table, key in now.items() if table in known and known[table] != key)


def notice_rekeyed_tables(capture: Any, now: KeyIndexes) -> None:
    """A table whose primary key or replica identity was made again since the written log is read again
    online; the state has the read asked for with the new key. A table without a primary key now (dropped,
    to be made again) keeps the written log's, so that it is read once it has one again."""
    now = {table: key for table, key in now.items() if key.split(":")[1]}
    tables = rekeyed(capture.key_indexes, now)
    for table in tables:
        capture.pages.request_once(TableSnapshot(table, f"{table}: primary key or replica identity made again, "
                                                        "with changes between that the log may lack"), log)
    capture.key_indexes = {**capture.key_indexes, **now}
    if tables:
        capture.write_state({**capture.state, "snapshots": capture.pages.state()})
