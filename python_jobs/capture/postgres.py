"""Capture from PostgreSQL logical decoding (wal2json) into Debezium-compatible JSON files.

    cdc-capture-postgres --dsn "host=db dbname=shop user=cdc" --tables shop.accounts,shop.orders \
        --slot cdc_merge --out inbox --state capture-state.json

First run: creates the replication slot and, in the same step, exports its snapshot; every
row of the captured tables is read in that snapshot and written as a snapshot read (`op: r`)
at the slot's consistent point, so snapshot + stream is exactly the table's history from
there. Then (and on every later run) it peeks whole transactions from the slot, writes them
to a file, and only after the file is on disk consumes them from the slot: a capture killed
at any point resumes from the slot without loss (python_jobs/capture/output.py says why repeats
are harmless). With --follow it streams instead, over the replication protocol
(postgres_stream.py). The server needs `wal_level=logical` and the wal2json output plugin.

This module is the command and all its database I/O; postgres_events.py holds what the
slot's changes become.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from python_jobs import crash_points
from python_jobs.capture.output import (
    CaptureError,
    CaptureSummary,
    OutputFolder,
    change_event_count,
    lost_connection,
    read_state,
    run_command,
    stop_on_signals,
    write_state,
)
from python_jobs.capture.postgres_events import (
    DECODING_OPTIONS,
    TableShape,
    Transaction,
    change_events,
    lsn_text,
    transactions,
)
from python_jobs.capture.postgres_columns import MESSAGE_PREFIX, CatalogColumn, ColumnAdditions, read_catalog
from python_jobs.capture.postgres_connection import connect, dsn_settings, dsn_without_secrets
from python_jobs.capture.postgres_pages import PageWatch, open_next_page, read_added_tables, write_page
from python_jobs.capture.postgres_snapshot import take_snapshot
from python_jobs.capture.postgres_stream import PostgresStream
from python_jobs.capture.reconnect import follow_with_reconnects
from python_jobs.capture.snapshot_pages import Pages, TableSnapshot
from python_jobs.formats.wal2json import parse_lsn

log = logging.getLogger("cdc_merge.capture")

HEARTBEAT_PREFIX = "cdc_merge.heartbeat"
_QUALIFIED_TABLE = re.compile(r"^[a-z_][a-z0-9_$]*\.[a-z_][a-z0-9_$]*$")
_SLOT_NAME = re.compile(r"^[a-z0-9_]{1,63}$")


@dataclass(frozen=True)
class CaptureConfig:
    dsn: str
    tables: tuple[str, ...]
    slot: str
    out: Path
    state: Path
    max_changes_per_file: int = 10_000
    follow: bool = False
    # With follow: the longest a received change waits before its file is written; a progress line's interval.
    max_wait_seconds: float = 1.0
    progress_seconds: float = 5.0
    # Drop the slot and take a new snapshot that replaces what the mirrors hold (a truncate before its rows).
    resnapshot: bool = False
    # The first snapshot: "exported" (one transaction, at the slot's consistent point) or "online" (in
    # pages while the stream goes on: snapshot_pages.py); tables added later are always read online.
    snapshot_mode: str = "exported"
    page_rows: int = 10_000
    snapshot_rows_per_second: float | None = None
    # A heartbeat message into the log this often while following (and once per run without
    # --follow), so the slot advances even when no captured table changes (docs/online_snapshots.md).
    heartbeat_seconds: float = 60.0


class PostgresCapture:
    """All database I/O of the capture: the slot, the snapshot, and peek/consume."""

    def __init__(self, config: CaptureConfig) -> None:
        import psycopg2

        self.config = config
        self.output = OutputFolder(config.out)
        self.summary = CaptureSummary()
        # The state as last written; its written_lsn is the last commit already in a file.
        self.state: dict = {}
        try:
            self.connection = self._connect()
        except psycopg2.Error as error:
            detail = " ".join(str(error).split())
            raise CaptureError(
                f"cannot connect to PostgreSQL ({dsn_without_secrets(config.dsn)}): {detail}; check --dsn, and the "
                "password in PGPASSWORD (or ~/.pgpass)"
            ) from None
        with self.connection.cursor() as cursor:
            cursor.execute("select current_database(), current_setting('wal_level')")
            self.database, wal_level = cursor.fetchone()
        if wal_level != "logical":
            raise CaptureError(f"wal_level is {wal_level}: set wal_level = logical on the server and restart it")
        self.catalog = self.read_catalog()
        # Columns added to the tables while capturing (postgres_columns.py); from the state, in _run.
        self.additions = ColumnAdditions()
        # Tables being read in pages while the stream goes on (snapshot_pages.py); from the state, in _run.
        self.pages = Pages()
        self.tables_gone: set[str] = set()

    def _connect(self) -> Any:
        connection = connect(self.config.dsn)
        connection.autocommit = True
        with connection.cursor() as cursor:
            cursor.execute("set timezone = 'UTC'")
        return connection

    def read_catalog(self, connection: Any = None) -> dict[str, list[CatalogColumn]]:
        """The captured tables' columns, as of now or as of the snapshot connection's snapshot; each
        table must exist and have a primary key (checked before the slot is made)."""
        catalog = read_catalog(connection or self.connection, self.config.tables)
        for table in self.config.tables:
            if table not in catalog:
                raise CaptureError(f"table {table} does not exist in database {self.database} (or the user cannot read it)")
            if not any(column.in_primary_key for column in catalog[table]):
                raise CaptureError(f"table {table} has no primary key: a mirror needs one to merge on; add one, or "
                                   "leave the table out of --tables")
        return catalog

    def slot_exists(self) -> bool:
        with self.connection.cursor() as cursor:
            cursor.execute("select plugin from pg_replication_slots where slot_name = %s", (self.config.slot,))
            row = cursor.fetchone()
        if row and row[0] != "wal2json":
            raise CaptureError(f"replication slot {self.config.slot} uses plugin {row[0]}, not wal2json")
        return row is not None

    def create_slot(self) -> int:
        """The slot alone, for a snapshot read online afterwards; its consistent point."""
        with self.connection.cursor() as cursor:
            cursor.execute("select lsn::text from pg_create_logical_replication_slot(%s, 'wal2json')", (self.config.slot,))
            return parse_lsn(cursor.fetchone()[0])

    def drop_slot(self) -> None:
        with self.connection.cursor() as cursor:
            cursor.execute("select pg_drop_replication_slot(%s)", (self.config.slot,))

    def snapshot(self, replaces_mirrors: bool = False) -> int:
        """Create the slot and write every row as of its consistent point (postgres_snapshot.py)."""
        return take_snapshot(self, replaces_mirrors)

    def _decoding_options(self) -> list[str]:
        options = {**DECODING_OPTIONS, "add-tables": ",".join(self.config.tables)}
        return [text for option in options.items() for text in option]

    def follow(self, stop: threading.Event) -> None:
        """Stream the slot's changes until stop is set (postgres_stream.py), connecting again after
        the server restarts or the network breaks (reconnect.py)."""
        options = dict(zip(self._decoding_options()[::2], self._decoding_options()[1::2]))

        def stream() -> None:
            if self.connection.closed:
                self.connection = self._connect()
            PostgresStream(self, {**options, "include-xids": "true"}, self.config.max_wait_seconds,
                           self.config.progress_seconds, stop, self.config.heartbeat_seconds).run()

        def lost(error: BaseException) -> str | None:
            detail = lost_connection_detail(error)
            if detail is not None:
                self.pages.abandon()  # its watermarks may be lost with the connection: read again
                if not self.connection.closed:
                    self.connection.close()
            return detail

        follow_with_reconnects(stream, lost, stop, f"PostgreSQL ({dsn_without_secrets(self.config.dsn)})")

    def emit_heartbeat(self) -> None:
        """A message in the log the slot streams: once the stream passes it, the capture confirms its
        commit, so the slot's position advances past WAL no captured table wrote (other tables, other
        databases of the server), which PostgreSQL would otherwise keep for the slot."""
        with self.connection.cursor() as cursor:
            cursor.execute("select pg_logical_emit_message(true, %s, '')", (HEARTBEAT_PREFIX,))

    def stream_once(self) -> int:
        """Move one file's worth of whole transactions from the slot to a file; returns how many."""
        options = self._decoding_options()
        placeholders = ", ".join(["%s"] * len(options))
        with self.connection.cursor() as cursor:
            cursor.execute(
                f"select lsn::text, xid::text::bigint, data from pg_logical_slot_peek_changes(%s, null, %s, {placeholders})",
                (self.config.slot, self.config.max_changes_per_file, *options),
            )
            peeked = list(transactions(cursor.fetchall()))
        if not peeked:
            return 0
        last_commit = self.write_transactions(peeked)
        # Only now, with the file on disk, may the slot forget these transactions.
        with self.connection.cursor() as cursor:
            cursor.execute(
                f"select count(*) from pg_logical_slot_get_changes(%s, %s::pg_lsn, null, {placeholders})",
                (self.config.slot, lsn_text(last_commit), *options),
            )
        return len(peeked)

    def write_transactions(self, committed: list[Transaction], following: dict | None = None) -> int:
        """The transactions not yet in a file, as one durable file, recorded in the state; returns the
        last commit's LSN, which the caller may then confirm to the slot (and not before)."""
        # A capture stopped between its file and the slot's confirm sees these transactions again.
        written_through = parse_lsn(self.state["written_lsn"]) if self.state.get("written_lsn") else 0
        unwritten = [tx for tx in committed if tx.commit_lsn > written_through]
        processed_ms = int(time.time() * 1000)
        # Read again: an ALTER TABLE since the last file adds, renames or drops columns. A table
        # dropped meanwhile has no more changes; the others go on (a restart asks for --tables without it).
        self.catalog = read_catalog(self.connection, self.config.tables)
        for table in sorted(set(self.config.tables) - set(self.catalog) - self.tables_gone):
            log.warning("%s is gone from database %s: its changes end here; leave it out of --tables", table, self.database)
            self.tables_gone.add(table)
        noticed = self.additions.notice(self.catalog)
        shapes = {table: TableShape(frozenset(column.name for column in columns),
                                    frozenset(column.name for column in columns if column.toastable))
                  for table, columns in self.catalog.items()}
        watch = PageWatch(self.pages)
        events = [event for tx in unwritten for event in change_events(tx, self.database, shapes, processed_ms,
                                                                       self.additions, watch)]
        last_commit = committed[-1].commit_lsn
        if events:
            first = events[0]["source"]["lsn"]
            self.output.write(f"pg-{self.config.slot}", f"{first:016X}", f"{last_commit:016X}", events)
            self.summary.files += 1
            self.summary.events += change_event_count(events)
        page = self.pages.ready()
        if page is not None:
            write_page(self, page, processed_ms)
        if unwritten or page is not None:
            # following: a streaming capture's figures (output.FollowProgress), for whoever watches it.
            self.write_state({**self.state, "written_lsn": lsn_text(last_commit), "columns": self.additions.state(),
                              "snapshots": self.pages.state(), **({"following": following} if following else {})})
        self.summary.transactions += len(unwritten)
        self.mark_additions({table: columns for table, columns in noticed.items() if table in self.additions.pending})
        crash_points.crash_point("capture-before-confirm")
        return last_commit

    def mark_additions(self, noticed: dict[str, list[str]]) -> None:
        """A logical message after the ALTER TABLEs of columns noticed but not yet carried by a change, at
        which their schema change events are written if no change carries them first (postgres_columns.py)."""
        if noticed:
            with self.connection.cursor() as cursor:
                cursor.execute("select pg_logical_emit_message(true, %s, %s)", (MESSAGE_PREFIX, json.dumps(noticed)))

    def write_state(self, state: dict) -> None:
        write_state(self.config.state, state)
        self.state = state

    def close(self) -> None:
        self.connection.close()


