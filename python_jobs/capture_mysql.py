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
holds: a capture killed at any point resumes without loss (python_jobs/capture.py says why
repeats are harmless).

Positions: `source.file`/`source.pos` are the binlog file and the start of the rows event,
`source.row` the row within it, so every row change of a key has its own position, in log
order, also inside one transaction.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import json
import logging
import os
import re
import sys
import time
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from python_jobs.capture import (
    CaptureError,
    CaptureSummary,
    OutputFolder,
    debezium_event,
    read_state,
    run_command,
    write_state,
)

log = logging.getLogger("cdc_merge.capture")

_QUALIFIED_TABLE = re.compile(r"^[A-Za-z0-9_$]+\.[A-Za-z0-9_$]+$")
_SET_MEMBER = re.compile(r"'((?:[^']|'')*)'")


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
    poll_seconds: float = 1.0

    @property
    def connection_settings(self) -> dict[str, Any]:
        return {"host": self.host, "port": self.port, "user": self.user, "password": self.password, "charset": "utf8mb4"}


@dataclass(frozen=True)
class Column:
    name: str
    data_type: str  # information_schema.columns.data_type: int, decimal, timestamp, set, ...
    column_type: str  # full definition: tinyint(1) unsigned, set('a','b'), ...


@dataclass(frozen=True)
class TableInfo:
    schema: str
    name: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]

    @property
    def types(self) -> dict[str, Column]:
        return {column.name: column for column in self.columns}


