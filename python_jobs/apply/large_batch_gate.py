"""One large batch at a time per process: with `dbt run --threads N` mirrors apply side by side.

Small batches are bound by latency (Spark job scheduling, Iceberg commits), not by the two cores,
so mirrors applied by four dbt threads finish 1.7x sooner (docs/operating.md). A
large chunk needs memory in the one driver instead: 1M events into a 10M-row mirror peak near
5 GB. So a mirror whose chunk has at least LARGE_BATCH_EVENTS events waits here until no other
mirror of this process applies a large one; small chunks never wait. A thread holds the gate
until its mirror ends (release_held), which the adapter also calls when dbt releases the node's
connection, so a failed mirror never keeps it.
"""

from __future__ import annotations

import threading
from typing import Optional

# About 0.5 GB of driver memory at the peak (5 GB per 1M events): three small beside one large fit the 6 GB default.
LARGE_BATCH_EVENTS = 100_000


class LargeBatchGate:
    def __init__(self, large_events: int = LARGE_BATCH_EVENTS) -> None:
        self.large_events = large_events
        self._lock = threading.Lock()
        self._holder: Optional[int] = None

    def is_large(self, events: int) -> bool:
        return events >= self.large_events

    def enter(self, events: int) -> bool:
        """Before a chunk of events: waits for the gate if the chunk is large; whether this thread holds it."""
        me = threading.get_ident()
        if self._holder == me:
            return True
        if not self.is_large(events):
            return False
        self._lock.acquire()
        self._holder = me
        return True

    def release_held(self) -> None:
        """At the end of this thread's mirror, whether it applied or failed; nothing if it holds nothing."""
        if self._holder == threading.get_ident():
            self._holder = None
            self._lock.release()

    @property
    def held(self) -> bool:
        return self._holder is not None


GATE = LargeBatchGate()
