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

This module is the command; postgres_source.py holds everything it asks of the server,
postgres_stream.py the streaming loop, postgres_pages.py the online snapshots' pages (--snapshot
online, tables added to --tables, cdc-snapshot requests), postgres_events.py what the slot's
changes become.
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from python_jobs.capture.output import (
    CaptureError,
    CaptureSummary,
    lost_connection,
    read_state,
    run_command,
    stop_on_signals,
)
from python_jobs.capture.log_continues import REPLACED_THROUGH, check_log_continues, postgres_written
from python_jobs.capture.postgres_events import lsn_text
from python_jobs.capture.postgres_columns import ColumnAdditions
from python_jobs.capture.postgres_connection import dsn_settings, dsn_without_secrets, lost_connection_detail, privilege_hint
from python_jobs.capture.postgres_pages import open_next_page, read_added_tables
from python_jobs.capture.postgres_partitions import resumed as resumed_partitions
from python_jobs.capture.postgres_keys import resumed as resumed_keys
from python_jobs.capture.postgres_labels import resumed as resumed_labels
from python_jobs.capture.postgres_persistence import resumed as resumed_persistence
from python_jobs.capture.postgres_relations import resumed as resumed_relations
from python_jobs.capture.postgres_source import PostgresCapture
from python_jobs.capture.roll_requests import REQUESTS
from python_jobs.capture.snapshot_pages import Pages, TableSnapshot


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
    # Drop the slot and take a new snapshot that replaces what the mirrors hold: exported, a truncate
    # before its rows; online, each page's range record removes the rows the source no longer has.
    resnapshot: bool = False
    # The first snapshot and a resnapshot: "exported" (one transaction, at the slot's consistent point)
    # or "online" (in pages while the stream goes on: snapshot_pages.py); tables added later are always
    # read online.
    snapshot_mode: str = "exported"
    page_rows: int = 10_000
    snapshot_rows_per_second: float | None = None
    # A heartbeat message into the log this often while following (and once per run without
    # --follow), so the slot advances even when no captured table changes (docs/online_snapshots.md).
    heartbeat_seconds: float = 60.0


def run(config: CaptureConfig) -> CaptureSummary:
    import psycopg2

    try:
        return _run(config)
    except (psycopg2.DatabaseError, psycopg2.InterfaceError) as error:
        where = f"PostgreSQL ({dsn_without_secrets(config.dsn)})"
        if lost_connection_detail(error) is None:
            raise CaptureError(f"{where} refused: {' '.join(str(error).split())}{privilege_hint(error, config.dsn)}") from None
        raise lost_connection(where, error, f"replication slot {config.slot}") from None


def _run(config: CaptureConfig) -> CaptureSummary:
    if config.follow:
        REQUESTS.install()  # cdc-run's request for a file before each run (roll_requests.py)
    capture = PostgresCapture(config)
    try:
        state = read_state(config.state)
        if state and state.get("slot") != config.slot:
            raise CaptureError(f"{config.state} belongs to slot {state.get('slot')}, not {config.slot}")
        capture.state = state
        capture.additions = ColumnAdditions.from_state(state)
        if not config.resnapshot:
            capture.partitions = resumed_partitions(state, capture.partitions, config.tables)
            capture.relations = resumed_relations(state, capture.relations)
            capture.key_indexes = resumed_keys(state, capture.key_indexes)
            capture.labels = resumed_labels(state, capture.labels)
            capture.persistence = resumed_persistence(state, capture.persistence)
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
    # A rerun of a --resnapshot that died half way replaces the mirrors' rows too.
    replaces_mirrors = config.resnapshot or bool(state.get("resnapshot"))
    written = postgres_written(state) if replaces_mirrors else None
    if written is not None:
        now = capture.log_position()
        check_log_continues(f"PostgreSQL ({dsn_without_secrets(config.dsn)})", written[0], written[1], (now,),
                            lsn_text(now), config.state)
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
    capture.write_state({"slot": config.slot, "snapshot_started": True,
                         **({"resnapshot": True} if replaces_mirrors else {}),
                         **({REPLACED_THROUGH: written[1]} if written is not None else {})})
    capture.additions = ColumnAdditions()
    if config.snapshot_mode == "online":
        # Read again online, a resnapshot replaces no row at once: each page's range record removes
        # the mirror's rows of its keys the source no longer has (docs/online_snapshots.md).
        position = capture.create_slot()
        capture.additions.notice(capture.catalog)
        capture.pages = Pages()
        reason = "a new snapshot (--resnapshot)" if replaces_mirrors else "first snapshot"
        for table in config.tables:
            capture.pages.request(TableSnapshot(table, reason))
        log.info("slot %s made at %s: reading %s%s online, in pages", config.slot, lsn_text(position),
                 ", ".join(config.tables), " again" if replaces_mirrors else "")
    else:
        position = capture.snapshot(replaces_mirrors=replaces_mirrors)
        capture.additions.notice(capture.catalog)  # the columns as of the snapshot
        log.info("snapshot of %s at %s done", ", ".join(config.tables), lsn_text(position))
    capture.write_state({"slot": config.slot, "snapshot_lsn": lsn_text(position), "snapshot_done": True,
                         "columns": capture.additions.state(), "column_types": capture.additions.types_state(),
                         "keys": capture.additions.keys_state(),
                         "tables": list(config.tables),
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
                        help="the first snapshot (and a --resnapshot): in one transaction at the slot's start (exported), "
                             "or in pages of each table while the changes stream (online; docs/online_snapshots.md)")
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
