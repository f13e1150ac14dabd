"""What the cdc_merge runs of one dbt invocation read once and share (macros/.../idle.sql,
docs/apply_design.md).

A mirror with nothing new should cost one cheap check, not the statements of a run. Per
invocation this reads the newest offset of every mirror (one query per offsets table, read again
only when the offsets table has a snapshot other than the one read or followed through this
process's own appends, followed_rows.py, so an offset written by any other process since is
seen) and the current snapshot of each raw table; per mirror, the mirror's Iceberg metadata
(files, snapshots, the checksum of the model SQL it was checked against). The last two come from
Iceberg's metadata in the JVM, without a statement. Each mirror's last offset row and its
cdc_merge_runs row are kept (kept_rows.py) and written with the others of the invocation in one
INSERT per table by the last mirror to finish, or as the invocation ends when one failed.

Safe when stale: a cached raw snapshot can only make a mirror skip events that landed after it was
read, as a run that started a moment earlier would; the skip writes nothing, so the next run
applies them."""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, List, Optional

from dbt.adapters.cdc_core.followed_rows import FollowedRows
from dbt.adapters.cdc_core.kept_rows import KeptRow, KeptRows

Query = Callable[[str], List[Dict[str, Any]]]


class InvocationState:
    """Offsets, raw snapshots and kept rows of the current invocation; thread-safe (--threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.invocation_id: Optional[str] = None
        # offsets table -> {target_table: newest offset row}, as read in this invocation
        self._offsets: Dict[str, Dict[str, Dict[str, Any]]] = {}
        self._raw_snapshots: Dict[str, Optional[str]] = {}
        self._expected_mirrors: Optional[int] = None
        self._finished_mirrors = 0
        self.kept = KeptRows()
        self._done: set = set()
        self._done_in_process: set = set()
        self._keyed_locks: Dict[str, threading.Lock] = {}
        # Kept between invocations, by the tables' snapshots (followed_rows.py): each offsets table's
        # newest row per mirror, each runs table's latest start per mirror (micros), each quarantine's
        # lines landed since a moment ({'since', 'moments'}, micros).
        self.offsets = FollowedRows()
        self.run_starts = FollowedRows()
        self.quarantined = FollowedRows()

    def _begin(self, invocation_id: str) -> None:
        """A new invocation forgets what the previous one read; its unwritten rows stay."""
        if invocation_id != self.invocation_id:
            self.invocation_id = invocation_id
            self._offsets, self._raw_snapshots = {}, {}
            self._expected_mirrors, self._finished_mirrors = None, 0
            self._done = set()

    def first_time(self, invocation_id: str, key: str) -> bool:
        """True for the first caller in the invocation with this key: work that mirrors share
        (maintaining the raw, offsets and runs tables) is done once per invocation, not per mirror."""
        with self._lock:
            self._begin(invocation_id)
            if key in self._done:
                return False
            self._done.add(key)
            return True

    def lock(self, key: str) -> threading.Lock:
        """One lock per key for the process: work one thread at a time does (creating a shared table)."""
        with self._lock:
            return self._keyed_locks.setdefault(key, threading.Lock())

    def first_time_in_process(self, key: str) -> bool:
        """True for the first caller in this process with this key: checks whose answer cannot change
        while the process runs (a bookkeeping table's columns, once upgraded)."""
        with self._lock:
            if key in self._done_in_process:
                return False
            self._done_in_process.add(key)
            return True

    def newest_offset(self, invocation_id: str, offsets_table: str, target_table: str, query: Query,
                      version: Callable[[], Optional[str]]) -> Optional[Dict[str, Any]]:
        """The mirror's newest offset row ({'offset_snapshot', 'offset_ordinal'}), or None when it has
        none. The newest rows of every mirror are read in one query; they are read again when the
        offsets table has a snapshot other than the one they were read at (version()), or followed
        through this process's own appends (followed_rows.py): then some process wrote an offset
        since, and a mirror must never start from an offset it has left. Where version() is None
        (no snapshot ids: Databend), they are read once per invocation."""
        with self._lock:
            self._begin(invocation_id)
            now = version()
            rows = self.offsets.at(offsets_table, now)
            if rows is None:
                cached = self._offsets.get(offsets_table) if now is None else None
                rows = cached if cached is not None else self._read_offsets(offsets_table, query)
                self._offsets[offsets_table] = rows
                self.offsets.store(offsets_table, now, rows)
            return rows.get(target_table)

    @staticmethod
    def _read_offsets(offsets_table: str, query: Query) -> Dict[str, Dict[str, Any]]:
        rows = query(
            "select target_table, offset_snapshot, offset_ordinal from ("
            " select target_table, cast(offset_snapshot as string) as offset_snapshot, offset_ordinal,"
            " row_number() over (partition by target_table order by offset_ordinal desc) as newest"
            f" from {offsets_table}) as ranked where newest = 1"
        )
        return {row["target_table"]: {"offset_snapshot": row["offset_snapshot"], "offset_ordinal": int(row["offset_ordinal"])}
                for row in rows}

    def raw_snapshot(self, invocation_id: str, raw_table: str, current: Callable[[], Optional[str]]) -> Optional[str]:
        with self._lock:
            self._begin(invocation_id)
            if raw_table not in self._raw_snapshots:
                self._raw_snapshots[raw_table] = current()
            return self._raw_snapshots[raw_table]

    def rows_left_unwritten(self, invocation_id: str) -> List[KeptRow]:
        """At a mirror's start: the rows of earlier invocations (whose last mirror failed)."""
        with self._lock:
            self._begin(invocation_id)
        return self.kept.take_earlier(invocation_id)

    def rows_to_write(self, invocation_id: str, expected_mirrors: Callable[[], int]) -> List[KeptRow]:
        """At a mirror's end: every kept row, when it is the last mirror of the invocation to finish."""
        with self._lock:
            self._begin(invocation_id)
            if self._expected_mirrors is None:
                self._expected_mirrors = expected_mirrors()
            self._finished_mirrors += 1
            if self._finished_mirrors < self._expected_mirrors:
                return []
        return self.kept.take_all()


# One per process: the rows an invocation could not write are written by the next one.
STATE = InvocationState()


def expected_mirrors(selected: List[str], nodes: Dict[str, Any]) -> int:
    """How many cdc_merge and cdc_history models this invocation runs: each keeps its runs row."""
    return sum(
        1
        for unique_id in selected
        if (nodes.get(unique_id) or {}).get("config", {}).get("materialized") in ("cdc_merge", "cdc_history")
    )
