"""Everything the MariaDB/MySQL capture asks of the server: table metadata, the binlog settings,
the consistent snapshot, and the binlog stream read as committed transactions.
(mysql_table_changes.py: what DDL in the binlog changes of the captured tables). Why over 300 lines:
the stream's loop (transactions) decides on every kind of binlog event in one place, where its state is."""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any, Iterator, Mapping, MutableMapping

from python_jobs.capture.mysql_binlog_values import binlog_values
from python_jobs.capture.mysql_connection import access_denied_hint, connect
from python_jobs.capture.mysql_row_images import debezium_images
from python_jobs.capture.mysql_rows import absent_columns, fast_rows
from python_jobs.capture.mysql_server_charsets import forget_server_charsets, load_server_charsets
from python_jobs.capture.mysql_cascades import cascade_reads_again, follow_statement, read_cascades
from python_jobs.capture.mysql_columns import read_table_info
from python_jobs.capture.mysql_compressed_columns import read_compressed_columns_metadata
from python_jobs.capture.mysql_names import TablesByName, server_table_names
from python_jobs.capture.mysql_snapshot import take_snapshot
from python_jobs.capture.mysql_statements import (
    emptied_tables,
    rolled_back_to,
    load_statement,
    row_statement_tables,
    savepoint,
    statement,
    versioned_tables,
)
from python_jobs.capture.mysql_table_changes import (
    added_columns_event,
    captured_among as _captured,
    table_names as _names,
    table_as_logged,
    tables_read_again,
    versioning_error,
)
from python_jobs.capture.mysql_events import RowChange, TableInfo, Transaction
from python_jobs.capture.output import CaptureError, CaptureSummary, OutputFolder
from python_jobs.capture.snapshot_pages import Pages

if TYPE_CHECKING:
    from python_jobs.capture.mysql import CaptureConfig

log = logging.getLogger("cdc_merge.capture")


