"""Shared by the capture commands (postgres.py, mysql.py).

Both write Debezium-compatible JSON (no schema, one event per line) that the landing
job reads with `format: debezium`:
- `source` carries the exact position: Postgres `lsn`; MySQL/MariaDB `file`, `pos`, `row`;
  snapshot rows have `snapshot: "true"` and the position streaming starts from.
- Every event carries Debezium's `transaction` block (id, total_order: its order in the
  transaction; data_collection_order: its order among the transaction's events of its table),
  each transaction ends with Debezium's END record (its event count, in all and per table), and a
  transaction is never split across files, so a landing batch holds whole transactions.
- Values as Debezium writes them with `decimal.handling.mode=string`: exact decimals as
  strings, timestamps with a zone as ISO-8601 UTC (`...Z`), other dates and times as ISO text.

Files are written under a dot-name and renamed when complete (the landing job skips
dot-names), and named after the first and last position they hold: a capture that dies
after writing a file and before recording its position writes the same events again under
a name that says which they are, and landing them twice changes nothing (same seq).
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import orjson

from python_jobs import run_locks, stop_signals

log = logging.getLogger("cdc_merge.capture")

CAPTURE_VERSION = "cdc_merge-capture-1"


class CaptureError(RuntimeError):
    """Capture cannot go on; the message says what to fix."""


def debezium_event(
    *,
    op: str,
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None,
    source: Mapping[str, Any],
    transaction_id: str | None,
    total_order: int,
    processed_ms: int,
    data_collection_order: int | None = None,
) -> dict[str, Any]:
    """One change in Debezium's envelope; `source` holds connector, db/schema/table, position, ts_ms,
    and the version (CAPTURE_VERSION) where the caller put it there. The event keeps the images
    and the source it is given, not copies: a capture makes millions."""
    event: dict[str, Any] = {
        "before": before,
        "after": after,
        "source": source if "version" in source else {"version": CAPTURE_VERSION, **source},
        "op": op,
        "ts_ms": processed_ms,
    }
    if transaction_id is not None:
        event["transaction"] = {"id": transaction_id, "total_order": total_order,
                                "data_collection_order": total_order if data_collection_order is None else data_collection_order}
    return event


@dataclass
class TransactionOrder:
    """Debezium's order of the next event of a transaction: among all its events (total_order) and
    among its events of one table (data_collection_order), both from 1."""

    total: int = 0
    per_table: dict[str, int] = field(default_factory=dict)

    def next_block(self, transaction_id: str, table: str) -> dict[str, Any]:
        """The transaction block of the transaction's next event, of table (debezium_event's "transaction")."""
        self.total += 1
        in_table = self.per_table[table] = self.per_table.get(table, 0) + 1
        return {"id": transaction_id, "total_order": self.total, "data_collection_order": in_table}

    def end_record(self, transaction_id: str, commit_ms: int | None) -> dict[str, Any]:
        """Debezium's END record of the transaction whose events this numbered: its event count,
        in all and per table, which tells a reader of the raw log that the transaction is whole."""
        return {
            "status": "END", "id": transaction_id, "ts_ms": commit_ms, "event_count": self.total,
            "data_collections": [{"data_collection": table, "event_count": count} for table, count in self.per_table.items()],
        }


def change_event_count(events: Iterable[Mapping[str, Any]]) -> int:
    """The change events among a file's records (not the transactions' END records)."""
    return sum("op" in event for event in events)


@dataclass(frozen=True)
class OutputFolder:
    """Where capture writes its files; the landing job's input folder."""

    path: Path

    def write(self, prefix: str, first_position: str, last_position: str, events: Iterable[Mapping[str, Any]]) -> Path | None:
        """Write events as one file, atomically; returns its path (None when there were none)."""
        # orjson: compact UTF-8 JSON, as json.dumps(separators=(",", ":"), ensure_ascii=False) writes
        # it, several times faster (a capture encodes every change).
        return self.write_lines(prefix, first_position, last_position, [orjson.dumps(event) for event in events])

    def write_lines(self, prefix: str, first_position: str, last_position: str, lines: list[bytes]) -> Path | None:
        """Write lines of JSON (UTF-8, no newline) as one file, atomically; returns its path (None when there were none)."""
        if not lines:
            return None
        final = self.path / f"{prefix}-{first_position}-{last_position}.json"
        partial = self.path / f".{final.name}.partial"
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            with open(partial, "wb") as handle:
                handle.write(b"\n".join(lines) + b"\n")
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(partial, final)
            directory = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)
        except OSError as error:
            partial.unlink(missing_ok=True)
            # The source position advances only after this write, so a rerun writes these events again.
            raise CaptureError(
                f"cannot write {final}: {error.strerror or error}; free space in or fix {self.path}, then run the "
                "capture again: it resumes from the last file written, nothing is lost"
            ) from None
        log.info("wrote %s: %d lines", final.name, len(lines))
        return final


