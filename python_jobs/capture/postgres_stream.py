"""`cdc-capture-postgres --follow`: the slot's changes streamed over the replication protocol.

wal2json (format-version 2) sends each change as it is decoded; whole transactions are buffered and
written as one file when the buffer holds --max-changes-per-file changes, when its oldest
transaction has waited --max-wait-seconds, or when asked (SIGUSR1, roll_requests.py). The file is
on disk (fsync) and recorded in the state
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
from typing import Any

from python_jobs.capture.output import FollowProgress, stopped_status, write_status
from python_jobs.capture.postgres_connection import connect, start_replication_when_free
from python_jobs.capture.postgres_events import Transaction, lsn_text
from python_jobs.capture.postgres_pages import WATERMARK_PREFIX, open_next_page
from python_jobs.capture.postgres_persistence import unlogged_warnings
from python_jobs.capture.postgres_records import RecordAssembler
from python_jobs.capture.roll_requests import REQUESTS

log = logging.getLogger("cdc_merge.capture")
# The most messages taken before the loop looks at its files, pages, heartbeat and progress again.
TAKEN_AT_ONCE = 1000


class PostgresStream:
    """The streaming loop; `capture` (postgres_source.PostgresCapture) writes the files and the state."""

    def __init__(self, capture: Any, options: dict[str, str], max_wait_seconds: float, progress_seconds: float,
                 stop: threading.Event, heartbeat_seconds: float = 60.0) -> None:
        self.capture = capture
        self.options = options
        self.max_wait_seconds = max_wait_seconds
        self.progress_seconds = progress_seconds
        self.stop = stop
        # The records stay as sent until the file is written (postgres_records.py).
        self.assembler = RecordAssembler()
        self.pending: list[Transaction] = []
        self.pending_changes = 0
        self.pending_since: float | None = None
        self.progress = FollowProgress()
        self.confirmed_lsn = 0
        # The stream has passed the open page's high watermark: roll now, and the page is written.
        self.page_passed = False
        self.heartbeat_seconds = heartbeat_seconds
        self.heartbeat_at = time.monotonic()
        self.rolling = False

    def run(self) -> None:
        import psycopg2.extras

        config = self.capture.config
        connection = connect(config.dsn, connection_factory=psycopg2.extras.LogicalReplicationConnection)
        connection.notices = self.capture.skipped  # wal2json's warnings of changes it dropped (postgres_skipped.py)
        try:
            cursor = connection.cursor()
            # From the slot's confirmed position: everything after the last file confirmed.
            # decode=False: the records as bytes, which the JSON decoder reads without a str of each.
            start_replication_when_free(cursor, config.slot, decode=False, options=self.options, status_interval=5)
            REQUESTS.holding = lambda: bool(self.pending) or self.rolling
            while not self.stop.is_set():
                message = self._take_waiting(cursor)
                now = time.monotonic()
                asked = REQUESTS.take()
                if self.pending and (asked or self.pending_changes >= config.max_changes_per_file or self.page_passed
                                     or now - self.pending_since >= self.max_wait_seconds):
                    self._roll(cursor)
                if asked:
                    REQUESTS.answer()
                # An online snapshot's next page, between the stream's files (snapshot_pages.py).
                if self.capture.pages.open is None and open_next_page(self.capture):
                    continue
                if now - self.heartbeat_at >= self.heartbeat_seconds:
                    self.capture.emit_heartbeat()
                    self.heartbeat_at = now
                if self.progress.line_due(self.progress_seconds):
                    log.info("%s", self._progress_line(cursor))
                if message is None:
                    select.select([cursor, REQUESTS.wake_fd], [], [], self._seconds_to_wait(now))
            # Stopped: the whole transactions received so far; one received in part is sent again next time.
            if self.pending:
                self._roll(cursor)
            log.info("%s", self._progress_line(cursor))
            stopped_status(config.state)
        finally:
            REQUESTS.holding = lambda: False
            connection.close()

    def _take_waiting(self, cursor: Any) -> Any:
        """Take the messages the connection holds, up to a transaction's commit or TAKEN_AT_ONCE of them
        (the loop's other work waits for them, as pg_recvlogical's does); the last one read, None when
        none was waiting."""
        add = self.assembler.add
        message = None
        for _ in range(TAKEN_AT_ONCE):
            message = cursor.read_message()
            if message is None:
                return None
            committed = add(message.data_start, message.payload)
            if committed is not None:
                self._take(committed)
                break
        return message

    def _take(self, committed: Transaction) -> None:
        # The open page is written as soon as the stream has passed its high watermark's commit.
        self.page_passed = self.page_passed or (self.capture.pages.open is not None and any(
            change.get("prefix") == WATERMARK_PREFIX and json.loads(change.get("content") or "{}").get("mark") == "high"
            for change in self.assembler.messages))
        self.pending.append(committed)
        self.pending_changes += committed.row_changes
        if self.pending_since is None:
            self.pending_since = time.monotonic()

    def _seconds_to_wait(self, now: float) -> float:
        until_roll = self.max_wait_seconds - (now - self.pending_since) if self.pending else self.max_wait_seconds
        until_line = self.progress_seconds - (now - self.progress.last_line_at)
        until_heartbeat = self.heartbeat_seconds - (now - self.heartbeat_at)
        return max(0.01, min(until_roll, until_line, until_heartbeat, 1.0))

    def _roll(self, cursor: Any) -> None:
        self.rolling = True  # a request meanwhile is answered after this file, not before
        pending, self.pending, self.pending_changes, self.pending_since = self.pending, [], 0, None
        self.page_passed = False
        # The newest commit of a row change written: a transaction of other tables, or of the capture's own
        # heartbeat, lands nothing, and cdc-verify --state waited for it to land (in_flight.py), calling
        # every mirror behind.
        newest_change_ms = next((tx.commit_ts_ms for tx in reversed(pending) if tx.row_changes), None)
        self.progress.written(sum(tx.row_changes for tx in pending), len(pending), lsn_text(pending[-1].commit_lsn),
                              newest_change_ms)
        # The warnings received with these transactions, which psycopg2 keeps aside until the connection is polled.
        cursor.connection.poll()
        try:
            last_commit = self.capture.write_transactions(pending, following=self.progress.as_state())
        finally:
            self.rolling = False
        # Only now, with the file durable and in the state, may the server forget these transactions.
        cursor.send_feedback(flush_lsn=last_commit, force=True)
        self.confirmed_lsn = last_commit

    def _progress_line(self, cursor: Any) -> str:
        """The progress line, and the same figures in the status file (output.write_status)."""
        # wal_end: the server's WAL end, as its last message or keepalive said.
        behind = max(0, cursor.wal_end - self.confirmed_lsn) if cursor.wal_end and self.confirmed_lsn else 0
        line = self.progress.line(f"slot {self.capture.config.slot}", f"{behind:,} bytes behind the server")
        write_status(self.capture.config.state, self.progress.status(
            f"slot {self.capture.config.slot}", lsn_text(cursor.wal_end) if cursor.wal_end else None,
            behind if cursor.wal_end else None, self.capture.pages.state(), unlogged_warnings(self.capture.unlogged_warned)))
        return line
