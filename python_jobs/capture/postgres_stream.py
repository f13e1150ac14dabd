"""`cdc-capture-postgres --follow`: the slot's changes streamed over the replication protocol.

wal2json (format-version 2) sends each change as it is decoded; whole transactions are buffered and
written as one file when the buffer holds --max-changes-per-file changes, or when its oldest
transaction has waited --max-wait-seconds. The file is on disk (fsync) and recorded in the state
before its last commit is confirmed to the server (send_feedback's flush position), so a capture
killed at any point resumes from the slot without loss; a transaction received only in part is
simply sent again. SIGTERM or SIGINT writes the whole transactions received so far and stops.
"""

from __future__ import annotations

import json
import logging
import select
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from python_jobs.capture.postgres_events import Transaction, TransactionAssembler, lsn_text

log = logging.getLogger("cdc_merge.capture")


@dataclass
class StreamProgress:
    """What the progress line and the state file say of a following capture."""

    started: float = field(default_factory=time.monotonic)
    changes: int = 0
    transactions: int = 0
    confirmed_lsn: int = 0
    newest_commit_ms: int | None = None
    last_line_at: float = field(default_factory=time.monotonic)
    changes_at_last_line: int = 0

    def line(self, slot: str, server_lsn: int) -> str:
        now = time.monotonic()
        rate = (self.changes - self.changes_at_last_line) / max(now - self.last_line_at, 1e-6)
        self.last_line_at, self.changes_at_last_line = now, self.changes
        behind = max(0, server_lsn - self.confirmed_lsn) if server_lsn else 0
        lag = "" if self.newest_commit_ms is None else f", newest commit {time.time() - self.newest_commit_ms / 1000:.1f} s ago"
        return (f"following slot {slot}: {self.changes} changes in {self.transactions} transactions, "
                f"{rate:,.0f} changes/s, confirmed {lsn_text(self.confirmed_lsn)}, "
                f"{behind:,} bytes behind the server{lag}")

    def as_state(self) -> dict[str, Any]:
        seconds = time.monotonic() - self.started
        return {"changes": self.changes, "transactions": self.transactions, "seconds": round(seconds, 1),
                "changes_per_second": round(self.changes / max(seconds, 1e-6), 1),
                "confirmed_lsn": lsn_text(self.confirmed_lsn), "newest_commit_ms": self.newest_commit_ms}


class PostgresStream:
    """The streaming loop; `capture` (postgres.PostgresCapture) writes the files and the state."""

    def __init__(self, capture: Any, options: dict[str, str], max_wait_seconds: float, progress_seconds: float,
                 stop: threading.Event) -> None:
        self.capture = capture
        self.options = options
        self.max_wait_seconds = max_wait_seconds
        self.progress_seconds = progress_seconds
        self.stop = stop
        self.assembler = TransactionAssembler()
        self.pending: list[Transaction] = []
        self.pending_changes = 0
        self.pending_since: float | None = None
        self.progress = StreamProgress()

    def run(self) -> None:
        import psycopg2
        import psycopg2.extras

        config = self.capture.config
        connection = psycopg2.connect(config.dsn, connection_factory=psycopg2.extras.LogicalReplicationConnection)
        try:
            cursor = connection.cursor()
            # From the slot's confirmed position: everything after the last file confirmed.
            cursor.start_replication(slot_name=config.slot, decode=True, options=self.options, status_interval=5)
            while not self.stop.is_set():
                message = cursor.read_message()
                now = time.monotonic()
                if message is not None:
                    self._take(message, now)
                if self.pending and (self.pending_changes >= config.max_changes_per_file
                                     or now - self.pending_since >= self.max_wait_seconds):
                    self._roll(cursor)
                if now - self.progress.last_line_at >= self.progress_seconds:
                    log.info("%s", self.progress.line(config.slot, cursor.wal_end))
                if message is None:
                    select.select([cursor], [], [], self._seconds_to_wait(now))
            # Stopped: the whole transactions received so far; one received in part is sent again next time.
            if self.pending:
                self._roll(cursor)
            log.info("%s", self.progress.line(config.slot, cursor.wal_end))
        finally:
            connection.close()

    def _take(self, message: Any, now: float) -> None:
        change = json.loads(message.payload, parse_float=str, parse_int=str)
        committed = self.assembler.add(message.data_start, int(change.get("xid") or 0), change)
        if committed is None:
            return
        self.pending.append(committed)
        self.pending_changes += len(committed.changes)
        if self.pending_since is None:
            self.pending_since = now

    def _seconds_to_wait(self, now: float) -> float:
        until_roll = self.max_wait_seconds - (now - self.pending_since) if self.pending else self.max_wait_seconds
        until_line = self.progress_seconds - (now - self.progress.last_line_at)
        return max(0.01, min(until_roll, until_line, 1.0))

    def _roll(self, cursor: Any) -> None:
        pending, self.pending, self.pending_changes, self.pending_since = self.pending, [], 0, None
        self.progress.changes += sum(len(tx.changes) for tx in pending)
        self.progress.transactions += len(pending)
        self.progress.confirmed_lsn = pending[-1].commit_lsn
        self.progress.newest_commit_ms = pending[-1].commit_ts_ms or self.progress.newest_commit_ms
        last_commit = self.capture.write_transactions(pending, following=self.progress.as_state())
        # Only now, with the file durable and in the state, may the server forget these transactions.
        cursor.send_feedback(flush_lsn=last_commit, force=True)