@dataclass
class CaptureSummary:
    files: int = 0
    events: int = 0
    transactions: int = 0
    snapshot_rows: int = 0

    def line(self, name: str) -> str:
        return (
            f"{name}: {self.snapshot_rows} snapshot rows, {self.events} change events in "
            f"{self.transactions} transactions, {self.files} files"
        )


@dataclass
class FollowProgress:
    """A following capture's figures: its progress line every few seconds, and the state file's
    "following" entry (changes, transactions, rate, position, the newest commit of a change written)."""

    started: float = field(default_factory=time.monotonic)
    changes: int = 0
    transactions: int = 0
    position: str = ""
    newest_commit_ms: int | None = None
    last_line_at: float = field(default_factory=time.monotonic)
    changes_at_last_line: int = 0
    rate: float = 0.0  # changes a second between the last two progress lines

    def written(self, changes: int, transactions: int, position: str, newest_commit_ms: int | None) -> None:
        self.changes += changes
        self.transactions += transactions
        self.position = position
        self.newest_commit_ms = newest_commit_ms or self.newest_commit_ms

    def line_due(self, every_seconds: float) -> bool:
        return time.monotonic() - self.last_line_at >= every_seconds

    def line(self, name: str, behind: str) -> str:
        now = time.monotonic()
        rate = self.rate = (self.changes - self.changes_at_last_line) / max(now - self.last_line_at, 1e-6)
        self.last_line_at, self.changes_at_last_line = now, self.changes
        lag = "" if self.newest_commit_ms is None else f", newest commit {time.time() - self.newest_commit_ms / 1000:.1f} s ago"
        return (f"following {name}: {self.changes} changes in {self.transactions} transactions, {rate:,.0f} changes/s, "
                f"written through {self.position or 'nothing yet'}, {behind}{lag}")

    def as_state(self) -> dict[str, Any]:
        seconds = time.monotonic() - self.started
        return {"changes": self.changes, "transactions": self.transactions, "seconds": round(seconds, 1),
                "changes_per_second": round(self.changes / max(seconds, 1e-6), 1), "position": self.position,
                "newest_commit_ms": self.newest_commit_ms}


    def status(self, source: str, server_position: str | None, behind_bytes: int | None,
               snapshots: Sequence[Mapping[str, Any]], warnings: Sequence[str] = ()) -> dict[str, Any]:
        """The capture's status file (write_status): what `cdc-run`'s metrics and status page show of it.
        warnings: conditions under which the mirrors miss changes until an operator acts."""
        return {"source": source, "connected": True, "updated_at": round(time.time(), 3), "changes": self.changes,
                "warnings": list(warnings),
                "transactions": self.transactions, "changes_per_second": round(self.rate, 1), "position": self.position,
                "server_position": server_position, "behind_bytes": behind_bytes, "newest_commit_ms": self.newest_commit_ms,
                "snapshots": [{name: snapshot.get(name) for name in ("table", "reason", "rows", "pages")}
                              for snapshot in snapshots]}


def status_path(state: Path) -> Path:
    """A following capture's status file, beside its state file: data/capture.json -> data/capture.status.json."""
    return state.with_name(f"{state.stem}.status.json")


