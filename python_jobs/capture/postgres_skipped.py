"""Changes wal2json decoded but could not send: the tables they were made to are read again online.

wal2json sends an update or delete only with its old key; where the table's replica identity gave it
none when the change was made (REPLICA IDENTITY NOTHING, or DEFAULT without a usable primary key), it
drops the change and says so in a WARNING to the decoding session (`no tuple identifier for UPDATE in
table "shop"."items"`). The capture stops at such an identity when its catalog check sees it
(postgres_columns.identity_problem), but the identity can be set and set back between two checks
(`alter table ... replica identity nothing`, changes, `... replica identity default`), or on one leaf
partition of a partitioned table; the catalog then shows nothing wrong and the changes were lost: an
updated row kept its old values in the mirror, a deleted one stayed. So every decoding session's
warnings are collected (the connection's notices), and the captured table a dropped change was made
to (a leaf's partitioned table) is read again with the file of the transactions decoded with it: its
range records delete the rows that left (snapshot_pages.py).

A session whose client_min_messages is above WARNING would not get them: the capture's sessions set
it (postgres_connection.py).
"""

from __future__ import annotations

import logging
import re
from typing import Any, Mapping

from python_jobs.capture.snapshot_pages import TableSnapshot

log = logging.getLogger("cdc_merge.capture")

# wal2json's (format-version 2) warnings of a change it decoded and did not send, naming its table.
_DROPPED = re.compile(r'^WARNING:\s+no (?:old )?tuple (?:identifier|data) for (?:INSERT|UPDATE|DELETE) in table "(.*)"\s*$',
                      re.DOTALL)


class SkippedChanges:
    """The notices of a connection (psycopg2 appends each the server sends): the table of each change
    wal2json dropped, as its warning names it (`shop"."items`), until taken."""

    def __init__(self) -> None:
        self.tables: set[str] = set()

    def append(self, notice: str) -> None:
        found = _DROPPED.match(notice)
        if found:
            self.tables.add(found.group(1))

    def take(self) -> set[str]:
        tables, self.tables = self.tables, set()
        return tables


def tables_to_read(dropped: set[str], tables: list[str], partitions: Mapping[str, tuple[str, ...]]) -> list[str]:
    """The captured tables whose changes (or whose leaf partitions' changes) were dropped."""
    found = []
    for table in tables:
        relations = [table, *partitions.get(table, ())]
        if any('"."'.join(relation.split(".", 1)) in dropped for relation in relations):
            found.append(table)
    return found


def notice_skipped_changes(capture: Any) -> None:
    """Each captured table with a change wal2json dropped since the last call is read again online; the
    state the caller writes next has the read asked for."""
    dropped = capture.skipped.take()
    for table in tables_to_read(dropped, list(capture.config.tables), capture.partitions) if dropped else ():
        capture.pages.request_once(TableSnapshot(table, f"{table}: changes made while its replica identity (or a "
                                                        "partition's) logged no old key were dropped by the server's "
                                                        "decoding"), log)
