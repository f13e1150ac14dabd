"""Capture from a MariaDB/MySQL row-based binlog into Debezium-compatible JSON files.

    MYSQL_PWD=... cdc-capture-mysql --host db --user cdc --tables shop.accounts,shop.orders \
        --out inbox --state capture-state.json

The server needs `log_bin`, `binlog_format=ROW`, `binlog_row_image=FULL` and
`binlog_row_metadata=FULL` (column names in the binlog), and the user REPLICATION SLAVE,
REPLICATION CLIENT and SELECT on the captured tables.

First run: a consistent snapshot (`START TRANSACTION WITH CONSISTENT SNAPSHOT`) and the binlog
position it corresponds to (MariaDB's `binlog_snapshot_file/position`, taken without a lock;
on MySQL a brief `FLUSH TABLES WITH READ LOCK`); every row of the captured tables is written
as a snapshot read (`op: r`) at that position, and streaming starts there. Then (and on every
later run) it reads the binlog from the stored position, writes whole committed transactions
to a file, and only after the file is on disk stores the position after the last commit it
holds: a capture killed at any point resumes without loss (python_jobs/capture/output.py says why
repeats are harmless). With --follow it keeps the binlog dump open (blocking, with the server's
heartbeat) and writes a file at the latest --max-wait-seconds after its first transaction.

Positions: `source.file`/`source.pos` are the binlog file and the start of the rows event,
`source.row` the row within it, so every row change of a key has its own position, in log
order, also inside one transaction.

With --snapshot online the first snapshot is read in pages while the binlog streams, between
watermark rows the capture writes into a signal table (needs INSERT on it); tables added to
--tables and cdc-snapshot requests are always read so (docs/online_snapshots.md).

This module is the command; mysql_server.py holds everything it asks of the server,
mysql_stream.py the stream, mysql_pages.py the online snapshots' pages, mysql_events.py what a row
change becomes.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from python_jobs.capture.freed_memory import keep_freed_memory
from python_jobs.capture.log_continues import REPLACED_THROUGH, check_log_continues, mysql_position, mysql_written
from python_jobs.capture.mysql_cascades import resume_cascades
from python_jobs.capture.mysql_pages import (
    SIGNAL_TABLE,
    check_signal_table,
    open_next_page,
    read_added_tables,
    take_snapshot_requests,
)
from python_jobs.capture.mysql_server import MysqlCapture
from python_jobs.capture.mysql_snapshot import READ_AS_STORED
from python_jobs.capture.output import (
    CaptureError,
    CaptureSummary,
    lost_connection,
    lost_connection_status,
    read_state,
    run_command,
    stop_on_signals,
    write_state,
)
from python_jobs.capture.mysql_stream import capture_state, stream
from python_jobs.capture.reconnect import follow_with_reconnects
from python_jobs.capture.roll_requests import REQUESTS
from python_jobs.capture.snapshot_pages import Pages, TableSnapshot

log = logging.getLogger("cdc_merge.capture")

_QUALIFIED_TABLE = re.compile(r"^[A-Za-z0-9_$]+\.[A-Za-z0-9_$]+$")


@dataclass(frozen=True)
class CaptureConfig:
    host: str
    port: int
    user: str
    password: str
    tables: tuple[str, ...]
    out: Path
    state: Path
    # Unique among the server's replicas: the binlog dump registers as a replica with it.
    server_id: int = 5_491
    max_changes_per_file: int = 10_000
    follow: bool = False
    # With follow: the longest a received change waits before its file is written; a progress line's interval.
    max_wait_seconds: float = 1.0
    progress_seconds: float = 5.0
    # Take a new snapshot that replaces what the mirrors hold: consistent, a truncate before its rows;
    # online, each page's range record removes the rows the source no longer has.
    resnapshot: bool = False
    # The first snapshot and a resnapshot: "consistent" (one transaction) or "online" (in pages while the
    # binlog streams: mysql_pages.py); tables added later are always read online. Watermarks go into
    # signal_table.
    snapshot_mode: str = "consistent"
    page_rows: int = 10_000
    snapshot_rows_per_second: float | None = None
    signal_table: str = SIGNAL_TABLE

    @property
    def connection_settings(self) -> dict[str, Any]:
        return {"host": self.host, "port": self.port, "user": self.user, "password": self.password, "charset": "utf8mb4",
                "init_command": READ_AS_STORED}


def run(config: CaptureConfig) -> CaptureSummary:
    import pymysql

    try:
        return _run(config)
    except (pymysql.err.OperationalError, pymysql.err.InterfaceError) as error:
        if _is_lost_connection(error):
            raise lost_connection(f"{config.host}:{config.port}", error, f"the binlog position in {config.state}") from None
        raise CaptureError(f"{config.user}@{config.host}:{config.port} refused: {error}") from None


# Error codes of a connection that broke or could not be made again (CR_CONN_HOST_ERROR,
# CR_SERVER_GONE_ERROR, CR_SERVER_LOST, CR_SERVER_LOST_EXTENDED), or of a server shutting down
# (ER_SERVER_SHUTDOWN, ER_CONNECTION_KILLED).
_CONNECTION_LOST = {2003, 2006, 2013, 2055, 1053, 1927}


def _run(config: CaptureConfig) -> CaptureSummary:
    if config.follow:
        REQUESTS.install()  # cdc-run's request for a file before each run (roll_requests.py)
    capture = MysqlCapture(config)
    try:
        state = read_state(config.state)
        capture.pages = Pages([entry for entry in state.get("snapshots") or () if entry["table"] in config.tables])
        if config.resnapshot or not state.get("snapshot_done"):
            binlog_file, position = _take_snapshot(capture, config, state)
        else:
            binlog_file, position = state["file"], int(state["pos"])
            capture.known_columns.update(state.get("columns") or {})
            capture.known_keys.update(state.get("keys") or {})
            capture.known_types.update(state.get("types") or {})
            resume_cascades(capture, state.get("foreign_keys"))  # the keys of the position (mysql_cascades.py)
            _check_binlog_still_there(capture, binlog_file, config.state)
            # States written before tables were recorded name them by their columns.
            read_added_tables(capture, state.get("tables") or list(state.get("columns") or {}) or None)
        if capture.pages.snapshots:
            check_signal_table(capture.page_connection(), config.signal_table, config.user)
            capture.signal_checked = True
            write_state(config.state, capture_state(capture, binlog_file, position))
        if config.follow:
            _follow(capture, config, binlog_file, position, stop_on_signals())
        else:
            _catch_up(capture, config, binlog_file, position)
    finally:
        capture.close()
    log.info("%s", capture.summary.line(f"binlog {config.host}:{config.port}"))
    return capture.summary


def _take_snapshot(capture: MysqlCapture, config: CaptureConfig, state: dict[str, Any]) -> tuple[str, int]:
    """The first snapshot, or with --resnapshot a new one, which replaces the mirrors' rows (in one
    transaction after a truncate, or online: each page's range record removes the rows the source no
    longer has); returns the binlog position streaming starts from."""
    # A rerun of a --resnapshot that died half way replaces the mirrors' rows too.
    replaces_mirrors = config.resnapshot or bool(state.get("resnapshot"))
    written = mysql_written(state) if replaces_mirrors else None
    if written is not None:
        now_file, now_position = capture.binlog_end()
        check_log_continues(f"MariaDB/MySQL ({config.host}:{config.port})", written[0], written[1],
                            mysql_position(now_file, now_position), f"{now_file}:{now_position}", config.state)
    resnapshot_state = {"resnapshot": True, **({REPLACED_THROUGH: written[1]} if written else {})}
    if config.snapshot_mode == "online":
        check_signal_table(capture.page_connection(), config.signal_table, config.user)
        capture.signal_checked = True
        binlog_file, position = capture.binlog_end()
        capture.pages = Pages()
        reason = "a new snapshot (--resnapshot)" if replaces_mirrors else "first snapshot"
        for table in config.tables:
            capture.pages.request(TableSnapshot(table, reason))
        log.info("binlog at %s:%d: reading %s%s online, in pages", binlog_file, position, ", ".join(config.tables),
                 " again" if replaces_mirrors else "")
        write_state(config.state, capture_state(capture, binlog_file, position))
        return binlog_file, position
    if replaces_mirrors:
        write_state(config.state, resnapshot_state)
    binlog_file, position = capture.snapshot(replaces_mirrors)
    capture.pages = Pages()
    write_state(config.state, capture_state(capture, binlog_file, position))
    log.info("snapshot of %s at %s:%d done", ", ".join(config.tables), binlog_file, position)
    return binlog_file, position


def _catch_up(capture: MysqlCapture, config: CaptureConfig, binlog_file: str, position: int) -> None:
    """Stream the binlog to its end, and on until the online snapshots' pages are read and written
    (a page's watermarks are in the binlog before it opens, so the next pass meets them)."""
    passes_without_watermark = 0
    while True:
        open_before = capture.pages.open
        binlog_file, position = stream(capture, config, binlog_file, position)
        if capture.pages.open is None:
            take_snapshot_requests(capture)
            if not capture.pages.snapshots:
                return
            if not open_next_page(capture):
                time.sleep(0.05)  # --snapshot-rows-per-second: the next page waits for its turn
            passes_without_watermark = 0
        elif capture.pages.open is open_before:
            passes_without_watermark += 1
            if passes_without_watermark > 100:
                raise CaptureError(
                    f"an online snapshot's watermarks in {config.signal_table} do not come through the binlog: is "
                    "its database left out of the binlog (binlog_do_db, binlog_ignore_db)?")
            time.sleep(0.05)


def _follow(capture: MysqlCapture, config: CaptureConfig, binlog_file: str, position: int, stop: threading.Event) -> None:
    """stream() until stop is set, connecting again after the server restarts or the network breaks
    (reconnect.py), each time from the position the state file says was written last."""

    def follow() -> None:
        nonlocal binlog_file, position
        capture.connection.ping(reconnect=True)
        binlog_file, position = stream(capture, config, binlog_file, position, stop)

    def lost(error: BaseException) -> str | None:
        nonlocal binlog_file, position
        if not _is_lost_connection(error):
            return None
        state = read_state(config.state)
        binlog_file, position = state["file"], int(state["pos"])
        resume_cascades(capture, state.get("foreign_keys"))
        capture.pages.abandon()  # its watermarks may be lost with the connection: read again
        detail = " ".join(str(error).split()) or type(error).__name__
        lost_connection_status(config.state, detail)
        return detail

    follow_with_reconnects(follow, lost, stop, f"{config.host}:{config.port}")


def _is_lost_connection(error: BaseException) -> bool:
    import pymysql

    return isinstance(error, pymysql.err.InterfaceError) or (
        isinstance(error, pymysql.err.OperationalError) and bool(error.args) and error.args[0] in _CONNECTION_LOST)


def _check_binlog_still_there(capture: MysqlCapture, binlog_file: str, state_path: Path) -> None:
    with capture.connection.cursor() as cursor:
        cursor.execute("show binary logs")
        files = {row[0] for row in cursor.fetchall()}
    if binlog_file not in files:
        raise CaptureError(
            f"binlog {binlog_file} is purged, so the changes since the last capture are lost to it: run the "
            "capture once with --resnapshot, which takes a new snapshot that replaces what the mirrors hold of these "
            "tables (rows deleted meanwhile go too)"
        )


def parse_args(argv: Sequence[str] | None) -> CaptureConfig:
    parser = argparse.ArgumentParser(
        description="Capture MariaDB/MySQL binlog changes as Debezium JSON files (password from MYSQL_PWD)."
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=3306)
    parser.add_argument("--user", required=True, help="needs REPLICATION SLAVE, REPLICATION CLIENT, SELECT")
    parser.add_argument("--tables", required=True, help="comma-separated database.table list")
    parser.add_argument("--out", required=True, help="folder the landing job reads")
    parser.add_argument("--state", required=True, help="state file (snapshot done, binlog position)")
    parser.add_argument("--server-id", type=int, default=5_491, help="replica id, unique among the server's replicas")
    parser.add_argument("--max-changes-per-file", type=int, default=10_000)
    parser.add_argument("--resnapshot", action="store_true",
                        help="take a new snapshot that replaces what the mirrors hold of these tables: after the "
                             "binlog to resume from was purged, or to start over")
    parser.add_argument("--snapshot", choices=("consistent", "online"), default="consistent",
                        help="the first snapshot (and a --resnapshot): in one consistent-snapshot transaction "
                             "(consistent), or in pages of each table while the binlog streams (online; "
                             "docs/online_snapshots.md)")
    parser.add_argument("--snapshot-page-rows", type=int, default=10_000, help="rows per page of an online snapshot")
    parser.add_argument("--snapshot-rows-per-second", type=float, help="an online snapshot reads at most this many rows a second")
    parser.add_argument("--signal-table", default=SIGNAL_TABLE,
                        help="database.table the capture writes online snapshots' watermarks into (needs INSERT)")
    parser.add_argument("--follow", action="store_true", help="keep streaming until SIGTERM; default: stop when caught up")
    parser.add_argument("--max-wait-seconds", type=float, default=1.0,
                        help="with --follow: the longest a change waits before its file is written")
    parser.add_argument("--progress-seconds", type=float, default=5.0, help="with --follow: seconds between progress lines")
    args = parser.parse_args(argv)
    tables = tuple(table.strip() for table in args.tables.split(",") if table.strip())
    for table in tables:
        if not _QUALIFIED_TABLE.match(table):
            parser.error(f"--tables: {table!r} is not database.table")
    if args.max_changes_per_file < 1:
        parser.error("--max-changes-per-file must be positive")
    if args.max_wait_seconds <= 0 or args.progress_seconds <= 0:
        parser.error("--max-wait-seconds and --progress-seconds must be positive")
    if not 1 <= args.server_id < 2**32:
        parser.error("--server-id must be between 1 and 4294967295")
    if args.snapshot_page_rows < 1 or (args.snapshot_rows_per_second is not None and args.snapshot_rows_per_second <= 0):
        parser.error("--snapshot-page-rows and --snapshot-rows-per-second must be positive")
    if not _QUALIFIED_TABLE.match(args.signal_table):
        parser.error(f"--signal-table: {args.signal_table!r} is not database.table")
    return CaptureConfig(
        host=args.host, port=args.port, user=args.user, password=os.environ.get("MYSQL_PWD", ""),
        tables=tables, out=Path(args.out), state=Path(args.state), server_id=args.server_id,
        max_changes_per_file=args.max_changes_per_file, follow=args.follow,
        max_wait_seconds=args.max_wait_seconds, progress_seconds=args.progress_seconds, resnapshot=args.resnapshot,
        snapshot_mode=args.snapshot, page_rows=args.snapshot_page_rows,
        snapshot_rows_per_second=args.snapshot_rows_per_second, signal_table=args.signal_table,
    )


def main(argv: Sequence[str] | None = None) -> int:
    keep_freed_memory()  # each file's memory kept for the next file's events (freed_memory.py)
    return run_command("cdc-capture-mysql", run, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
