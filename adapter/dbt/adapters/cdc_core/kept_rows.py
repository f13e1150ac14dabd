"""The offset and cdc_merge_runs rows of one invocation's mirrors, kept to be written together.

Each mirror's last offset row and its runs row would otherwise cost an INSERT, an Iceberg commit,
of their own per mirror (docs/apply_design.md). They are kept here instead and written in one
INSERT per table by the last mirror of the invocation to finish, or, when a mirror failed, by the
adapter as the invocation ends (cleanup_connections), or else by the first mirror of the next
invocation in this process. A mirror whose offset row is kept holds its lock until the row is written
(mirrors_to_release), so no other process applies it from the older offset meanwhile.

Safe when the process dies first: the mirror's writes are committed and its offset is not, so the
next run reads the same events again and the seq guards skip them all.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

OFFSET = "offset"
RUN = "run"


@dataclass(frozen=True)
class KeptRow:
    """One row to write: kind OFFSET into the offsets table, RUN into the runs table (table)."""

    kind: str
    invocation_id: str
    table: str
    target_table: str
    values: Dict[str, Any]
    kept_at: float = field(default_factory=time.monotonic)

    def as_dict(self, now: Optional[float] = None) -> Dict[str, Any]:
        """What the SQL macros read: the values, plus how long ago the row was kept (seconds)."""
        since = (time.monotonic() if now is None else now) - self.kept_at
        return {**self.values, "kind": self.kind, "table": self.table, "target_table": self.target_table,
                "invocation_id": self.invocation_id, "seconds_since_kept": round(max(0.0, since), 3)}


class KeptRows:
    """Thread-safe (dbt --threads): mirrors keep rows as they finish; the last one takes them all."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: List[KeptRow] = []
        # Rows taken and not yet written: a reader of the offsets (a data test under `dbt build`)
        # waits for them, or it would see a finished mirror's older offset.
        self._written = threading.Condition(self._lock)
        self._in_flight = 0

    def keep(self, row: KeptRow) -> None:
        if row.kind not in (OFFSET, RUN):
            raise ValueError(f"a kept row is an {OFFSET!r} or a {RUN!r} row, not {row.kind!r}")
        with self._lock:
            self._rows.append(row)

    def take_earlier(self, invocation_id: str) -> List[KeptRow]:
        """The rows of earlier invocations (one whose last mirror failed), taken out to be written now."""
        with self._lock:
            earlier = [row for row in self._rows if row.invocation_id != invocation_id]
            self._rows = [row for row in self._rows if row.invocation_id == invocation_id]
            self._in_flight += bool(earlier)
            return earlier

    def take_all(self) -> List[KeptRow]:
        """Every row, to be written now; the taker calls written() once it has (or has failed to)."""
        with self._lock:
            rows, self._rows = self._rows, []
            self._in_flight += bool(rows)
            return rows

    def written(self) -> None:
        with self._lock:
            self._in_flight = max(0, self._in_flight - 1)
            self._written.notify_all()

    def wait_for_writes(self, timeout: float) -> bool:
        """Until every taken row is written; False when timeout passed first."""
        with self._lock:
            return self._written.wait_for(lambda: self._in_flight == 0, timeout)

    def forget_writes(self) -> None:
        """At the invocation's end: a taker that failed before writing waits for nothing any more."""
        with self._lock:
            self._in_flight = 0
            self._written.notify_all()

    def holds_offset(self, target_table: str) -> bool:
        """Whether an offset row of this mirror waits to be written (its lock is kept until then)."""
        with self._lock:
            return any(row.kind == OFFSET and row.target_table == target_table for row in self._rows)

    def __len__(self) -> int:
        with self._lock:
            return len(self._rows)


def grouped(rows: List[KeptRow], now: Optional[float] = None) -> List[Dict[str, Any]]:
    """The rows as one group per (kind, table), in the order they were kept: one INSERT each.
    Each group: {'kind', 'table', 'rows': [row.as_dict()]}; offsets groups first, so that a runs
    row never names an offset that was not written."""
    groups: Dict[tuple, Dict[str, Any]] = {}
    for row in rows:
        group = groups.setdefault((row.kind, row.table), {"kind": row.kind, "table": row.table, "rows": []})
        group["rows"].append(row.as_dict(now))
    return sorted(groups.values(), key=lambda group: group["kind"] != OFFSET)


def mirrors_to_release(rows: List[KeptRow]) -> List[str]:
    """The mirrors whose lock waited for their offset row: released once the rows are written (or not)."""
    return sorted({row.target_table for row in rows if row.kind == OFFSET})