class MysqlCapture:
    """All database I/O of the capture: table metadata, the snapshot, and the binlog stream."""

    def __init__(self, config: CaptureConfig) -> None:
        import pymysql

        self.config = config
        self.output = OutputFolder(config.out)
        self.summary = CaptureSummary()
        try:
            self.connection = connect(**config.connection_settings, autocommit=True)
        except pymysql.Error as error:
            raise CaptureError(
                f"cannot connect to {config.user}@{config.host}:{config.port}: {error}; check --user, --host, "
                f"--port and the password in MYSQL_PWD{access_denied_hint(error)}"
            ) from None
        self._check_binlog_settings()
        # How the server compares database and table names (lower_case_table_names: mysql_names.py).
        self.names = server_table_names(self.connection)
        self.tables = {table: self._table_info(table) for table in config.tables}
        # Parent tables whose changes cascade into captured ones with no rows event, and the foreign keys
        # that make them, as of the position read: the state's with the catalog's (mysql_cascades.py).
        self.foreign_keys, self.cascades = read_cascades(self.connection, config.tables, self.names)
        # The columns the written log has of each table, from the state file (mysql.py): an ALTER TABLE
        # read from the binlog is compared with these, not with the catalog, which may be ahead of it.
        self.known_columns = {table: [column.name for column in info.columns] for table, info in self.tables.items()}
        # Each table's primary key as the written log has it, from the state file too: a table renamed
        # into its place is compared with this (mysql_table_changes.py), not with the catalog's, which
        # already has the swapped-in table's key when the capture starts after the swap.
        self.known_keys = {table: list(info.primary_key) for table, info in self.tables.items()}
        # Each column's type as the written log has it, from the state file too: an ALTER TABLE that
        # retyped a column while the capture was stopped is told by these, not by the catalog's types.
        self.known_types = {table: {column.name: column.column_type for column in info.columns}
                            for table, info in self.tables.items()}
        # Per table, the columns of the rows events the catalog was last read again for, and what it said
        # (mysql_table_changes.table_as_logged): a capture behind an ALTER read it again for every such event.
        self.catalog_read_for: dict[str, tuple[frozenset[str], Any]] = {}
        # Tables being read in pages while the binlog streams (mysql_pages.py); from the state, in mysql._run.
        self.pages = Pages()
        self._page_connection: Any = None
        self.requests_taken_at = 0.0  # when cdc-snapshot's requests were last taken (mysql_pages.py)
        self.signal_checked = False  # the signal table was written once (mysql_pages.check_signal_table)

    def estimated_rows(self, table: str) -> int | None:
        """The table's row count as its statistics say (InnoDB's estimate)."""
        schema, name = table.split(".", 1)
        with self.page_connection().cursor() as cursor:
            cursor.execute("select table_rows from information_schema.tables where table_schema = %s and table_name = %s",
                           (schema, name))
            row = cursor.fetchone()
        return int(row[0]) if row and row[0] is not None else None

    def page_connection(self) -> Any:
        """The connection online snapshot pages are read and their watermarks written on (autocommit, UTC)."""
        import pymysql

        if self._page_connection is not None:
            try:
                self._page_connection.ping(reconnect=False)
            except pymysql.Error:  # the server restarted or the network broke since the last page
                self._page_connection = None
        if self._page_connection is None:
            self._page_connection = connect(**self.config.connection_settings, autocommit=True)
            with self._page_connection.cursor() as cursor:
                cursor.execute("set session time_zone = '+00:00'")
        return self._page_connection

    def _variables(self, *names: str) -> dict[str, str]:
        with self.connection.cursor() as cursor:
            cursor.execute("show global variables where variable_name in %s", (names,))
            return {name.lower(): value for name, value in cursor.fetchall()}

    def _check_binlog_settings(self) -> None:
        found = self._variables("log_bin", "binlog_format", "binlog_row_image", "binlog_row_metadata", "log_bin_compress")
        wanted = {"log_bin": "ON", "binlog_format": "ROW", "binlog_row_image": "FULL", "binlog_row_metadata": "FULL"}
        wrong = [f"{name}={found.get(name, 'unset')} (needs {value})" for name, value in wanted.items()
                 if found.get(name, "").upper() != value]
        # MariaDB's compressed rows events, which the binlog reader skips: their changes would be lost.
        if found.get("log_bin_compress", "OFF").upper() == "ON":
            wrong.append("log_bin_compress=ON (needs OFF)")
        if wrong:
            raise CaptureError("the server's binlog cannot be captured: " + ", ".join(wrong))

    def _table_info(self, qualified: str) -> TableInfo:
        return read_table_info(self.connection, qualified)

    def snapshot(self, replaces_mirrors: bool = False) -> tuple[str, int]:
        """Write every row as of one consistent snapshot; returns its binlog position (mysql_snapshot.py)."""
        return take_snapshot(self, replaces_mirrors)

    def binlog_end(self) -> tuple[str, int]:
        """The binlog's end now: where a capture whose tables are read online starts streaming."""
        with self.connection.cursor() as cursor:
            cursor.execute("show master status")
            row = cursor.fetchone()
        if not row:
            raise CaptureError("show master status returned nothing: is log_bin on?")
        return row[0], int(row[1])

    def server_position(self) -> tuple[str, int] | None:
        """The server's binlog position now (None: unknown)."""
        with self.connection.cursor() as cursor:
            cursor.execute("show master status")
            row = cursor.fetchone()
        return (row[0], int(row[1])) if row else None

    @staticmethod
    def behind(server: tuple[str, int] | None, binlog_file: str, position: int) -> tuple[str, int | None]:
        """How far the server's binlog is ahead of a position, for a following capture's progress
        line, and in bytes when both are in one file."""
        if server is None:
            return "the server's binlog position unknown", None
        if server[0] == binlog_file:
            behind = max(0, server[1] - position)
            return f"{behind:,} bytes behind the server", behind
        return f"the server at {server[0]}:{server[1]}", None

    def transactions(self, binlog_file: str, position: int,
                     heartbeat_seconds: float | None = None) -> Iterator[tuple[Transaction | None, str, int]]:
        """Committed transactions from a position: (transaction, file, position after its commit).

        Transactions that touch no captured table come out empty, so their end still advances
        the stored position. With heartbeat_seconds the stream blocks at the binlog's end instead
        of ending, and the server's heartbeat, that often while nothing is written, comes out as
        (None, file, 0): a following capture's chance to close a file or stop.
        """
        from pymysqlreplication import BinLogStreamReader
        from pymysqlreplication.event import (ExecuteLoadQueryEvent, GtidEvent, HeartbeatLogEvent, MariadbGtidEvent,
                                              QueryEvent, RotateEvent, XAPrepareEvent, XidEvent)
        from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

        following = heartbeat_seconds is not None
        load_server_charsets(self.connection)  # the server's own decoding of its text (mysql_server_charsets.py)
        read_compressed_columns_metadata()
        stream = BinLogStreamReader(
            connection_settings=self.config.connection_settings, server_id=self.config.server_id,
            log_file=binlog_file, log_pos=position, resume_stream=True, blocking=following,
            slave_heartbeat=heartbeat_seconds, pymysql_wrapper=connect,
            only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent, XidEvent, QueryEvent, XAPrepareEvent,
                         RotateEvent, GtidEvent, MariadbGtidEvent, ExecuteLoadQueryEvent,
                         *([HeartbeatLogEvent] if following else [])],
        )
        captured = TablesByName(self.names, (((table.schema, table.name), table) for table in self.tables.values()))
        signal = self.names.table(tuple(self.config.signal_table.split(".", 1)))
        current: Transaction | None = None
        try:
            for event in stream:
                if isinstance(event, HeartbeatLogEvent):
                    yield None, stream.log_file, 0
                    continue
                start = event.packet.log_pos - event.event_size
                if isinstance(event, (GtidEvent, MariadbGtidEvent)):
                    current = Transaction(gtid=str(event.gtid), begin_file=stream.log_file, begin_position=start,
                                          grouped=isinstance(event, MariadbGtidEvent) and not event.flags & 1)
                elif isinstance(event, (QueryEvent, ExecuteLoadQueryEvent)):
                    if isinstance(event, ExecuteLoadQueryEvent):  # a LOAD DATA logged as a statement
                        event.query, event.schema = load_statement(event)
                    query = statement(event.query).upper()
                    where = f"{stream.log_file}:{start}"
                    follow_statement(self, event, query)  # foreign keys dropped or added (mysql_foreign_keys.py)
                    if query == "BEGIN":
                        current = current or Transaction(begin_file=stream.log_file, begin_position=start)
                    elif query == "COMMIT" and current is not None:  # non-transactional engines
                        current.commit_ts_ms = event.timestamp * 1000
                        yield current, stream.log_file, event.packet.log_pos
                        current = None
                    elif current is not None and (name := savepoint(event.query)) is not None:
                        current.savepoints[name] = len(current.changes)
                    elif current is not None and (name := rolled_back_to(event.query)) is not None:
                        del current.changes[current.savepoints.get(name, len(current.changes)):]
                    elif written := _captured(row_statement_tables(event.query, event.schema,
                                                                           event.packet.flags), captured):
                        raise CaptureError(
                            f"a change of {_names(written)} at {where} is logged as a statement (a session with "
                            "binlog_format STATEMENT or MIXED), without its rows: set binlog_format=ROW for every "
                            "session, then run the capture once with --resnapshot")
                    elif versioned := _captured(versioned_tables(event.query, event.schema), captured):
                        raise versioning_error(event.query, where, versioned)
                    elif truncated := _captured(emptied_tables(event.query, event.schema, captured, self.names,
                                                               event.packet.flags), captured):
                        # TRUNCATE, DROP, CREATE OR REPLACE are DDL: a transaction of its own (after its GTID event, if any).
                        if current is None or current.changes:
                            current = Transaction(begin_file=stream.log_file, begin_position=start)
                        current.changes.extend(RowChange(table, "t", None, None, stream.log_file, start, number)
                                               for number, table in enumerate(truncated))
                        # One RENAME TABLE may take a captured name away and give another one a table.
                        current.read_again = dict.fromkeys(tables_read_again(self, event, captured, where),
                                                            "a table renamed into its place")
                        current.commit_ts_ms = event.timestamp * 1000
                        if not current.grouped:  # else a CREATE OR REPLACE ... SELECT: its rows, then its commit
                            yield current, stream.log_file, event.packet.log_pos
                            current = None
                    elif read_again := tables_read_again(self, event, captured, where):
                        # DDL: a transaction of its own (after its GTID event, if any).
                        if current is None or current.changes:
                            current = Transaction(begin_file=stream.log_file, begin_position=start)
                        current.read_again = dict.fromkeys(read_again, "partitions changed")
                        current.commit_ts_ms = event.timestamp * 1000
                        yield current, stream.log_file, event.packet.log_pos
                        current = None
                    elif (altered := added_columns_event(self, event, captured, stream.log_file, start)) is not None:
                        # DDL is a transaction of its own (after its GTID event, if any).
                        current = current if current is not None and not current.changes else Transaction(
                            begin_file=stream.log_file, begin_position=start)
                        schema_change, reasons = altered
                        current.schema_events.append(schema_change)
                        current.read_again = reasons
                        current.commit_ts_ms = event.timestamp * 1000
                        yield current, stream.log_file, event.packet.log_pos
                        current = None
                    elif current is not None and current.gtid and not current.changes and not current.grouped:
                        # A statement outside a transaction (DDL): its GTID event came first.
                        self._warn_on_captured_ddl(event, captured)
                        yield current, stream.log_file, event.packet.log_pos
                        current = None
                elif isinstance(event, XAPrepareEvent):
                    if current is not None and current.changes and not event.one_phase:
                        raise CaptureError(
                            f"a two-phase XA transaction (XA PREPARE at {stream.log_file}:{start}) changed "
                            f"{_names(sorted({(c.table.schema, c.table.name) for c in current.changes}))}: the capture "
                            "does not follow XA PREPARE to its XA COMMIT; commit such changes in one phase (XA COMMIT "
                            "... ONE PHASE, or a plain transaction), then run the capture once with --resnapshot")
                    if current is not None:
                        current.commit_ts_ms = event.timestamp * 1000
                        yield current, stream.log_file, event.packet.log_pos
                    current = None
                elif isinstance(event, XidEvent):
                    if current is not None:
                        current.commit_ts_ms = event.timestamp * 1000
                        yield current, stream.log_file, event.packet.log_pos
                    current = None
                elif isinstance(event, (WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent)):
                    if self.names.table((event.schema, event.table)) == signal and isinstance(event, WriteRowsEvent) and current:
                        current.watermarks.extend((row["values"], stream.log_file, start) for row in event.rows)
                        continue
                    try:
                        self._read_rows(event, current, captured, stream.log_file, start)
                    except NotImplementedError as error:  # the reader has no decoder for a column's type
                        raise CaptureError(
                            f"the rows event of {event.schema}.{event.table} at {stream.log_file}:{start} holds values "
                            f"the capture cannot decode ({error}; MariaDB's COMPRESSED columns are types 140 and 141): "
                            "with no such column left in the table, run the capture once with --resnapshot to read "
                            "its tables again from now") from None
        finally:
            stream.close()

    def _read_rows(self, event: Any, current: Transaction | None, captured: MutableMapping[tuple[str, str], TableInfo],
                   log_file: str, start: int) -> None:
        """A rows event's changes of a captured table into the transaction, and the reads again a cascade from it needs."""
        if current is not None and (cascades := self.cascades.get(self.names.table((event.schema, event.table)))):
            cascade_reads_again(self, current, event, cascades, f"{log_file}:{start}")
        table = captured.get((event.schema, event.table))
        if table is None:
            return
        if current is None:
            raise CaptureError(f"row event at {log_file}:{start} outside a transaction")
        table = table_as_logged(self, table, event)
        captured[(table.schema, table.name)] = table
        if (decoded := debezium_images(event, table)) is not None:
            op, images = decoded
            current.changes.extend(RowChange(table, op, before, after, log_file, start, row_number, True)
                                   for row_number, (before, after) in enumerate(images))
            return
        for row_number, row in enumerate(fast_rows(event)):
            current.changes.append(_row_change(event, row, table, log_file, start, row_number))

    def _warn_on_captured_ddl(self, event: Any, captured: Mapping[tuple[str, str], TableInfo]) -> None:
        query = event.query.lower()
        for _, name in captured:
            if name.lower() in query and re.search(r"\b(alter|drop|rename|truncate)\b", query):
                log.warning("DDL on a captured table at %s: %s; the mirror model may need changing",
                            event.packet.log_pos, event.query[:200])
                return

    def close(self) -> None:
        forget_server_charsets(self.connection)
        for connection in (self.connection, self._page_connection):
            if connection is not None and connection.open:  # a server that went away closed it already
                connection.close()


def _row_change(event: Any, row: Mapping[str, Any], table: TableInfo, binlog_file: str, start: int, row_number: int) -> RowChange:
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent

    # All the table map's columns with a FULL row image (a session may set MINIMAL: the library reads None).
    missing = absent_columns(event) or [
        column.name for column in event.columns if column.name not in (row.get("values") or row.get("after_values") or {})]
    if missing:
        raise CaptureError(
            f"binlog rows of {table.schema}.{table.name} at {binlog_file}:{start} lack columns {missing}: set "
            "binlog_row_image=FULL (for every session: a session may set its own) and binlog_row_metadata=FULL, then "
            "run the capture once with --resnapshot (or the table changed since capture began)")
    if isinstance(event, UpdateRowsEvent):
        before = binlog_values(table, row["before_values"], row["before_none_sources"])
        after = binlog_values(table, row["after_values"], row["after_none_sources"])
        return RowChange(table, "u", before, after, binlog_file, start, row_number)
    if isinstance(event, DeleteRowsEvent):
        return RowChange(table, "d", binlog_values(table, row["values"], row["none_sources"]), None, binlog_file, start, row_number)
    return RowChange(table, "c", None, binlog_values(table, row["values"], row["none_sources"]), binlog_file, start, row_number)
