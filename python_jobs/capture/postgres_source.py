"""Everything the PostgreSQL capture asks of the server: the connection, the captured tables'
catalog, the replication slot, the snapshot, the stream's files and the state written after each
(postgres.py is the command; postgres_stream.py the streaming loop; postgres_pages.py the online
snapshots' pages; postgres_events.py what the slot's changes become). Why over 300 lines: one
class, whose steps share the connection, the catalog and the state each file's write records."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import orjson

from python_jobs import crash_points
from python_jobs.capture.output import (
    CaptureError,
    CaptureSummary,
    OutputFolder,
    change_event_count,
    lost_connection_status,
    write_state,
)
from python_jobs.capture.postgres_events import (
    DECODING_OPTIONS,
    TableShape,
    Transaction,
    change_events,
    lsn_text,
)
from python_jobs.capture.postgres_columns import (
    MESSAGE_PREFIX,
    CatalogColumn,
    ColumnAdditions,
    identity_problems,
    read_catalog,
)
from python_jobs.capture.postgres_connection import connect, dsn_without_secrets, lost_connection_detail
from python_jobs.capture.postgres_pages import PageWatch, write_page
from python_jobs.capture.postgres_partitions import (
    Partitions,
    PartitionsChanged,
    as_tables,
    leaves_of,
    read_partitions,
    reads_for_change,
    wal2json_table,
)
from python_jobs.capture.postgres_keys import KeyIndexes, notice_rekeyed_tables, read_key_indexes
from python_jobs.capture.postgres_labels import Labels, notice_relabeled_tables, read_labels
from python_jobs.capture.postgres_persistence import Persistence, as_kept, notice_persistence, read_persistence
from python_jobs.capture.postgres_relations import Relations, notice_renamed_columns, read_relations, replaced
from python_jobs.capture.postgres_records import decoded, peeked_transactions, record_lines, table_columns
from python_jobs.capture.postgres_skipped import SkippedChanges, notice_skipped_changes
from python_jobs.capture.postgres_snapshot import fill_unsent_toast, take_snapshot
from python_jobs.capture.postgres_stream import PostgresStream
from python_jobs.capture.reconnect import follow_with_reconnects
from python_jobs.capture.snapshot_pages import Pages, TableSnapshot
from python_jobs.formats.wal2json import parse_lsn

if TYPE_CHECKING:
    from python_jobs.capture.postgres import CaptureConfig

log = logging.getLogger("cdc_merge.capture")

HEARTBEAT_PREFIX = "cdc_merge.heartbeat"


class PostgresCapture:
    """All database I/O of the capture: the slot, the snapshot, and peek/consume."""

    def __init__(self, config: CaptureConfig) -> None:
        import psycopg2

        self.config = config
        self.output = OutputFolder(config.out)
        self.summary = CaptureSummary()
        # The state as last written; its written_lsn is the last commit already in a file.
        self.state: dict = {}
        # The tables of changes the server's decoding dropped, from every session's warnings (postgres_skipped.py).
        self.skipped = SkippedChanges()
        try:
            self.connection = self._connect()
        except psycopg2.Error as error:
            detail = " ".join(str(error).split())
            raise CaptureError(
                f"cannot connect to PostgreSQL ({dsn_without_secrets(config.dsn)}): {detail}; check --dsn, and the "
                "password in PGPASSWORD (or ~/.pgpass)"
            ) from None
        with self.connection.cursor() as cursor:
            cursor.execute("select current_database(), current_setting('wal_level'), current_user, "
                           "(select rolsuper or rolreplication from pg_roles where rolname = current_user) "
                           # Amazon RDS grants replication as membership of its role rds_replication.
                           "or exists (select from pg_roles where rolname = 'rds_replication' "
                           "and pg_has_role(current_user, oid, 'member'))")
            self.database, wal_level, user, replicates = cursor.fetchone()
        if wal_level != "logical":
            raise CaptureError(f"wal_level is {wal_level}: set wal_level = logical on the server and restart it")
        if not replicates:
            # Refused only when the slot's stream starts, where the server's FATAL reads as a lost connection.
            raise CaptureError(f"the capture's user {user} has no REPLICATION attribute, which streaming a slot needs: "
                               f"alter role {user} replication (as a superuser), then run the capture again "
                               "(docs/your_project.md)")
        self.catalog = self.read_catalog()
        # The leaf partitions of partitioned tables the stream decodes with (postgres_partitions.py);
        # those of the state, in _run.
        self.partitions: Partitions = read_partitions(self.connection, config.tables)
        # The relation each table name is (postgres_relations.py); the written log's, from the state, in _run.
        self.relations: Relations = read_relations(self.connection, config.tables)
        # Each table's primary key and replica identity (postgres_keys.py); the written log's, from the state, in _run.
        self.key_indexes: KeyIndexes = read_key_indexes(self.connection, config.tables)
        # The enum labels each table's rows show (postgres_labels.py); the written log's, from the state, in _run.
        self.labels: Labels = read_labels(self.connection, config.tables)
        # Each table's relations' persistence and relfilenode (postgres_persistence.py); the written log's, in _run.
        self.persistence: Persistence = as_kept(read_persistence(self.connection, config.tables))
        self.unlogged_warned: set[str] = set()
        # Columns added to the tables while capturing (postgres_columns.py); from the state, in _run.
        self.additions = ColumnAdditions()
        # Tables being read in pages while the stream goes on (snapshot_pages.py); from the state, in _run.
        self.pages = Pages()
        self.requests_taken_at = 0.0  # when cdc-snapshot's requests were last taken (postgres_pages.py)
        self.written_xids: OrderedDict[int, None] = OrderedDict()  # the last transactions written (PageWatch)
        self.tables_gone: set[str] = set()

    def _connect(self) -> Any:
        connection = connect(self.config.dsn)
        connection.autocommit = True
        connection.notices = self.skipped
        with connection.cursor() as cursor:
            cursor.execute("set timezone = 'UTC'")
        return connection

    def read_catalog(self, connection: Any = None) -> dict[str, list[CatalogColumn]]:
        """The captured tables' columns, as of now or as of the snapshot connection's snapshot; each
        table must exist, have a primary key, and be logged with its old key (checked before the slot
        is made)."""
        catalog = read_catalog(connection or self.connection, self.config.tables)
        for table in self.config.tables:
            if table not in catalog:
                raise CaptureError(f"table {table} does not exist in database {self.database} (or the user cannot read it)")
            if not any(column.in_primary_key for column in catalog[table]):
                raise CaptureError(f"table {table} has no primary key: a mirror needs one to merge on; add one, or "
                                   "leave the table out of --tables")
        self.check_identities(connection)
        return catalog

    def check_identities(self, connection: Any = None, partitions: Partitions | None = None) -> None:
        """Stop, saying what to change, where the server would log a captured table's updates or
        deletes without the old key (postgres_columns.identity_problem): they would be lost. A
        partitioned table's are its leaves'."""
        connection = connection or self.connection
        if partitions is None:
            partitions = read_partitions(connection, self.config.tables)
        problems = identity_problems(connection, [*self.config.tables, *leaves_of(partitions)])
        if problems:
            raise CaptureError("; ".join(problems))

    def log_position(self) -> int:
        """Where the server's log is now (a standby: what it has replayed)."""
        with self.connection.cursor() as cursor:
            cursor.execute("select case when pg_is_in_recovery() then pg_last_wal_replay_lsn() else pg_current_wal_lsn() end")
            return parse_lsn(cursor.fetchone()[0])

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
        tables = [*self.config.tables, *leaves_of(self.partitions)]
        options = {**DECODING_OPTIONS, "add-tables": ",".join(wal2json_table(table) for table in tables)}
        return [text for option in options.items() for text in option]

    def follow(self, stop: threading.Event) -> None:
        """Stream the slot's changes until stop is set (postgres_stream.py), connecting again after
        the server restarts or the network breaks (reconnect.py)."""

        def stream() -> None:
            while True:
                if self.connection.closed:
                    self.connection = self._connect()
                options = self._decoding_options()
                try:
                    PostgresStream(self, {**dict(zip(options[::2], options[1::2])), "include-xids": "true"},
                                   self.config.max_wait_seconds, self.config.progress_seconds, stop,
                                   self.config.heartbeat_seconds).run()
                    return
                except PartitionsChanged as change:
                    log.info("%s: streaming again from the slot's confirmed position, with them", change)
                    self.pages.abandon()  # its watermarks come again: read it again

        def lost(error: BaseException) -> str | None:
            detail = lost_connection_detail(error)
            if detail is not None:
                lost_connection_status(self.config.state, detail)
                self.pages.abandon()  # its watermarks may be lost with the connection: read again
                if not self.connection.closed:
                    self.connection.close()
            return detail

        follow_with_reconnects(stream, lost, stop, f"PostgreSQL ({dsn_without_secrets(self.config.dsn)})")

    def estimated_rows(self, table: str) -> int | None:
        """The table's row count as its statistics say (None before its first ANALYZE)."""
        with self.connection.cursor() as cursor:
            cursor.execute("select reltuples::bigint from pg_class where oid = %s::regclass", [table])
            row = cursor.fetchone()
        return int(row[0]) if row and row[0] is not None and row[0] >= 0 else None

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
        self.skipped.take()  # the last confirm's decoding's: those of the peek are taken with its file
        with self.connection.cursor() as cursor:
            cursor.execute(
                f"select lsn::text, xid::text::bigint, data from pg_logical_slot_peek_changes(%s, null, %s, {placeholders})",
                (self.config.slot, self.config.max_changes_per_file, *options),
            )
            peeked = list(peeked_transactions(cursor.fetchall()))
        if not peeked:
            return 0
        try:
            last_commit = self.write_transactions(peeked)
        except PartitionsChanged as change:
            log.info("%s: reading the slot again with them", change)
            return len(peeked)
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
        partitions = read_partitions(self.connection, self.config.tables)
        self.check_identities(partitions=partitions)  # changed by an ALTER TABLE since the start: stop before the file
        if partitions != self.partitions:
            self.partitions_changed(partitions)
        self.notice_replaced_tables(read_relations(self.connection, self.config.tables))
        notice_relabeled_tables(self, read_labels(self.connection, self.config.tables))
        notice_persistence(self, committed)
        for table in sorted(set(self.config.tables) - set(self.catalog) - self.tables_gone):
            log.warning("%s is gone from database %s: its changes end here; leave it out of --tables", table, self.database)
            self.tables_gone.add(table)
        noticed = self.additions.notice(self.catalog)  # stops at a primary key of other columns
        notice_rekeyed_tables(self, read_key_indexes(self.connection, self.config.tables))
        notice_skipped_changes(self)
        notice_renamed_columns(self, log)
        shapes = {table: TableShape(frozenset(column.name for column in columns),
                                    frozenset(column.name for column in columns if column.toastable),
                                    {column.name: column.type_name for column in columns if column.domain})
                  for table, columns in self.catalog.items()}
        watch = PageWatch(self.pages, shapes, self.written_xids)
        # A table with a domain's column is decoded (its values retyped): record_lines writes none of its records.
        columns = table_columns({table: [column.name for column in found] for table, found in self.catalog.items()
                                 if not shapes[table].domain_bases})
        lines: list[bytes] = []
        first: int | None = None
        change_count = 0
        unmarked_toast: set[str] = set()
        for tx in unwritten:
            watch.transaction(tx.xid)
            # The records as the server sent them where they land as their Debezium events would; in order:
            # a transaction's events may open a page or say an addition, which the next ones must see.
            as_sent = None
            if tx.records and not (self.additions.observes_rows() or watch.observes_rows()):
                as_sent = record_lines(tx, columns)
            if as_sent is not None:
                tx_lines, tx_first = as_sent
                change_count += len(tx_lines) - 1  # and the END record
            else:
                tx = decoded(tx)
                if self.partitions:
                    tx.changes, truncated = as_tables(tx.changes, self.partitions)
                    for table in truncated:
                        self.pages.request_once(TableSnapshot(table, "partitions truncated"), log)
                events = change_events(tx, self.database, shapes, processed_ms, self.additions, watch, unmarked_toast)
                fill_unsent_toast(self.connection, events, self.catalog, watch.windows_open())
                tx_lines = [orjson.dumps(event) for event in events]
                tx_first = events[0]["source"]["lsn"] if events else None
                change_count += change_event_count(events)
            first = tx_first if first is None else first
            lines.extend(tx_lines)
        last_commit = committed[-1].commit_lsn
        if lines:
            self.output.write_lines(f"pg-{self.config.slot}", f"{first:016X}", f"{last_commit:016X}", lines)
            self.summary.files += 1
            self.summary.events += change_count
        # Read again after the updates (written, as the state says below before they are confirmed): their
        # unchanged TOAST values could not be marked, so their mirror rows would hold null there.
        for table in sorted(unmarked_toast):
            self.pages.request_once(TableSnapshot(table, f"{table}: updates made before a column was dropped or renamed, "
                                                         "decoded after it, leave out unchanged TOAST values they cannot "
                                                         "mark"), log)
        page = self.pages.ready()
        if page is not None:
            write_page(self, page, processed_ms)
        if unwritten or page is not None:
            # following: a streaming capture's figures (output.FollowProgress), for whoever watches it.
            self.write_state({**self.state, "written_lsn": lsn_text(last_commit), "columns": self.additions.state(),
                              "column_types": self.additions.types_state(), "keys": self.additions.keys_state(),
                              "snapshots": self.pages.state(), **({"following": following} if following else {})})
        self.summary.transactions += len(unwritten)
        self.mark_additions({table: columns for table, columns in noticed.items()
                             if table in self.additions.pending or table in self.additions.retyped})
        crash_points.crash_point("capture-before-confirm")
        return last_commit

    def partitions_changed(self, partitions: Partitions) -> None:
        """The leaves differ from the stream's: what entered or left the tables without a change in the
        log is read online, and the transactions received are dropped for the stream to start again
        with the new leaves (postgres_partitions.py)."""
        for table, reason, partition in reads_for_change(self.partitions, partitions):
            self.pages.request_once(TableSnapshot(table, reason, partition=partition), log)
        self.partitions = partitions
        # The reads asked for, with the leaves they were asked for.
        self.write_state({**self.state, "snapshots": self.pages.state()})
        raise PartitionsChanged(f"the partitions of {', '.join(sorted(partitions))} changed")

    def notice_replaced_tables(self, now: Relations) -> None:
        """A table replaced under its name since the written log's relation is read again online
        (postgres_relations.py); the state has the read asked for with the new relation."""
        tables = replaced(self.relations, now)
        for table in tables:
            self.pages.request_once(TableSnapshot(table, f"{table} was replaced under its name (another table renamed "
                                                         "to it, or dropped and created again)"), log)
        self.relations = {**self.relations, **now}
        if tables:
            self.write_state({**self.state, "snapshots": self.pages.state()})

    def mark_additions(self, noticed: dict[str, list[str]]) -> None:
        """A logical message after the ALTER TABLEs of columns noticed but not yet carried by a change, at
        which their schema change events are written if no change carries them first (postgres_columns.py)."""
        if noticed:
            with self.connection.cursor() as cursor:
                cursor.execute("select pg_logical_emit_message(true, %s, %s)", (MESSAGE_PREFIX, json.dumps(noticed)))

    def write_state(self, state: dict) -> None:
        state = {**state, "partitions": self.partitions, "relations": self.relations,
                 "key_indexes": self.key_indexes, "labels": self.labels,
                 "persistence": self.persistence}
        write_state(self.config.state, state)
        self.state = state

    def close(self) -> None:
        self.connection.close()
