"""The MariaDB/MySQL capture's first snapshot (and a --resnapshot): every row of the captured tables
read in one consistent snapshot and written as a snapshot read at the binlog position it
corresponds to, where streaming starts."""

from __future__ import annotations

import time
from typing import Any, Sequence

from python_jobs.capture.mysql_events import Column, TableInfo, binlog_file_number, row_image
from python_jobs.capture.output import CaptureError, debezium_event


# Every session the capture (and cdc-verify) reads rows in: a CHAR's value without the padding that a
# server-wide sql_mode PAD_CHAR_TO_FULL_LENGTH adds to it in a SELECT, as it is stored and as the
# binlog has it.
READ_AS_STORED = ("set session sql_mode = trim(both ',' from "
                  "replace(concat(',', @@session.sql_mode, ','), ',PAD_CHAR_TO_FULL_LENGTH,', ','))")


def take_snapshot(capture: Any, replaces_mirrors: bool = False) -> tuple[str, int]:
    """Write every row as of one consistent snapshot; returns its binlog position. replaces_mirrors:
    each table's rows come after a truncate just before that position, so the mirrors drop rows
    deleted while the binlog was not read."""
    import pymysql
    import pymysql.cursors

    from python_jobs.capture.mysql_connection import connect

    reader = connect(**capture.config.connection_settings)
    try:
        with reader.cursor() as cursor:
            cursor.execute("set session time_zone = '+00:00'")
            cursor.execute("set session transaction isolation level repeatable read")
            binlog_file, position = _start_snapshot(cursor)
        for table in capture.tables.values():
            if replaces_mirrors:
                _write_truncate_before(capture, table, binlog_file, position)
            with reader.cursor(pymysql.cursors.SSCursor) as rows:  # streams, not all rows in memory
                _snapshot_table(capture, rows, table, binlog_file, position)
        reader.commit()
    finally:
        reader.close()
    return binlog_file, position


def _start_snapshot(cursor: Any) -> tuple[str, int]:
    import pymysql

    cursor.execute("start transaction with consistent snapshot, read only")
    cursor.execute("show status like 'binlog_snapshot_%'")
    # MariaDB names them Binlog_snapshot_file and Binlog_snapshot_position.
    status = {name.lower(): value for name, value in cursor.fetchall()}
    if status.get("binlog_snapshot_file"):  # MariaDB: the snapshot's own position, no lock needed
        return status["binlog_snapshot_file"], int(status["binlog_snapshot_position"])
    # MySQL: hold off writers while the snapshot and the position are taken together.
    cursor.execute("rollback")
    try:
        cursor.execute("flush tables with read lock")
    except pymysql.err.OperationalError as error:
        raise CaptureError(
            f"the server has no lock-free snapshot position (MariaDB's Binlog_snapshot_file), and {error.args[-1]}: "
            "on MySQL the first snapshot holds FLUSH TABLES WITH READ LOCK while it reads the binlog position, "
            "which needs the RELOAD privilege (GRANT RELOAD ON *.* TO the capture user)"
        ) from None
    try:
        cursor.execute("start transaction with consistent snapshot, read only")
        cursor.execute("show master status")
        row = cursor.fetchone()
    finally:
        cursor.execute("unlock tables")
    if not row:
        raise CaptureError("show master status returned nothing: is log_bin on?")
    return row[0], int(row[1])


def _write_truncate_before(capture: Any, table: TableInfo, binlog_file: str, position: int) -> None:
    # One byte before the snapshot's rows, which share the snapshot's position.
    source = {"connector": "mysql", "name": "cdc_merge", "db": table.schema, "table": table.name,
              "file": binlog_file, "pos": position - 1, "row": 0, "ts_ms": None, "snapshot": "false"}
    truncate = debezium_event(op="t", before=None, after=None, source=source, transaction_id=None, total_order=0,
                              processed_ms=int(time.time() * 1000))
    capture.output.write(f"mysql-snapshot-{table.schema}.{table.name}",
                         f"{binlog_file_number(binlog_file)}-{position:012d}", "000000", [truncate])
    capture.summary.files += 1


def _snapshot_table(capture: Any, cursor: Any, table: TableInfo, binlog_file: str, position: int) -> None:
    names = [column.name for column in table.columns]
    cursor.execute(f"select {select_list(table.columns)} from {quoted(table.schema, table.name)}")
    source = {
        "connector": "mysql", "name": "cdc_merge", "db": table.schema, "table": table.name,
        "file": binlog_file, "pos": position, "row": 0, "ts_ms": None, "snapshot": "true",
    }
    part = 0
    while rows := cursor.fetchmany(capture.config.max_changes_per_file):
        part += 1
        now_ms = int(time.time() * 1000)
        events = [
            debezium_event(op="r", before=None, after=row_image(table, dict(zip(names, row))), source=source,
                           transaction_id=None, total_order=0, processed_ms=now_ms)
            for row in rows
        ]
        prefix = f"mysql-snapshot-{table.schema}.{table.name}"
        capture.output.write(prefix, f"{binlog_file_number(binlog_file)}-{position:012d}", f"{part:06d}", events)
        capture.summary.files += 1
        capture.summary.snapshot_rows += len(events)


def select_list(columns: Sequence[Column]) -> str:
    """The columns as the snapshot reads them, for mysql_events.json_value: a FLOAT as the double it is
    (the text protocol shows it with 6 digits, the binlog has all of it)."""
    return ", ".join(f"{quoted(column.name)} + 0e0" if column.data_type == "float" else quoted(column.name)
                     for column in columns)


def quoted(*names: str) -> str:
    """An identifier (or schema and table) in backquotes, a backquote in it doubled: `a``b`."""
    return ".".join("`" + name.replace("`", "``") + "`" for name in names)
