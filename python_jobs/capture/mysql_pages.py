"""The MariaDB/MySQL side of online snapshots (docs/online_snapshots.md): watermarks as rows of a
signal table the binlog carries, a page read by key in the order the mirrors compare keys in, what
the binlog's transactions tell the open page (snapshot_pages.Pages), and the capture's steps
around them. `capture` is mysql_server.MysqlCapture; mysql.stream() calls these between files. Why over
300 lines: the page query's key order (which the range records name) and the pages' steps share it."""

from __future__ import annotations

import datetime as dt
import logging
import re
import time
import uuid
from decimal import Decimal
from typing import Any, Mapping, Sequence

from python_jobs.capture.mysql_columns import read_table_info
from python_jobs.capture.mysql_events import Column, TableInfo, binlog_file_number, json_value, row_image
from python_jobs.capture.mysql_snapshot import quoted as _quoted, select_list
from python_jobs.capture.output import CaptureError
from python_jobs.capture.snapshot_pages import (
    OpenPage,
    Pages,
    TableSnapshot,
    page_events,
    take_requested,
    write_page_file,
)
from python_jobs.capture.snapshot_requests import REQUESTS_EVERY_SECONDS, refuse, taken_requests
from python_jobs.formats.records import RejectedRecord, canonical_key

log = logging.getLogger("cdc_merge.capture")

SIGNAL_TABLE = "cdc_merge.watermarks"
SIGNAL_TABLE_DDL = ("create table {table} (id bigint auto_increment primary key, page varchar(64) not null, "
                    "mark varchar(8) not null)")
