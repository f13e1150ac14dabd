"""Row values as python-mysql-replication 1.0 decodes them from the binlog, made what the snapshot's
SELECT returns for the same row, so that a row reads the same both ways (mysql_events.json_value
then writes both alike)."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any, Mapping

from python_jobs.capture.mysql_events import TableInfo

_BINARY_LENGTH = re.compile(r"^binary\((\d+)\)$")
# A TIMESTAMP cannot hold the epoch itself (its range starts a second later): the binlog's 0 is the
# zero timestamp '0000-00-00 00:00:00'.
ZERO_TIMESTAMP = dt.datetime(1970, 1, 1)


def _read_old_time(event: Any) -> dt.timedelta:
    """A TIME of MariaDB 5.3's (and MySQL 5.5's) format, `time /* mariadb-5.3 */` in the catalog: a
    signed three-byte integer, -123456 for -12:34:56; the library reads it unsigned (1665:38:00)."""
    value = int.from_bytes(event.packet.read(3), "little", signed=True)
    sign, value = (-1 if value < 0 else 1), abs(value)
    return sign * dt.timedelta(hours=value // 10000, minutes=value // 100 % 100, seconds=value % 100)


def use_signed_old_time() -> None:
    from pymysqlreplication.row_event import RowsEvent

    RowsEvent._RowsEvent__read_time = _read_old_time


use_signed_old_time()  # before any event is read


def binlog_values(table: TableInfo, values: Mapping[str, Any], none_sources: Mapping[str, str]) -> dict[str, Any]:
    """values of one row image; none_sources: the library's reason for each None ("null", "empty set", ...)."""
    fixed = dict(values)
    types = table.types
    for name, value in values.items():
        column = types.get(name)
        if column is None:
            continue
        if value is None:
            # The library gives None for an empty SET too; only its none_sources tells it from NULL.
            if column.data_type == "set" and none_sources.get(name) == "empty set":
                fixed[name] = frozenset()
        elif column.data_type == "time" and isinstance(value, dt.timedelta) and value < dt.timedelta(0):
            fixed[name] = _negative_time(value)
        elif column.data_type == "year" and value == 1900:
            fixed[name] = 0  # YEAR 0000 is stored as 0, to which the library adds 1900
        elif column.data_type == "timestamp" and value == ZERO_TIMESTAMP:
            fixed[name] = None
        elif column.data_type == "binary" and isinstance(value, (bytes, bytearray, str)):
            # The binlog leaves out a BINARY(n) value's trailing zero bytes, which the column stores
            # (and the library gives an empty one as text).
            length = _BINARY_LENGTH.match(column.column_type)
            if length:
                stored = value.encode() if isinstance(value, str) else bytes(value)
                fixed[name] = stored.ljust(int(length.group(1)), b"\0")
    return fixed


def _negative_time(value: dt.timedelta) -> dt.timedelta:
    """Undo the library's decoding of a negative TIME with a fraction.

    The server stores a negative TIME2 as the two's complement of the whole number, fraction
    included; the library complements the seconds and the fraction separately and returns
    -(12:34:56.22) for -12:34:56.78.
    """
    whole_seconds, fraction = divmod(-value, dt.timedelta(seconds=1))
    if fraction:
        return -(dt.timedelta(seconds=whole_seconds) + dt.timedelta(seconds=1) - fraction)
    return value
