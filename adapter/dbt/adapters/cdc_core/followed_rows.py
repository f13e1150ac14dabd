"""What a bookkeeping table (offsets, cdc_merge_runs) holds per mirror, kept between the invocations
of one process and followed through the process's own appends (docs/apply_service.md).

Otherwise each invocation reads every mirror's newest offset (a Spark query, 0.17 s in the demo's
cycle, on the path of every mirror) and, at its end, the runs rows again to count the new ones'
quarantined lines. A table's content is named by its Iceberg snapshot id: what was read at a snapshot is still
true while the table is at it. And an append of the process's own knows its parent and its own
snapshot (OneCommitBatch.append), so what was known at the parent plus the appended rows is what the
table holds at the append's snapshot. Any other commit (another process's offset, maintenance,
a full refresh) leaves the table at a snapshot nothing is known of, and the next ask reads it again.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, Iterable, Optional, Tuple

Values = Dict[str, Any]
# Which of two values of one mirror a table holds as its newest.
Newer = Callable[[Any, Any], Any]


class FollowedRows:
    """Per table: the snapshot id its values were known at, and each mirror's value; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known: Dict[str, Tuple[str, Values]] = {}

    def at(self, table: str, snapshot: Optional[str]) -> Optional[Values]:
        """The values known at snapshot, or None when the table is known at another one (or none)."""
        if snapshot is None:
            return None
        with self._lock:
            known = self._known.get(table)
            return dict(known[1]) if known is not None and known[0] == snapshot else None

    def store(self, table: str, snapshot: Optional[str], values: Values) -> None:
        """values, read at snapshot (read when the table was at it, or later: then a later ask finds
        the table at another snapshot and reads it again)."""
        with self._lock:
            if snapshot is None:
                self._known.pop(table, None)
            else:
                self._known[table] = (snapshot, dict(values))

    def appended(self, table: str, commit: Optional[Tuple[str, str]], rows: Iterable[Tuple[str, Any]], newer: Newer,
                 every_mirror: bool = True) -> None:
        """The process appended rows ((mirror, value) each) in commit (its parent snapshot, its own);
        what was known at the parent, with them, is known at the commit. Else nothing is known.
        every_mirror: the values were known for every mirror of the table, so a mirror new to them
        has its appended value; otherwise it stays unknown (its older rows were never read)."""
        with self._lock:
            known = self._known.pop(table, None)
            if commit is None or known is None or known[0] != commit[0]:
                return
            values = dict(known[1])
            for mirror, value in rows:
                if mirror in values:
                    values[mirror] = newer(values[mirror], value)
                elif every_mirror:
                    values[mirror] = value
            self._known[table] = (commit[1], values)

    def forget(self) -> None:
        with self._lock:
            self._known.clear()


def newest_offset(one: Dict[str, Any], other: Dict[str, Any]) -> Dict[str, Any]:
    """The offset row of the higher ordinal (offset_snapshot, offset_ordinal)."""
    return other if other["offset_ordinal"] > one["offset_ordinal"] else one


def latest_start(one: Optional[int], other: Optional[int]) -> Optional[int]:
    """The later of two runs' starts (micros; None: no run)."""
    return max(value for value in (one, other) if value is not None) if one is not None or other is not None else None