_QUALIFIED = re.compile(r"^[A-Za-z0-9_$]+\.[A-Za-z0-9_$]+$")
_TEXT = {"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set"}
_BINARY = {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"}
_AS_TEXT = {"uuid", "inet4", "inet6"}
_INTEGER = {"tinyint", "smallint", "mediumint", "int", "integer", "bigint", "bit", "year"}


def signal_table_help(table: str, user: str) -> str:
    return (f"create it and let the capture user write it: {SIGNAL_TABLE_DDL.format(table=table)}; "
            f"grant insert on {table} to {user}")


def check_signal_table(connection: Any, table: str, user: str) -> None:
    """Online snapshots write their watermarks into the signal table: fail before anything is read
    if it cannot be written (the row written is a watermark of no page, which says nothing)."""
    import pymysql

    if not _QUALIFIED.match(table):
        raise CaptureError(f"--signal-table {table!r} is not database.table")
    try:
        emit_watermark(connection, table, "check", "none")
    except pymysql.err.MySQLError as error:
        raise CaptureError(f"online snapshots write watermarks into {table}, which failed ({error.args[-1]}): "
                           f"{signal_table_help(table, user)}") from None


def emit_watermark(connection: Any, table: str, page: str, mark: str) -> None:
    """A low or high watermark of a page: a row of the signal table, committed at once (autocommit)."""
    schema, name = table.split(".")
    with connection.cursor() as cursor:
        cursor.execute(f"insert into {_quoted(schema, name)} (page, mark) values (%s, %s)", (page, mark))


def _key_expressions(column: Column) -> tuple[str, str, str]:
    """How a key column is ordered, shown (the text a page's last key is kept as) and compared with
    such a text: in the order the mirrors compare its written value, so that a page's key range is
    the same range in a mirror (strings by their UTF-8 bytes, binary as its base64 text)."""
    quoted = _quoted(column.name)
    if column.data_type in _TEXT:
        return (f"cast(convert({quoted} using utf8mb4) as binary)", f"convert({quoted} using utf8mb4)",
                "cast(convert(%s using utf8mb4) as binary)")
    if column.data_type in _BINARY:
        return f"cast(to_base64({quoted}) as binary)", f"hex({quoted})", "cast(to_base64(unhex(%s)) as binary)"
    if column.data_type == "time":  # written as text ('-12:00:00.000000', '100:00:00.000000'), not in time order
        written = f"time_format({quoted}, '%%H:%%i:%%s.%%f')"  # in statements with parameters: % doubled
        return f"cast({written} as binary)", written, "cast(%s as binary)"
    if column.data_type == "year":  # a text of fewer than four digits is a two-digit year ('0' is 2000), not 0000
        return quoted, f"cast({quoted} as char)", "lpad(%s, 4, '0')"
    if column.data_type in ("float", "double"):  # a float's text '0.1' compared as a double is not its value
        return quoted, f"cast({quoted} as char)", f"cast(%s as {column.data_type})"
    if column.data_type == "bit":  # written as its number; its own text is its bytes
        return f"({quoted} + 0)", f"cast({quoted} + 0 as char)", "cast(%s as unsigned)"
    if column.data_type in _AS_TEXT or (column.data_type == "decimal" and _precision(column.column_type) > 38):
        # Mirrored as its text (a uuid, an address, a decimal wider than a mirror's), which the
        # server orders otherwise (a time-based uuid by its time, inet6 by its bytes, a decimal by value).
        return f"cast(cast({quoted} as char) as binary)", f"cast({quoted} as char)", "cast(%s as binary)"
    return quoted, f"cast({quoted} as char)", "%s"


def key_order(column: Column) -> str:
    """How pages order the key column (snapshot_pages.KEY_ORDERS), as _key_expressions does: by its
    written text's bytes, by its number, or by another value of its own order (a date, a time of day)."""
    if _key_expressions(column)[0].startswith("cast("):
        return "text"
    return "value" if column.data_type in ("date", "datetime", "timestamp") else "number"


def _precision(column_type: str) -> int:
    found = re.search(r"\((\d+)", column_type)
    return int(found.group(1)) if found else 10


def _compare(expressions: Sequence[tuple[str, str]], operator: str) -> str:
    """Keys compared in order (a > b: a1 > b1, or a1 = b1 and a2 > b2, ...); operator's last
    term may include equality (>=, <=). The first column's bound leads, for the range optimizer."""
    strict = operator[0]
    terms = []
    for index, (ordered, parameter) in enumerate(expressions):
        last = index == len(expressions) - 1
        equal = [f"{o} = {p}" for o, p in expressions[:index]]
        terms.append(" and ".join([*equal, f"{ordered} {operator if last else strict} {parameter}"]))
    first = f"{expressions[0][0]} {strict}= {expressions[0][1]}"
    return f"({first} and ({' or '.join(terms)}))"


def read_page(connection: Any, table: TableInfo, snapshot: TableSnapshot, page_rows: int, number: int,
              token: str) -> OpenPage:
    """The next page of a snapshot: at most page_rows rows after snapshot.after, through snapshot.through,
    in key order, every value as the capture writes it."""
    types = table.types
    key = [types[name] for name in table.primary_key]
    expressions = [_key_expressions(column) for column in key]
    conditions, parameters = [], []
    for bound, operator in ((snapshot.after, ">=" if snapshot.start_inclusive else ">"), (snapshot.through, "<=")):
        if bound is not None:
            compared = [(ordered, parameter) for ordered, _, parameter in expressions]
            conditions.append(_compare(compared, operator))
            parameters.extend(_bound_parameters(bound))
    where = f"where {' and '.join(conditions)}" if conditions else ""
    names = [column.name for column in table.columns]
    order = ", ".join(ordered for ordered, _, _ in expressions)
    shown = ", ".join(text for _, text, _ in expressions)
    with connection.cursor() as cursor:
        cursor.execute(f"select {select_list(table.columns)}, {shown} from {_quoted(table.schema, table.name)} {where} "
                       f"order by {order} limit {int(page_rows)}", parameters)
        fetched = cursor.fetchall()
    rows = [row_image(table, dict(zip(names, values))) for values in fetched]
    last = fetched[-1] if fetched else None
    return OpenPage(
        snapshot=snapshot, number=number, key_columns=table.primary_key, rows=rows,
        last_key=[_text(value) for value in last[len(names):]] if last else None,
        last_image={name: rows[-1][name] for name in table.primary_key} if rows else None,
        reaches_end=len(fetched) < page_rows, token=token, key_order=tuple(key_order(column) for column in key),
    )


def _bound_parameters(bound: Sequence[str]) -> list[str]:
    """A lexicographic comparison names the key's first columns again in each term (_compare)."""
    parameters = [bound[0]]
    for index in range(len(bound)):
        parameters.extend(bound[:index + 1])
    return parameters


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, (bytes, bytearray)) else str(value)


def key_image(column: Column, text: str) -> Any:
    """A key value given as text (cdc-snapshot --from/--to, the text _key_expressions shows) as the
    capture writes it."""
    data_type = column.data_type
    if data_type == "bit":
        return int(text)  # its number, as written (json_value reads a bit's value as its binary digits)
    if data_type in _INTEGER:
        value: Any = int(text)
    elif data_type == "decimal":
        value = Decimal(text)
    elif data_type in ("float", "double"):
        value = float(text)
    elif data_type == "date":
        value = dt.date.fromisoformat(text)
    elif data_type in ("datetime", "timestamp"):
        value = dt.datetime.fromisoformat(text)
    elif data_type in _BINARY:
        value = bytes.fromhex(text)
    else:
        value = text
    return json_value(column, value)


def watch_transaction(pages: Pages, changes: Sequence[Mapping[str, Any]], watermarks: Sequence[tuple[Mapping[str, Any], str, int]],
                      key_columns: Mapping[str, Sequence[str]]) -> None:
    """What one committed transaction tells the open page: the keys of its table changed inside the
    page's window (its events' images), then the watermarks it holds (file, position)."""
    for event in changes:
        source = event.get("source") or {}
        table = f"{source.get('db')}.{source.get('table')}"
        if not pages.window_open(table):
            continue
        if event.get("op") == "t":
            pages.emptied(table)
            continue
        for image_field in ("before", "after"):
            if isinstance(event.get(image_field), dict):
                try:
                    pages.changed(table, canonical_key(event[image_field], image_field, key_columns[table]))
                except RejectedRecord:
                    pass
    for content, binlog_file, position in watermarks:
        pages.watermark(content, (binlog_file, position))