# SQLSTATEs of a server going away or not back yet (admin or crash shutdown, starting up), and of the
# slot still held by the walsender of a connection that broke: waited out by a following capture.
_RETRIED_SQLSTATES = ("57P01", "57P02", "57P03", "55006")


def lost_connection_detail(error: BaseException) -> str | None:
    """What broke, when error is a lost connection (or one not made again yet); None for anything else."""
    import psycopg2

    if not isinstance(error, (psycopg2.DatabaseError, psycopg2.InterfaceError)):
        return None
    # An error the server sent has its SQLSTATE; a broken connection ("server closed the connection
    # unexpectedly", "no COPY in progress" once the stream is cut) has none.
    code = getattr(error, "pgcode", None)
    if code is None or code.startswith("08") or code in _RETRIED_SQLSTATES:
        return " ".join(str(error).split()) or type(error).__name__
    return None


def run(config: CaptureConfig) -> CaptureSummary:
    import psycopg2

    try:
        return _run(config)
    except (psycopg2.DatabaseError, psycopg2.InterfaceError) as error:
        where = f"PostgreSQL ({dsn_without_secrets(config.dsn)})"
        if lost_connection_detail(error) is None:
            raise CaptureError(f"{where} refused: {' '.join(str(error).split())}") from None
        raise lost_connection(where, error, f"replication slot {config.slot}") from None