def write_status(state: Path, status: Mapping[str, Any]) -> None:
    """Replace the status file at once (no fsync: it is rewritten every few seconds and nothing depends on it)."""
    path = status_path(state)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(json.dumps(status, sort_keys=True), encoding="utf-8")
    os.replace(partial, path)


def stopped_status(state: Path) -> None:
    """The status file of a following capture that has stopped: the figures it had, not connected, stopped
    (else its last "connected" stood until the next start, and cdc-status showed a stopped capture as connected)."""
    try:
        status = json.loads(status_path(state).read_text())
    except (OSError, ValueError):
        status = {}
    status.pop("lost", None)
    write_status(state, {**status, "connected": False, "stopped": True, "updated_at": round(time.time(), 3)})


def lost_connection_status(state: Path, detail: str) -> None:
    """The status file of a capture waiting to reconnect: the figures it had, not connected."""
    try:
        status = json.loads(status_path(state).read_text())
    except (OSError, ValueError):
        status = {}
    write_status(state, {**status, "connected": False, "updated_at": round(time.time(), 3), "lost": detail})


def read_state(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        raise CaptureError(f"{path}: cannot read the capture state ({error}); fix or remove it") from None


def write_state(path: Path, state: Mapping[str, Any]) -> None:
    """Replace the state file atomically, so a crash leaves the old or the new state."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    with open(partial, "w", encoding="utf-8") as handle:
        json.dump(state, handle, indent=2, sort_keys=True)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(partial, path)


def run_command(name: str, run: Callable[[Any], Any], config: Any) -> int:
    """A capture command's main: log to stderr, one clear line and exit code 2 on CaptureError."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    # The binlog library logs each connection and table map at INFO: the capture's own lines say what it does.
    logging.getLogger("pymysqlreplication").setLevel(logging.WARNING)
    collect_less_often()
    try:
        with one_capture_per_state(config.state):
            run(config)
    except CaptureError as error:
        print(f"{name}: {error}", file=sys.stderr)
        return 2
    return 0


@contextlib.contextmanager
def one_capture_per_state(state: Path) -> Iterator[None]:
    """Hold the state file's lock while the capture runs (an OS file lock, run_locks.py, gone with the
    process even on SIGKILL). Two captures on one state (two cdc-runs started on one project) both
    wrote it through one partial file: the second stopped with a traceback (FileNotFoundError on its
    rename) or left a state mixed of both. A second one waits for the first to end, as a second run
    of a mirror does (CDC_MERGE_LOCK_WAIT), then stops naming it."""
    lock = run_locks.lock_file("capture", str(state.absolute().parent), state.name)
    try:
        run_locks.acquire(lock, f"the capture state {state}", role=run_locks.CAPTURE)
    except run_locks.LockBusy as busy:
        raise CaptureError(str(busy)) from None
    try:
        yield
    finally:
        run_locks.release(lock)


# Collections of the youngest objects after this many more allocations than frees (Python's default: 700).
CAPTURE_GC_THRESHOLD = (100_000, 50, 100)


def collect_less_often() -> None:
    """A capture allocates several objects a change (its decoded record, row images, event) and holds
    a file's worth of them: with Python's default thresholds the cycle collector ran every 700
    allocations and walked them again, 4-8% of a PostgreSQL stream's time (BENCHMARKS.md, "Capture").
    Its objects rarely form cycles; those few are still collected, after 100,000 allocations."""
    gc.set_threshold(*CAPTURE_GC_THRESHOLD)


def stop_on_signals() -> threading.Event:
    """Set by SIGTERM or SIGINT (handled in the main thread): a following capture writes what it holds
    and stops (stop_signals.py: no lock taken in the handler)."""
    stop = threading.Event()
    stop_signals.set_on_signals(stop)
    return stop


def lost_connection(source: str, error: Exception, resumes_from: str) -> CaptureError:
    """The source went away mid-stream (restart, network): nothing after the last file was
    consumed, so running again resumes without loss."""
    detail = " ".join(str(error).split()) or type(error).__name__
    return CaptureError(
        f"lost the connection to {source} ({detail}); when it is back, run the capture again: "
        f"it resumes from {resumes_from}, nothing is lost"
    )
