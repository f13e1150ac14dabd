"""The MariaDB/MySQL capture's stream: the binlog from a position written to files of whole committed
transactions, the state stored only after each file is on disk, and the online snapshots' pages
(mysql_pages.py) opened and written between its transactions."""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any

import orjson

from python_jobs.capture.mysql_event_lines import change_lines, first_position
from python_jobs.capture.mysql_events import binlog_file_number, change_events
from python_jobs.capture.mysql_foreign_keys import keys_to_state
from python_jobs.capture.mysql_pages import open_next_page, watch_transaction, write_page
from python_jobs.capture.mysql_server import MysqlCapture
from python_jobs.capture.output import FollowProgress, change_event_count, stopped_status, write_state, write_status
from python_jobs.capture.roll_requests import REQUESTS
from python_jobs.capture.snapshot_pages import TableSnapshot

if TYPE_CHECKING:
    from python_jobs.capture.mysql import CaptureConfig

log = logging.getLogger("cdc_merge.capture")


def _position_name(binlog_file: str, position: int) -> str:
    return f"{binlog_file_number(binlog_file)}-{position:012d}"


class _PendingFile:
    """Whole transactions collected for the next file."""

    def __init__(self) -> None:
        self.events: list[bytes] = []  # their JSON lines (mysql_event_lines.py)
        self.changes = 0
        self.first: tuple[str, int] | None = None  # the binlog position of its first event
        self.transactions = 0
        self.end: tuple[str, int] | None = None
        self.since: float | None = None  # when its first transaction came
        self.newest_commit_ms: int | None = None


def stream(capture: MysqlCapture, config: CaptureConfig, binlog_file: str, position: int,
           stop: threading.Event | None = None) -> tuple[str, int]:
    """Write the binlog from a position to files; returns the position after the last commit.
    With stop (--follow): block at the binlog's end, write a file at the latest max_wait_seconds after
    its first transaction came or when asked (SIGUSR1, roll_requests.py), until stop is set (SIGTERM)."""
    pending = _PendingFile()
    progress = FollowProgress()
    pages = capture.pages
    key_columns = {table: info.primary_key for table, info in capture.tables.items()}

    def save() -> None:
        write_state(config.state, capture_state(capture, binlog_file, position, progress.as_state() if stop else None))

    def flush() -> None:
        nonlocal binlog_file, position, pending
        if pending.end is None:
            return
        if pending.events:
            capture.output.write_lines("mysql", _position_name(*pending.first), _position_name(*pending.end),
                                       pending.events)
            capture.summary.files += 1
        changes = pending.changes
        capture.summary.events += changes
        capture.summary.transactions += pending.transactions
        progress.written(changes, pending.transactions, f"{pending.end[0]}:{pending.end[1]}", pending.newest_commit_ms)
        # Only now, with the file on disk, may capture move past these transactions.
        binlog_file, position = pending.end
        save()
        pending = _PendingFile()

    heartbeat = min(config.max_wait_seconds, 1.0) if stop is not None else None
    if stop is not None:
        # A request waits for the next transaction or heartbeat at most, once one is held.
        REQUESTS.holding = lambda: pending.end is not None
    try:
        for transaction, end_file, end_position in capture.transactions(binlog_file, position, heartbeat):
            now = time.monotonic()
            if transaction is not None:
                processed_ms = int(time.time() * 1000)
                for table, reason in transaction.read_again.items():
                    pages.request_once(TableSnapshot(table, reason), log, met_in_stream=True)
                if pages.open is not None or transaction.watermarks:  # else nothing in it can matter to a page
                    events = change_events(transaction, processed_ms)
                    watch_transaction(pages, events, transaction.watermarks, key_columns)
                    lines, changes = [orjson.dumps(event) for event in events], change_event_count(events)
                else:
                    lines, changes = change_lines(transaction, processed_ms)
                pending.first = pending.first or first_position(transaction)
                pending.events.extend(lines)
                pending.changes += changes
                pending.transactions += bool(transaction.changes)
                pending.end = (end_file, end_position)
                pending.since = pending.since or now
                if lines:  # a transaction of other tables lands nothing (postgres_stream.py _roll)
                    pending.newest_commit_ms = transaction.commit_ts_ms or pending.newest_commit_ms
            asked = stop is not None and REQUESTS.take()
            if asked or len(pending.events) >= config.max_changes_per_file or (
                    stop is not None and pending.since is not None and now - pending.since >= config.max_wait_seconds):
                flush()
            if asked:
                REQUESTS.answer()
            if (page := pages.ready()) is not None:
                # The stream has passed the page's high watermark: its window's changes first, then the page.
                flush()
                write_page(capture, page, int(time.time() * 1000))
                save()
            if pages.open is None:
                open_next_page(capture)  # an online snapshot's next page, between the stream's transactions
            if stop is not None:
                if progress.line_due(config.progress_seconds):
                    log.info("%s", progress_line(capture, config, progress, binlog_file, position))
                if stop.is_set():
                    break
        flush()
    finally:
        # Also when the connection is lost: a run asking meanwhile waits for nothing.
        REQUESTS.holding = lambda: False
    if stop is not None:
        log.info("%s", progress_line(capture, config, progress, binlog_file, position))
        stopped_status(config.state)
    return binlog_file, position


def progress_line(capture: MysqlCapture, config: CaptureConfig, progress: FollowProgress, binlog_file: str,
                  position: int) -> str:
    """The progress line, and the same figures in the status file (output.write_status)."""
    server = capture.server_position()
    behind, behind_bytes = capture.behind(server, binlog_file, position)
    name = f"binlog {config.host}:{config.port}"
    write_status(config.state, progress.status(name, f"{server[0]}:{server[1]}" if server else None, behind_bytes,
                                               capture.pages.state()))
    return progress.line(name, behind)


def capture_state(capture: MysqlCapture, binlog_file: str, position: int, following: dict[str, Any] | None = None) -> dict[str, Any]:
    """The state file's content: where the written log ends, the columns it has, and the online snapshots under way."""
    return {"snapshot_done": True, "file": binlog_file, "pos": position, "server_id": capture.config.server_id,
            "columns": capture.known_columns, "keys": capture.known_keys,
            "types": capture.known_types, "foreign_keys": keys_to_state(capture.foreign_keys),
            "tables": list(capture.config.tables), "snapshots": capture.pages.state(),
            **({"following": following} if following else {})}