def _run(config: CaptureConfig) -> CaptureSummary:
    capture = PostgresCapture(config)
    try:
        state = read_state(config.state)
        if state and state.get("slot") != config.slot:
            raise CaptureError(f"{config.state} belongs to slot {state.get('slot')}, not {config.slot}")
        capture.state = state
        capture.additions = ColumnAdditions.from_state(state)
        capture.pages = Pages([entry for entry in state.get("snapshots") or () if entry["table"] in config.tables])
        if config.resnapshot or not state.get("snapshot_done"):
            _take_snapshot(capture, config, state)
        elif not capture.slot_exists():
            raise CaptureError(
                f"replication slot {config.slot} is gone, so the changes since the last capture are lost to it: "
                "run the capture once with --resnapshot, which takes a new snapshot that replaces what the mirrors "
                "hold of these tables (rows deleted meanwhile go too)"
            )
        else:
            read_added_tables(capture)
        if config.follow:
            capture.follow(stop_on_signals())
        else:
            _catch_up(capture)
    finally:
        if not capture.connection.closed:
            capture.close()
    log.info("%s", capture.summary.line(f"slot {config.slot}"))
    return capture.summary


def _catch_up(capture: PostgresCapture) -> None:
    """Stream what the slot holds, reading the pages of online snapshots between the stream's files,
    until there is nothing left of either: a run without --follow ends with its snapshots read, and
    the slot confirmed at least to where the run began (its heartbeat)."""
    capture.emit_heartbeat()
    waited = 0
    while True:
        moved = capture.stream_once()
        if moved or (capture.pages.open is None and open_next_page(capture)):
            waited = 0
            continue
        if capture.pages.open is None:
            if not capture.pages.snapshots:
                return
            time.sleep(0.05)  # --snapshot-rows-per-second: the next page waits for its turn
            continue
        # A page's high watermark is committed before it opens, so the slot has it at once.
        waited += 1
        if waited > 200:
            raise CaptureError("an online snapshot's page waits for its watermark in the slot, which does not come")
        time.sleep(0.05)


