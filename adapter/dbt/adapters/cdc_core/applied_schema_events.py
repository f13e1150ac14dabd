"""Each mirror's applied schema events with existing_rows, kept in the process between runs
(python_jobs/apply/applied_schema_events.py decides when they answer for the raw log). Thread-safe:
mirrors run at once (--threads); one mirror is applied by one thread at a time (run_guard.sql)."""

from __future__ import annotations

import threading
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from python_jobs.apply import applied_schema_events
from python_jobs.apply.applied_schema_events import AppliedEvents

MirrorKey = Tuple[str, str, str]


class AppliedSchemaEvents:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        # (mirror, raw table, source table) -> what the mirror applied up to its offset
        self._applied: Dict[MirrorKey, AppliedEvents] = {}

    def known_before(self, mirror: MirrorKey, chunk: Mapping[str, Any]) -> Optional[List[List[str]]]:
        with self._lock:
            return applied_schema_events.known_before(chunk, self._applied.get(mirror))

    def keep(self, mirror: MirrorKey, chunk: Mapping[str, Any], offset_to: Optional[str],
             known: Optional[Sequence[Sequence[Any]]], chunk_events: Sequence[Sequence[Any]]) -> None:
        with self._lock:
            applied = applied_schema_events.after_chunk(chunk, offset_to, known, chunk_events, self._applied.get(mirror))
            if applied is None:
                self._applied.pop(mirror, None)
            else:
                self._applied[mirror] = applied


APPLIED = AppliedSchemaEvents()
