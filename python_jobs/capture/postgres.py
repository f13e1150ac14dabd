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
    debezium_event,
    lost_connection,
    read_state,
    run_command,
    stop_on_signals,
    write_state,
)
from python_jobs.capture.postgres_events import (
    CONNECTOR,
    DECODING_OPTIONS,
    Transaction,
    change_events,
    lsn_text,
    transactions,
)
from python_jobs.capture.postgres_stream import PostgresStream
from python_jobs.formats.wal2json import json_value, parse_lsn

log = logging.getLogger("cdc_merge.capture")

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
            self.connection = psycopg2.connect(config.dsn)
        except psycopg2.Error as error:
            detail = " ".join(str(error).split())
            raise CaptureError(
                f"cannot connect to PostgreSQL ({dsn_without_secrets(config.dsn)}): {detail}; check --dsn, and the "
                "password in PGPASSWORD (or ~/.pgpass)"
            ) from None
        self.connection.autocommit = True
        with self.connection.cursor() as cursor:
            cursor.execute("set timezone = 'UTC'")
            cursor.execute("select current_database(), current_setting('wal_level')")
            self.database, wal_level = cursor.fetchone()
        if wal_level != "logical":
            raise CaptureError(f"wal_level is {wal_level}: set wal_level = logical on the server and restart it")
        self.table_columns = self._table_columns()

    def _table_columns(self) -> dict[str, list[tuple[str, str]]]:
        columns: dict[str, list[tuple[str, str]]] = {}
        with self.connection.cursor() as cursor:
            for table in self.config.tables:
                cursor.execute(
                    "select attname, format_type(atttypid, atttypmod) from pg_attribute "
                    "where attrelid = to_regclass(%s) and attnum > 0 and not attisdropped order by attnum",
                    (table,),
                )
                found = cursor.fetchall()
                if not found:
                    raise CaptureError(f"table {table} does not exist in database {self.database}")
                columns[table] = found
        return columns

    def slot_exists(self) -> bool:
        with self.connection.cursor() as cursor:
            cursor.execute("select plugin from pg_replication_slots where slot_name = %s", (self.config.slot,))
            row = cursor.fetchone()
        if row and row[0] != "wal2json":
            raise CaptureError(f"replication slot {self.config.slot} uses plugin {row[0]}, not wal2json")
        return row is not None

    def drop_slot(self) -> None:
        with self.connection.cursor() as cursor:
            cursor.execute("select pg_drop_replication_slot(%s)", (self.config.slot,))

    def snapshot(self) -> int:
        """Create the slot and write every row as of its consistent point; returns that LSN."""
        import psycopg2
        import psycopg2.extras

        replication = psycopg2.connect(self.config.dsn, connection_factory=psycopg2.extras.LogicalReplicationConnection)
        try:
            with replication.cursor() as slot_cursor:
                # The exported snapshot lives while this connection stays idle: read everything now.
                slot_cursor.execute(f"CREATE_REPLICATION_SLOT {self.config.slot} LOGICAL wal2json EXPORT_SNAPSHOT")
                _, consistent_point, snapshot_name, _ = slot_cursor.fetchone()
                position = parse_lsn(consistent_point)
                reader = psycopg2.connect(self.config.dsn)
                try:
                    with reader.cursor() as cursor:
                        cursor.execute("begin isolation level repeatable read read only")
                        cursor.execute("set transaction snapshot %s", (snapshot_name,))
                        cursor.execute("set local timezone = 'UTC'")
                        for table in self.config.tables:
                            self._snapshot_table(cursor, table, position)
                finally:
                    reader.close()
        finally:
            replication.close()
        return position

    def _snapshot_table(self, cursor: Any, table: str, position: int) -> None:
        types = dict(self.table_columns[table])
        schema, name = table.split(".")
        source = {
            "connector": CONNECTOR, "name": "cdc_merge", "db": self.database, "schema": schema,
            "table": name, "lsn": position, "ts_ms": None, "snapshot": "true",
        }
        cursor.execute(f"select row_to_json(t)::text from {table} as t")
        part = 0
        while True:
            rows = cursor.fetchmany(self.config.max_changes_per_file)
            if not rows:
                break
            part += 1
            now_ms = int(time.time() * 1000)
            events = []
            for (row_json,) in rows:
                row = json.loads(row_json, parse_float=str, parse_int=str)
                image = {column: json_value(types[column], value) for column, value in row.items()}
                events.append(debezium_event(
                    op="r", before=None, after=image, source=source,
                    transaction_id=None, total_order=0, processed_ms=now_ms,
                ))
            self.output.write(f"pg-{self.config.slot}-snapshot-{table}", f"{position:016X}", f"{part:06d}", events)
            self.summary.files += 1
            self.summary.snapshot_rows += len(events)

    def _decoding_options(self) -> list[str]:
        options = {**DECODING_OPTIONS, "add-tables": ",".join(self.config.tables)}
        return [text for option in options.items() for text in option]

    def follow(self, stop: threading.Event) -> None:
        """Stream the slot's changes until stop is set (postgres_stream.py)."""
        options = dict(zip(self._decoding_options()[::2], self._decoding_options()[1::2]))
        PostgresStream(self, {**options, "include-xids": "true"}, self.config.max_wait_seconds,
                       self.config.progress_seconds, stop).run()

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
        # Read again: an ALTER TABLE since the last file adds or drops the columns an update may leave out.
        self.table_columns = self._table_columns()
        names = {table: [column for column, _ in columns] for table, columns in self.table_columns.items()}
        events = [event for tx in unwritten for event in change_events(tx, self.database, names, processed_ms)]
        last_commit = committed[-1].commit_lsn
        if events:
            first = events[0]["source"]["lsn"]
            self.output.write(f"pg-{self.config.slot}", f"{first:016X}", f"{last_commit:016X}", events)
            self.summary.files += 1
            self.summary.events += change_event_count(events)
        if unwritten:
            # following: a streaming capture's figures (output.FollowProgress), for whoever watches it.
            self.write_state({**self.state, "written_lsn": lsn_text(last_commit), **({"following": following} if following else {})})
        self.summary.transactions += len(unwritten)
        crash_points.crash_point("capture-before-confirm")
        return last_commit

    def write_state(self, state: dict) -> None:
        write_state(self.config.state, state)
        self.state = state

    def close(self) -> None:
        self.connection.close()