def _take_snapshot(capture: PostgresCapture, config: CaptureConfig, state: dict) -> None:
    """The first snapshot, or with --resnapshot a new one. The state says a snapshot began before the
    slot is made, so a slot this capture did not make is never dropped unasked."""
    if capture.slot_exists():
        if not (config.resnapshot or state.get("snapshot_started")):
            raise CaptureError(
                f"replication slot {config.slot} already exists, and {config.state} does not say this capture "
                f"made it (a new or another state file), so nothing was done: dropping it would lose the changes "
                f"it holds. If the slot is this pipeline's, run with the --state file it was made with; to start "
                f"over, run once with --resnapshot, which drops the slot and takes a new snapshot that replaces what "
                f"the mirrors hold of these tables"
            )
        capture.drop_slot()  # asked for, or made by this capture, which died during its snapshot
    capture.write_state({"slot": config.slot, "snapshot_started": True, **({"resnapshot": True} if config.resnapshot else {})})
    capture.additions = ColumnAdditions()
    if config.snapshot_mode == "online" and not (config.resnapshot or state.get("resnapshot")):
        position = capture.create_slot()
        capture.additions.notice(capture.catalog)
        capture.pages = Pages()
        for table in config.tables:
            capture.pages.request(TableSnapshot(table, "first snapshot"))
        log.info("slot %s made at %s: reading %s online, in pages", config.slot, lsn_text(position), ", ".join(config.tables))
    else:
        position = capture.snapshot(replaces_mirrors=config.resnapshot or bool(state.get("resnapshot")))
        capture.additions.notice(capture.catalog)  # the columns as of the snapshot
        log.info("snapshot of %s at %s done", ", ".join(config.tables), lsn_text(position))
    capture.write_state({"slot": config.slot, "snapshot_lsn": lsn_text(position), "snapshot_done": True,
                         "columns": capture.additions.state(), "tables": list(config.tables),
                         "snapshots": capture.pages.state()})