def json_value(column: Column, value: Any) -> Any:
    """A column value as Debezium writes it (decimal.handling.mode=string, ISO-8601 times).

    The same for snapshot rows (PyMySQL) and binlog rows (python-mysql-replication), so a
    row read both ways is equal. TIMESTAMP is UTC in both: the binlog stores epoch seconds
    and the snapshot session runs with time_zone '+00:00'.
    """
    if value is None:
        return None
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, dt.datetime):
        if column.data_type == "timestamp":
            return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        return value.isoformat(timespec="microseconds")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dt.timedelta):  # TIME: may be negative or above 24 hours
        sign = "-" if value < dt.timedelta(0) else ""
        micros = abs(value) // dt.timedelta(microseconds=1)
        seconds, micros = divmod(micros, 1_000_000)
        return f"{sign}{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}.{micros:06d}"
    if column.data_type == "bit":  # bytes from PyMySQL, a string of 0s and 1s from the binlog
        return int.from_bytes(value, "big") if isinstance(value, bytes) else int(value, 2)
    if column.data_type == "set":
        members = value if isinstance(value, (set, frozenset)) else set(filter(None, value.split(",")))
        order = [member.replace("''", "'") for member in _SET_MEMBER.findall(column.column_type)]
        return ",".join(member for member in order if member in members)
    if column.data_type == "json":
        parsed = json.loads(value) if isinstance(value, (str, bytes)) else value
        return json.dumps(parsed, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    if isinstance(value, (bytes, bytearray)):
        if column.data_type in ("char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum"):
            return bytes(value).decode("utf-8")
        return base64.b64encode(bytes(value)).decode("ascii")  # Debezium's binary.handling.mode=bytes
    return value


def row_image(table: TableInfo, values: Mapping[str, Any]) -> dict[str, Any]:
    """Every column of the row; one the table's info does not know yet (added since) by its value's type."""
    types = table.types
    return {name: json_value(types.get(name) or Column(name, "", ""), value) for name, value in values.items()}


@dataclass(frozen=True)
class RowChange:
    table: TableInfo
    op: str  # c, u, d, or t (a truncate of the table: no images)
    before: Mapping[str, Any] | None
    after: Mapping[str, Any] | None
    binlog_file: str
    position: int  # start of the rows event
    row: int


@dataclass
class Transaction:
    gtid: str | None = None
    begin_file: str = ""
    begin_position: int = 0
    commit_ts_ms: int | None = None
    changes: list[RowChange] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.gtid or f"{self.begin_file}:{self.begin_position}"


def change_events(transaction: Transaction, processed_ms: int) -> list[dict[str, Any]]:
    """Debezium events of one committed transaction, in binlog order.

    An update that changes the primary key becomes a delete of the old key and an insert
    of the new one, as Debezium emits it; the mirror is keyed by the primary key.
    """
    events: list[dict[str, Any]] = []
    for change in transaction.changes:
        table = change.table
        source = {
            "connector": "mysql", "name": "cdc_merge", "db": table.schema, "table": table.name,
            "file": change.binlog_file, "pos": change.position, "row": change.row,
            "gtid": transaction.gtid, "ts_ms": transaction.commit_ts_ms, "snapshot": "false",
        }
        before = row_image(table, change.before) if change.before is not None else None
        after = row_image(table, change.after) if change.after is not None else None
        operations: list[tuple[str, dict | None, dict | None]] = [(change.op, before, after)]
        if change.op == "u" and before is not None and after is not None:
            if [before.get(c) for c in table.primary_key] != [after.get(c) for c in table.primary_key]:
                operations = [("d", before, None), ("c", None, after)]
        for op, before_image, after_image in operations:
            events.append(debezium_event(
                op=op, before=before_image, after=after_image, source=source,
                transaction_id=transaction.id, total_order=len(events) + 1, processed_ms=processed_ms,
            ))
    return events


class MysqlCapture:
    """All database I/O of the capture: table metadata, the snapshot, and the binlog stream."""

    def __init__(self, config: CaptureConfig) -> None:
        import pymysql

        self.config = config
        self.output = OutputFolder(config.out)
        self.summary = CaptureSummary()
        try:
            self.connection = pymysql.connect(**config.connection_settings, autocommit=True)
        except pymysql.Error as error:
            raise CaptureError(f"cannot connect to {config.user}@{config.host}:{config.port}: {error}") from None
        self._check_binlog_settings()
        self.tables = {table: self._table_info(table) for table in config.tables}

    def _variables(self, *names: str) -> dict[str, str]:
        with self.connection.cursor() as cursor:
            cursor.execute("show global variables where variable_name in %s", (names,))
            return {name.lower(): value for name, value in cursor.fetchall()}

    def _check_binlog_settings(self) -> None:
        found = self._variables("log_bin", "binlog_format", "binlog_row_image", "binlog_row_metadata")
        wanted = {"log_bin": "ON", "binlog_format": "ROW", "binlog_row_image": "FULL", "binlog_row_metadata": "FULL"}
        wrong = [f"{name}={found.get(name, 'unset')} (needs {value})" for name, value in wanted.items()
                 if found.get(name, "").upper() != value]
        if wrong:
            raise CaptureError("the server's binlog cannot be captured: " + ", ".join(wrong))

    def _table_info(self, qualified: str) -> TableInfo:
        schema, name = qualified.split(".")
        with self.connection.cursor() as cursor:
            cursor.execute(
                "select column_name, data_type, column_type, column_key from information_schema.columns "
                "where table_schema = %s and table_name = %s order by ordinal_position",
                (schema, name),
            )
            rows = cursor.fetchall()
        if not rows:
            raise CaptureError(f"table {qualified} does not exist (or the user cannot see it)")
        columns = tuple(Column(row[0], row[1].lower(), row[2].lower()) for row in rows)
        primary_key = tuple(row[0] for row in rows if row[3] == "PRI")
        if not primary_key:
            raise CaptureError(f"table {qualified} has no primary key: a mirror needs one to merge on")
        return TableInfo(schema, name, columns, primary_key)

    def snapshot(self) -> tuple[str, int]:
        """Write every row as of one consistent snapshot; returns its binlog position."""
        import pymysql
        import pymysql.cursors

        reader = pymysql.connect(**self.config.connection_settings)
        try:
            with reader.cursor() as cursor:
                cursor.execute("set session time_zone = '+00:00'")
                cursor.execute("set session transaction isolation level repeatable read")
                binlog_file, position = self._start_snapshot(cursor)
            for table in self.tables.values():
                with reader.cursor(pymysql.cursors.SSCursor) as rows:  # streams, not all rows in memory
                    self._snapshot_table(rows, table, binlog_file, position)
            reader.commit()
        finally:
            reader.close()
        return binlog_file, position

    def _start_snapshot(self, cursor: Any) -> tuple[str, int]:
        cursor.execute("start transaction with consistent snapshot, read only")
        cursor.execute("show status like 'binlog_snapshot_%'")
        status = dict(cursor.fetchall())
        if status.get("binlog_snapshot_file"):  # MariaDB: the snapshot's own position, no lock needed
            return status["binlog_snapshot_file"], int(status["binlog_snapshot_position"])
        # MySQL: hold off writers while the snapshot and the position are taken together.
        cursor.execute("rollback")
        cursor.execute("flush tables with read lock")
        try:
            cursor.execute("start transaction with consistent snapshot, read only")
            cursor.execute("show master status")
            row = cursor.fetchone()
        finally:
            cursor.execute("unlock tables")
        if not row:
            raise CaptureError("show master status returned nothing: is log_bin on?")
        return row[0], int(row[1])

    def _snapshot_table(self, cursor: Any, table: TableInfo, binlog_file: str, position: int) -> None:
        names = [column.name for column in table.columns]
        column_list = ", ".join(f"`{name}`" for name in names)
        cursor.execute(f"select {column_list} from `{table.schema}`.`{table.name}`")
        source = {
            "connector": "mysql", "name": "cdc_merge", "db": table.schema, "table": table.name,
            "file": binlog_file, "pos": position, "row": 0, "ts_ms": None, "snapshot": "true",
        }
        part = 0
        while rows := cursor.fetchmany(self.config.max_changes_per_file):
            part += 1
            now_ms = int(time.time() * 1000)
            events = [
                debezium_event(op="r", before=None, after=row_image(table, dict(zip(names, row))), source=source,
                               transaction_id=None, total_order=0, processed_ms=now_ms)
                for row in rows
            ]
            prefix = f"mysql-snapshot-{table.schema}.{table.name}"
            self.output.write(prefix, f"{_file_number(binlog_file)}-{position:012d}", f"{part:06d}", events)
            self.summary.files += 1
            self.summary.snapshot_rows += len(events)

    def transactions(self, binlog_file: str, position: int) -> Iterator[tuple[Transaction, str, int]]:
        """Committed transactions from a position: (transaction, file, position after its commit).

        Transactions that touch no captured table come out empty, so their end still advances
        the stored position.
        """
        from pymysqlreplication import BinLogStreamReader
        from pymysqlreplication.event import GtidEvent, MariadbGtidEvent, QueryEvent, RotateEvent, XidEvent
        from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

        stream = BinLogStreamReader(
            connection_settings=self.config.connection_settings, server_id=self.config.server_id,
            log_file=binlog_file, log_pos=position, resume_stream=True, blocking=False,
            only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent, XidEvent, QueryEvent,
                         RotateEvent, GtidEvent, MariadbGtidEvent],
        )
        captured = {(table.schema, table.name): table for table in self.tables.values()}
        current: Transaction | None = None
        try:
            for event in stream:
                start = event.packet.log_pos - event.event_size
                if isinstance(event, (GtidEvent, MariadbGtidEvent)):
                    current = Transaction(gtid=str(event.gtid), begin_file=stream.log_file, begin_position=start)
                elif isinstance(event, QueryEvent):
                    query = event.query.strip().upper()
                    if query == "BEGIN":
                        current = current or Transaction(begin_file=stream.log_file, begin_position=start)
                    elif query == "COMMIT" and current is not None:  # non-transactional engines
                        current.commit_ts_ms = event.timestamp * 1000
                        yield current, stream.log_file, event.packet.log_pos
                        current = None
                    elif (truncated := _truncated_table(event, captured)) is not None:
                        # TRUNCATE is DDL: a transaction of its own (after its GTID event, if any).
                        if current is None or current.changes:
                            current = Transaction(begin_file=stream.log_file, begin_position=start)
                        current.changes.append(RowChange(truncated, "t", None, None, stream.log_file, start, 0))
                        current.commit_ts_ms = event.timestamp * 1000
                        yield current, stream.log_file, event.packet.log_pos
                        current = None
                    elif current is not None and current.gtid and not current.changes:
                        # A statement outside a transaction (DDL): its GTID event came first.
                        self._warn_on_captured_ddl(event, captured)
                        yield current, stream.log_file, event.packet.log_pos
                        current = None
                elif isinstance(event, XidEvent):
                    if current is not None:
                        current.commit_ts_ms = event.timestamp * 1000
                        yield current, stream.log_file, event.packet.log_pos
                    current = None
                elif isinstance(event, (WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent)):
                    table = captured.get((event.schema, event.table))
                    if table is None:
                        continue
                    if current is None:
                        raise CaptureError(f"row event at {stream.log_file}:{start} outside a transaction")
                    table = self._table_as_logged(table, event)
                    captured[(table.schema, table.name)] = table
                    for row_number, row in enumerate(event.rows):
                        current.changes.append(_row_change(event, row, table, stream.log_file, start, row_number))
        finally:
            stream.close()

    def _table_as_logged(self, table: TableInfo, event: Any) -> TableInfo:
        """The table's info, read again when the rows event's columns differ from it (ALTER TABLE since)."""
        if {column.name for column in event.columns} == set(table.types):
            return table
        qualified = f"{table.schema}.{table.name}"
        refreshed = self._table_info(qualified)
        self.tables[qualified] = refreshed
        log.info("columns of %s changed: now %s", qualified, ", ".join(column.name for column in refreshed.columns))
        return refreshed

    def _warn_on_captured_ddl(self, event: Any, captured: Mapping[tuple[str, str], TableInfo]) -> None:
        query = event.query.lower()
        for _, name in captured:
            if name.lower() in query and re.search(r"\b(alter|drop|rename|truncate)\b", query):
                log.warning("DDL on a captured table at %s: %s; the mirror model may need changing",
                            event.packet.log_pos, event.query[:200])
                return

    def close(self) -> None:
        self.connection.close()


