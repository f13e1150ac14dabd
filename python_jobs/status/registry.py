"""The running totals of one cdc-run process (docs/observability.md), fed as the work happens: each
mirror's runs row as the adapter keeps it, each landing's summary, each dbt invocation's outcome.
Observing appends to memory under a lock and does nothing until a status endpoint enables it, so a
run pays no query and no file write for it. The status server's thread reads a snapshot()."""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any, Iterable, Mapping, Sequence

from python_jobs.status.model import (
    CaptureStatus,
    Failure,
    LandingStatus,
    MirrorStatus,
    Sample,
    StatusSnapshot,
    VerifyStatus,
    redact,
    utc_epoch,
    what_to_do,
)

HISTORY_SECONDS = 3600.0
RECENT_FAILURES = 20


def relation_name(text: str) -> str:
    """A relation as the runs rows name it (schema.table), whatever quoting dbt gave it."""
    return str(text).replace("`", "").replace('"', "")


class Registry:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.enabled = False
        self.mirrors: dict[str, MirrorStatus] = {}
        self.landing = LandingStatus()
        self.failures: deque[Failure] = deque(maxlen=RECENT_FAILURES)
        self.history: deque[Sample] = deque()
        self.cycles = self.cycle_failures = 0
        self.last_cycle_seconds: float | None = None
        self._cycle_events = 0
        self._cycle_lags: list[float] = []

    def observe_run_row(self, target_table: str, values: Mapping[str, Any]) -> None:
        """A mirror's runs row (macros/materializations/cdc_merge/metrics.sql keep_run)."""
        if not self.enabled:
            return
        name = relation_name(target_table)
        finished, newest = utc_epoch(values.get("finished_at")), utc_epoch(values.get("newest_source_ts"))
        with self._lock:
            mirror = self.mirrors.setdefault(name, MirrorStatus(name))
            mirror.source_table = values.get("source_table") or mirror.source_table
            mirror.last_run_at = finished or time.time()
            mirror.last_run_seconds = float(values.get("run_seconds") or 0)
            mirror.last_run_success, mirror.last_error = True, None
            counts = {field: int(values.get(field) or 0) for field in ("events_read", "inserted", "updated", "deleted", "skipped")}
            mirror.events_read += counts["events_read"]
            mirror.inserted += counts["inserted"]
            mirror.updated += counts["updated"]
            mirror.deleted += counts["deleted"]
            mirror.skipped += counts["skipped"]
            if newest is not None and finished is not None and counts["events_read"]:
                mirror.lag_seconds = max(0.0, finished - newest)
            mirror.consistency_group = values.get("consistency_group") or None
            if values.get("cut_lag_seconds") is not None:
                mirror.cut_lag_seconds = float(values["cut_lag_seconds"])
            if "key_index_keys" in values:
                mirror.key_index_keys = int(values["key_index_keys"])
            self._cycle_events += counts["inserted"] + counts["updated"] + counts["deleted"]
            if mirror.lag_seconds is not None:
                self._cycle_lags.append(mirror.lag_seconds)

    def observe_landing(self, files: int, events: int, quarantined: int, size_bytes: int,
                        seconds: float | None = None, input_files: int | None = None, transaction_ends: int = 0) -> None:
        if not self.enabled:
            return
        with self._lock:
            self.landing.landings += 1
            self.landing.files += files
            self.landing.events += events
            self.landing.transaction_ends += transaction_ends
            self.landing.quarantined += quarantined
            self.landing.bytes += size_bytes
            self.landing.last_at = time.time()
            self.landing.last_seconds = seconds
            self.landing.input_files = input_files

    def observe_cycle(self, success: bool, seconds: float, failed_nodes: Iterable[tuple[str, ...]] = (),
                      error: str | None = None) -> None:
        """A dbt invocation's end: failed_nodes as (relation, message) or (relation, message, source table),
        the source table from the model's config: a mirror that never ran has no runs row to name it."""
        if not self.enabled:
            return
        now = time.time()
        with self._lock:
            self.cycles += 1
            self.cycle_failures += not success
            self.last_cycle_seconds = seconds
            named = False
            for relation, message, *source_table in failed_nodes:
                name = relation_name(relation)
                mirror = self.mirrors.setdefault(name, MirrorStatus(name))
                mirror.source_table = mirror.source_table or next(iter(source_table), None) or None
                mirror.last_run_success, mirror.failures = False, mirror.failures + 1
                mirror.last_error = redact(message)
                self.failures.append(Failure(now, name, mirror.last_error or "", what_to_do(message)))
                named = True
            if not success and not named:
                message = redact(error or "the run failed") or ""
                self.failures.append(Failure(now, "dbt", message, what_to_do(message)))
            self.history.append(Sample(now, max(self._cycle_lags) if self._cycle_lags else None, self._cycle_events, seconds))
            self._cycle_events, self._cycle_lags = 0, []
            while self.history and self.history[0].at < now - HISTORY_SECONDS:
                self.history.popleft()

    def snapshot(self, captures: Sequence[CaptureStatus] = (), verify: Sequence[VerifyStatus] = ()) -> StatusSnapshot:
        import copy

        with self._lock:
            return StatusSnapshot(
                taken_at=time.time(), mirrors=[copy.copy(mirror) for _, mirror in sorted(self.mirrors.items())],
                captures=list(captures), landing=copy.copy(self.landing), verify=list(verify),
                failures=list(self.failures)[::-1], history=list(self.history), cycles=self.cycles,
                cycle_failures=self.cycle_failures, last_cycle_seconds=self.last_cycle_seconds)


# The process's one registry: the adapter, the landing and run_loop feed it; the status server reads it.
REGISTRY = Registry()