def parse_args(argv: list[str] | None) -> CaptureConfig:
    parser = argparse.ArgumentParser(description="Capture PostgreSQL changes (wal2json) as Debezium JSON files.")
    parser.add_argument("--dsn", required=True, help="libpq connection string of a user with REPLICATION, without "
                        "the password: put it in PGPASSWORD or ~/.pgpass (a command line is visible to every user)")
    parser.add_argument("--tables", required=True, help="comma-separated schema.table list")
    parser.add_argument("--slot", default="cdc_merge", help="logical replication slot (created on first run)")
    parser.add_argument("--out", required=True, help="folder the landing job reads")
    parser.add_argument("--state", required=True, help="state file (snapshot done, slot)")
    parser.add_argument("--max-changes-per-file", type=int, default=10_000)
    parser.add_argument("--resnapshot", action="store_true",
                        help="drop the slot (if any) and take a new snapshot that replaces what the mirrors hold of these "
                             "tables: after the slot was lost, or to start over")
    parser.add_argument("--snapshot", choices=("exported", "online"), default="exported",
                        help="the first snapshot: in one transaction at the slot's start (exported), or in pages of each "
                             "table while the changes stream (online; docs/online_snapshots.md)")
    parser.add_argument("--snapshot-page-rows", type=int, default=10_000, help="rows per page of an online snapshot")
    parser.add_argument("--snapshot-rows-per-second", type=float, help="an online snapshot reads at most this many rows a second")
    parser.add_argument("--follow", action="store_true", help="keep streaming until SIGTERM; default: stop when caught up")
    parser.add_argument("--max-wait-seconds", type=float, default=1.0,
                        help="with --follow: the longest a change waits before its file is written")
    parser.add_argument("--progress-seconds", type=float, default=5.0, help="with --follow: seconds between progress lines")
    parser.add_argument("--heartbeat-seconds", type=float, default=60.0,
                        help="with --follow: seconds between heartbeat messages into the log, which let the slot advance "
                             "while no captured table changes")
    args = parser.parse_args(argv)
    tables = tuple(table.strip().lower() for table in args.tables.split(",") if table.strip())
    for table in tables:
        if not _QUALIFIED_TABLE.match(table):
            parser.error(f"--tables: {table!r} is not schema.table")
    if "password" in dsn_settings(args.dsn):
        parser.error("--dsn holds a password: remove it and set PGPASSWORD (or use ~/.pgpass); "
                     "a command line is visible to every user of the machine")
    if not _SLOT_NAME.match(args.slot):
        parser.error("--slot: lower-case letters, digits and _ only, at most 63")
    if args.max_changes_per_file < 1:
        parser.error("--max-changes-per-file must be positive")
    if args.max_wait_seconds <= 0 or args.progress_seconds <= 0 or args.heartbeat_seconds <= 0:
        parser.error("--max-wait-seconds, --progress-seconds and --heartbeat-seconds must be positive")
    if args.snapshot_page_rows < 1 or (args.snapshot_rows_per_second is not None and args.snapshot_rows_per_second <= 0):
        parser.error("--snapshot-page-rows and --snapshot-rows-per-second must be positive")
    return CaptureConfig(
        dsn=args.dsn, tables=tables, slot=args.slot, out=Path(args.out), state=Path(args.state),
        max_changes_per_file=args.max_changes_per_file, follow=args.follow,
        max_wait_seconds=args.max_wait_seconds, progress_seconds=args.progress_seconds, resnapshot=args.resnapshot,
        snapshot_mode=args.snapshot, page_rows=args.snapshot_page_rows, snapshot_rows_per_second=args.snapshot_rows_per_second,
        heartbeat_seconds=args.heartbeat_seconds,
    )


def main(argv: list[str] | None = None) -> int:
    return run_command("cdc-capture-postgres", run, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