_TRUNCATE = re.compile(r"^\s*truncate\s+(?:table\s+)?(?:`?([^`.\s]+)`?\.)?`?([^`.\s;]+)`?\s*;?\s*$", re.IGNORECASE)


def _truncated_table(event: Any, captured: Mapping[tuple[str, str], TableInfo]) -> TableInfo | None:
    """The captured table a QueryEvent's TRUNCATE [TABLE] [db.]name empties, else None."""
    match = _TRUNCATE.match(event.query)
    if match is None:
        return None
    schema = match.group(1) or event.schema
    if isinstance(schema, bytes):
        schema = schema.decode("utf-8")
    return captured.get((schema, match.group(2)))


def _row_change(event: Any, row: Mapping[str, Any], table: TableInfo, binlog_file: str, start: int, row_number: int) -> RowChange:
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent

    # The columns the binlog's table map names for this event: all of them with a FULL row image.
    missing = [column.name for column in event.columns if column.name not in (row.get("values") or row.get("after_values") or {})]
    if missing:
        raise CaptureError(
            f"binlog rows of {table.schema}.{table.name} at {binlog_file}:{start} lack columns {missing}: "
            "set binlog_row_image=FULL and binlog_row_metadata=FULL (or the table changed since capture began)"
        )
    if isinstance(event, UpdateRowsEvent):
        before, after = _fix_times(table, row["before_values"]), _fix_times(table, row["after_values"])
        return RowChange(table, "u", before, after, binlog_file, start, row_number)
    if isinstance(event, DeleteRowsEvent):
        return RowChange(table, "d", _fix_times(table, row["values"]), None, binlog_file, start, row_number)
    return RowChange(table, "c", None, _fix_times(table, row["values"]), binlog_file, start, row_number)