def dsn_without_secrets(dsn: str) -> str:
    """The DSN as it may be shown: every setting but the password."""
    from psycopg2.extensions import parse_dsn

    try:
        settings = parse_dsn(dsn)
    except Exception:  # noqa: BLE001 - an unparsable DSN is shown by its length only
        return f"a DSN of {len(dsn)} characters that libpq cannot parse"
    return " ".join(f"{name}={value}" for name, value in settings.items() if name != "password")


def run(config: CaptureConfig) -> CaptureSummary:
    import psycopg2

    try:
        return _run(config)
    except (psycopg2.DatabaseError, psycopg2.InterfaceError) as error:
        where = f"PostgreSQL ({dsn_without_secrets(config.dsn)})"
        # An error the server sent has its SQLSTATE; a broken connection has none.
        if getattr(error, "pgcode", None):
            raise CaptureError(f"{where} refused: {' '.join(str(error).split())}") from None
        raise lost_connection(where, error, f"replication slot {config.slot}") from None


def _run(config: CaptureConfig) -> CaptureSummary:
    capture = PostgresCapture(config)
    try:
        state = read_state(config.state)
        if state and state.get("slot") != config.slot:
            raise CaptureError(f"{config.state} belongs to slot {state.get('slot')}, not {config.slot}")
        capture.state = state
        if not state.get("snapshot_done"):
            if capture.slot_exists():  # left by a capture that died during its snapshot
                capture.drop_slot()
            position = capture.snapshot()
            capture.write_state({"slot": config.slot, "snapshot_lsn": lsn_text(position), "snapshot_done": True})
            log.info("snapshot of %s at %s done", ", ".join(config.tables), lsn_text(position))
        elif not capture.slot_exists():
            raise CaptureError(
                f"replication slot {config.slot} is gone, so changes since the last capture are lost to it: "
                f"remove {config.state} to take a new snapshot, then rebuild the mirrors with dbt run --full-refresh"
            )
        if config.follow:
            capture.follow(stop_on_signals())
        else:
            while capture.stream_once():
                pass
    finally:
        if not capture.connection.closed:
            capture.close()
    log.info("%s", capture.summary.line(f"slot {config.slot}"))
    return capture.summary


def parse_args(argv: list[str] | None) -> CaptureConfig:
    parser = argparse.ArgumentParser(description="Capture PostgreSQL changes (wal2json) as Debezium JSON files.")
    parser.add_argument("--dsn", required=True, help="libpq connection string of a user with REPLICATION, without "
                        "the password: put it in PGPASSWORD or ~/.pgpass (a command line is visible to every user)")
    parser.add_argument("--tables", required=True, help="comma-separated schema.table list")
    parser.add_argument("--slot", default="cdc_merge", help="logical replication slot (created on first run)")
    parser.add_argument("--out", required=True, help="folder the landing job reads")
    parser.add_argument("--state", required=True, help="state file (snapshot done, slot)")
    parser.add_argument("--max-changes-per-file", type=int, default=10_000)
    parser.add_argument("--follow", action="store_true", help="keep streaming until SIGTERM; default: stop when caught up")
    parser.add_argument("--max-wait-seconds", type=float, default=1.0,
                        help="with --follow: the longest a change waits before its file is written")
    parser.add_argument("--progress-seconds", type=float, default=5.0, help="with --follow: seconds between progress lines")
    args = parser.parse_args(argv)
    tables = tuple(table.strip().lower() for table in args.tables.split(",") if table.strip())
    for table in tables:
        if not _QUALIFIED_TABLE.match(table):
            parser.error(f"--tables: {table!r} is not schema.table")
    if "password" in _dsn_settings(args.dsn):
        parser.error("--dsn holds a password: remove it and set PGPASSWORD (or use ~/.pgpass); "
                     "a command line is visible to every user of the machine")
    if not _SLOT_NAME.match(args.slot):
        parser.error("--slot: lower-case letters, digits and _ only, at most 63")
    if args.max_changes_per_file < 1:
        parser.error("--max-changes-per-file must be positive")
    if args.max_wait_seconds <= 0 or args.progress_seconds <= 0:
        parser.error("--max-wait-seconds and --progress-seconds must be positive")
    return CaptureConfig(
        dsn=args.dsn, tables=tables, slot=args.slot, out=Path(args.out), state=Path(args.state),
        max_changes_per_file=args.max_changes_per_file, follow=args.follow,
        max_wait_seconds=args.max_wait_seconds, progress_seconds=args.progress_seconds,
    )


def _dsn_settings(dsn: str) -> dict[str, str]:
    from psycopg2.extensions import parse_dsn

    try:
        return parse_dsn(dsn)
    except Exception:  # noqa: BLE001 - libpq says what is wrong with it when connecting
        return {}


def main(argv: list[str] | None = None) -> int:
    return run_command("cdc-capture-postgres", run, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