def check_read_again(capture: Any, statement: str, tables: str) -> None:
    """Tables whose partitions a statement changed are read again online, which writes watermarks
    into the signal table: without one the capture stops before it goes past the statement."""
    if capture.signal_checked:
        return
    try:
        check_signal_table(capture.page_connection(), capture.config.signal_table, capture.config.user)
    except CaptureError as error:
        raise CaptureError(f"{statement} changes rows of {tables} with no rows event in the binlog, which the capture "
                           f"reads again online; but {error}; or run the capture once with --resnapshot") from None
    capture.signal_checked = True


def take_snapshot_requests(capture: Any) -> None:
    """cdc-snapshot's requests (snapshot_requests.py): each table or key range read again, online."""
    capture.requests_taken_at = time.monotonic()
    state = capture.config.state
    with taken_requests(state, capture.pages) as requests:
        if requests and not capture.signal_checked:
            try:
                check_signal_table(capture.page_connection(), capture.config.signal_table, capture.config.user)
            except CaptureError as error:
                for request in requests:
                    refuse(state, request, str(error), log)
                return
            capture.signal_checked = True
        for request in requests:
            table = request.get("table")
            info = capture.tables.get(table)
            if info is None:
                refuse(state, request, f"not a table this capture reads ({', '.join(capture.config.tables)})", log)
                continue
            key = [info.types[name] for name in info.primary_key]
            reason = take_requested(capture.pages, request, info.primary_key,
                                    lambda index, text: key_image(key[index], text), log)
            if reason is not None:
                refuse(state, request, reason, log)


def open_next_page(capture: Any) -> bool:
    """The next page of an online snapshot, read between its watermarks, if one may be read now
    (snapshot_pages.py); whether one was. A table dropped meanwhile ends its snapshot."""
    import pymysql

    if time.monotonic() - capture.requests_taken_at >= REQUESTS_EVERY_SECONDS:
        take_snapshot_requests(capture)
    snapshot = capture.pages.next_to_open(capture.config.snapshot_rows_per_second)
    if snapshot is None:
        return False
    number, token = snapshot.pages, uuid.uuid4().hex[:8]
    watermark = f"{snapshot.id}:{number}:{token}"  # OpenPage.watermark_id
    connection = capture.page_connection()
    emit_watermark(connection, capture.config.signal_table, watermark, "low")
    # The table's columns as the SELECT finds them, not as the stream last saw them (capture.tables): an
    # ALTER TABLE committed before the low watermark, which the stream has not reached, added a column the
    # page's rows would lack, written after it (its default null in the mirror).
    qualified = capture.tables[snapshot.table].qualified
    table = read_table_info(connection, qualified, missing_ok=True)
    try:
        page = None if table is None else read_page(connection, table, snapshot, capture.config.page_rows, number, token)
    except pymysql.err.OperationalError as error:
        if error.args[0] != 1054:  # ER_BAD_FIELD_ERROR: a column dropped or renamed since; read again
            raise
        return False
    except pymysql.err.ProgrammingError as error:
        if error.args[0] != 1146:  # ER_NO_SUCH_TABLE
            raise
        page = None
    if page is None:
        log.warning("online snapshot of %s ends: the table is gone", snapshot.table)
        capture.pages.snapshots.remove(snapshot)
        return True
    emit_watermark(connection, capture.config.signal_table, watermark, "high")
    if read_table_info(connection, qualified, missing_ok=True) != table:
        log.info("a page of %s is read again: an ALTER TABLE changed its columns while it was read", snapshot.table)
        return False
    capture.pages.opened(page)
    return True


def write_page(capture: Any, page: OpenPage, processed_ms: int) -> None:
    """A page the stream has passed: its rows and range record as one file (snapshot_pages.page_events).
    Its watermarks' positions are (binlog file, start of their rows event)."""
    schema, name = page.snapshot.table.split(".")

    def source(position: tuple[str, int], snapshot: bool) -> dict[str, Any]:
        binlog_file, start = position
        return {"connector": "mysql", "name": "cdc_merge", "db": schema, "table": name, "file": binlog_file,
                "pos": start, "row": 0, "ts_ms": None, "snapshot": "true" if snapshot else "false"}

    write_page_file(capture, page, f"mysql-pages-{page.snapshot.table}",
                    f"{binlog_file_number(page.high[0])}-{page.high[1]:012d}", page_events(page, source, processed_ms), log)


def read_added_tables(capture: Any, known: Sequence[str] | None) -> None:
    """A table added to --tables since the state was written is read online, as the others stream."""
    if known is None:  # a state from before tables were recorded: every table was snapshotted
        return
    being_read = capture.pages.tables_being_read()
    for table in capture.config.tables:
        if table not in known and table not in being_read:
            log.info("%s was added to --tables: reading it online while the others stream", table)
            capture.pages.request(TableSnapshot(table, "added to --tables"))
