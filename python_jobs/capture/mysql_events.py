"""MariaDB/MySQL row changes as Debezium events: column values as Debezium writes them
(decimal.handling.mode=string, ISO-8601 times) and the events of one committed transaction."""

from __future__ import annotations

import base64
import datetime as dt
import functools
import ipaddress
import json
import math
import re
import struct
import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Mapping, NamedTuple

from python_jobs.capture.output import CAPTURE_VERSION, TransactionOrder

_SET_MEMBER = re.compile(r"'((?:[^']|'')*)'")
_DATE_TYPES = {"date", "datetime", "timestamp"}
# The types whose int or text value is not yet what Debezium writes (a zero date's text, bits, a SET, JSON).
# MariaDB's address and UUID types: their text from the snapshot, their bytes (trailing zero bytes
# cut, all zeros an empty string) from the binlog; (length, the text of the bytes).
_BINARY_TEXT_TYPES = {
    "uuid": (16, lambda data: str(uuid.UUID(bytes=data))),
    "inet6": (16, lambda data: _inet6_text(data)),
    "inet4": (4, lambda data: ".".join(str(byte) for byte in data)),
}
_READ_AGAIN = _DATE_TYPES | {"bit", "set", "json"} | set(_BINARY_TEXT_TYPES)


def _inet6_text(data: bytes) -> str:
    """An INET6 value as MariaDB shows it: IPv4-mapped and IPv4-compatible addresses end in the
    IPv4 address's dotted form (::ffff:1.2.3.4, ::1.2.3.4; not :: or ::1), others as compressed."""
    address = ipaddress.IPv6Address(data)
    if address.ipv4_mapped is not None:
        return f"::ffff:{address.ipv4_mapped}"
    if data[:12] == bytes(12) and int.from_bytes(data[12:], "big") > 1:
        return f"::{ipaddress.IPv4Address(data[12:])}"
    return address.compressed


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

    @functools.cached_property
    def types(self) -> dict[str, Column]:
        # Once per table: asked for every row image a capture writes.
        return {column.name: column for column in self.columns}

    @functools.cached_property
    def qualified(self) -> str:
        return f"{self.schema}.{self.name}"


def json_value(column: Column, value: Any) -> Any:
    """A column value as Debezium writes it (decimal.handling.mode=string, ISO-8601 times).

    The same for snapshot rows (PyMySQL) and binlog rows (python-mysql-replication, after
    mysql_binlog_values), so a row read both ways is equal. TIMESTAMP is UTC in both: the binlog
    stores epoch seconds and the snapshot session runs with time_zone '+00:00'. Zero dates
    ('0000-00-00', a zero month or day) are null, as Debezium writes them for nullable columns: no
    mirror date type holds them. FLOAT is the shortest decimal that is the same 32-bit float.
    """
    if value is None:
        return None
    # The common cases first (a capture converts every value): kept as they are.
    if (value.__class__ is int or value.__class__ is str) and column.data_type not in _READ_AGAIN:
        return value
    if isinstance(value, str) and column.data_type in _DATE_TYPES:
        return None  # a zero date ('0000-00-00', '2020-00-00'), which PyMySQL returns as text and the binlog as None
    if column.data_type == "float" and isinstance(value, float):
        return float32_value(value)
    if column.data_type in _BINARY_TEXT_TYPES:
        if isinstance(value, str) and value:
            return value  # the snapshot's text
        length, text = _BINARY_TEXT_TYPES[column.data_type]
        return text((b"" if isinstance(value, str) else bytes(value)).ljust(length, b"\0"))
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


_FLOAT32_MAX = struct.unpack("<f", b"\xff\xff\x7f\x7f")[0]


def float32_value(value: float) -> float:
    """A FLOAT column's value, a 32-bit float (1.100000023841858 as the binlog gives it), as the
    shortest decimal that is the same 32-bit float (1.1): what the server shows, to every digit."""
    if not math.isfinite(value):
        return value
    single = struct.pack("<f", value)
    for digits in range(1, 10):
        shortest = float(f"{value:.{digits}g}")
        # Near the largest float, fewer digits may round past it (3.4e38), which no 32-bit float is.
        if abs(shortest) <= _FLOAT32_MAX and struct.pack("<f", shortest) == single:
            return shortest
    return value