def _fix_times(table: TableInfo, values: Mapping[str, Any]) -> Mapping[str, Any]:
    """Undo python-mysql-replication 1.0's decoding of negative TIME values with a fraction.

    The server stores a negative TIME2 as the two's complement of the whole number, fraction
    included; the library complements the seconds and the fraction separately and returns
    -(12:34:56.22) for -12:34:56.78.
    """
    fixed = dict(values)
    for column in table.columns:
        value = fixed.get(column.name)
        if column.data_type == "time" and isinstance(value, dt.timedelta) and value < dt.timedelta(0):
            whole_seconds, fraction = divmod(-value, dt.timedelta(seconds=1))
            if fraction:
                fixed[column.name] = -(dt.timedelta(seconds=whole_seconds) + dt.timedelta(seconds=1) - fraction)
    return fixed


def _file_number(binlog_file: str) -> str:
    return binlog_file.rsplit(".", 1)[-1]


def _position_name(binlog_file: str, position: int) -> str:
    return f"{_file_number(binlog_file)}-{position:012d}"


class _PendingFile:
    """Whole transactions collected for the next file."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.transactions = 0
        self.end: tuple[str, int] | None = None


def stream(capture: MysqlCapture, config: CaptureConfig, binlog_file: str, position: int) -> tuple[str, int]:
    """Write the binlog from a position to files; returns the position after the last commit."""
    pending = _PendingFile()

    def flush() -> None:
        nonlocal binlog_file, position, pending
        if pending.end is None:
            return
        if pending.events:
            first = pending.events[0]["source"]
            capture.output.write("mysql", _position_name(first["file"], first["pos"]), _position_name(*pending.end),
                                 pending.events)
            capture.summary.files += 1
            capture.summary.events += len(pending.events)
        capture.summary.transactions += pending.transactions
        # Only now, with the file on disk, may capture move past these transactions.
        binlog_file, position = pending.end
        write_state(config.state, {"snapshot_done": True, "file": binlog_file, "pos": position,
                                   "server_id": config.server_id})
        pending = _PendingFile()

    for transaction, end_file, end_position in capture.transactions(binlog_file, position):
        processed_ms = int(time.time() * 1000)
        pending.events.extend(change_events(transaction, processed_ms))
        pending.transactions += bool(transaction.changes)
        pending.end = (end_file, end_position)
        if len(pending.events) >= config.max_changes_per_file:
            flush()
    flush()
    return binlog_file, position


def run(config: CaptureConfig) -> CaptureSummary:
    capture = MysqlCapture(config)
    try:
        state = read_state(config.state)
        if not state.get("snapshot_done"):
            binlog_file, position = capture.snapshot()
            write_state(config.state, {"snapshot_done": True, "file": binlog_file, "pos": position,
                                       "server_id": config.server_id})
            log.info("snapshot of %s at %s:%d done", ", ".join(config.tables), binlog_file, position)
        else:
            binlog_file, position = state["file"], int(state["pos"])
            _check_binlog_still_there(capture, binlog_file, config.state)
        while True:
            binlog_file, position = stream(capture, config, binlog_file, position)
            if not config.follow:
                break
            time.sleep(config.poll_seconds)
    finally:
        capture.close()
    log.info("%s", capture.summary.line(f"binlog {config.host}:{config.port}"))
    return capture.summary


def _check_binlog_still_there(capture: MysqlCapture, binlog_file: str, state_path: Path) -> None:
    with capture.connection.cursor() as cursor:
        cursor.execute("show binary logs")
        files = {row[0] for row in cursor.fetchall()}
    if binlog_file not in files:
        raise CaptureError(
            f"binlog {binlog_file} is purged, so changes since the last capture are lost to it: "
            f"remove {state_path} to take a new snapshot, then rebuild the mirrors with dbt run --full-refresh"
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
    parser.add_argument("--follow", action="store_true", help="keep capturing; default: stop when caught up")
    args = parser.parse_args(argv)
    tables = tuple(table.strip() for table in args.tables.split(",") if table.strip())
    for table in tables:
        if not _QUALIFIED_TABLE.match(table):
            parser.error(f"--tables: {table!r} is not database.table")
    if args.max_changes_per_file < 1:
        parser.error("--max-changes-per-file must be positive")
    if not 1 <= args.server_id < 2**32:
        parser.error("--server-id must be between 1 and 4294967295")
    return CaptureConfig(
        host=args.host, port=args.port, user=args.user, password=os.environ.get("MYSQL_PWD", ""),
        tables=tables, out=Path(args.out), state=Path(args.state), server_id=args.server_id,
        max_changes_per_file=args.max_changes_per_file, follow=args.follow,
    )


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("cdc-capture-mysql", run, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