def row_image(table: TableInfo, values: Mapping[str, Any]) -> dict[str, Any]:
    """Every column of the row; one the table's info does not know yet (added since) by its value's type."""
    types = table.types
    return {name: json_value(types.get(name) or Column(name, "", ""), value) for name, value in values.items()}


class RowChange(NamedTuple):
    """A named tuple, not a dataclass: one is made for every change (a frozen dataclass's fields are
    each set through object.__setattr__, three times as slow)."""

    table: TableInfo
    op: str  # c, u, d, or t (a truncate of the table: no images)
    before: Mapping[str, Any] | None
    after: Mapping[str, Any] | None
    binlog_file: str
    position: int  # start of the rows event
    row: int
    # The images are Debezium's values already (mysql_row_images.py), else the binlog's (binlog_values).
    debezium: bool = False


@dataclass
class Transaction:
    gtid: str | None = None
    begin_file: str = ""
    begin_position: int = 0
    commit_ts_ms: int | None = None
    changes: list[RowChange] = field(default_factory=list)
    # Schema change events of columns its DDL added (mysql_columns.py): written before its changes.
    schema_events: list[dict[str, Any]] = field(default_factory=list)
    # Rows of the online snapshots' signal table (mysql_pages.py): (row, binlog file, event start).
    watermarks: list[tuple[dict[str, Any], str, int]] = field(default_factory=list)
    # Each SAVEPOINT's place in changes: a ROLLBACK TO drops the changes after it (mysql_statements.py).
    savepoints: dict[str, int] = field(default_factory=dict)
    # Tables whose rows its DDL changed with no rows event (partitions, padding), and why: read again
    # online (mysql_stream.py).
    read_again: dict[str, str] = field(default_factory=dict)
    # MariaDB: its GTID event begins a group (BEGIN GTID), which ends at its COMMIT, not at a DDL statement
    # in it (a CREATE TABLE ... SELECT's, whose rows follow it).
    grouped: bool = False

    @property
    def id(self) -> str:
        return self.gtid or f"{self.begin_file}:{self.begin_position}"


def change_events(transaction: Transaction, processed_ms: int) -> list[dict[str, Any]]:
    """Debezium events of one committed transaction, in binlog order.

    An update that changes the primary key becomes a delete of the old key and an insert
    of the new one, as Debezium emits it; the mirror is keyed by the primary key.
    """
    events: list[dict[str, Any]] = list(transaction.schema_events)
    # TransactionOrder's numbering, counted here: once per change.
    total, per_table = 0, dict[str, int]()
    transaction_id, gtid, commit_ms = transaction.id, transaction.gtid, transaction.commit_ts_ms
    for change in transaction.changes:
        table = change.table
        source = {
            "version": CAPTURE_VERSION, "connector": "mysql", "name": "cdc_merge", "db": table.schema, "table": table.name,
            "file": change.binlog_file, "pos": change.position, "row": change.row,
            "gtid": gtid, "ts_ms": commit_ms, "snapshot": "false",
        }
        before, after = change.before, change.after
        if not change.debezium:
            before = row_image(table, before) if before is not None else None
            after = row_image(table, after) if after is not None else None
        operations: tuple[tuple[str, dict | None, dict | None], ...] = ((change.op, before, after),)
        if change.op == "u" and before is not None and after is not None:
            if [before.get(c) for c in table.primary_key] != [after.get(c) for c in table.primary_key]:
                operations = (("d", before, None), ("c", None, after))
        qualified = table.qualified
        for op, before_image, after_image in operations:
            total += 1
            in_table = per_table[qualified] = per_table.get(qualified, 0) + 1
            # output.debezium_event's envelope, built here: once per change.
            events.append({"before": before_image, "after": after_image, "source": source, "op": op, "ts_ms": processed_ms,
                           "transaction": {"id": transaction_id, "total_order": total, "data_collection_order": in_table}})
    if total:
        events.append(TransactionOrder(total, per_table).end_record(transaction_id, commit_ms))
    return events


def binlog_file_number(binlog_file: str) -> str:
    return binlog_file.rsplit(".", 1)[-1]
