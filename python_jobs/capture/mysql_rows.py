"""A binlog rows event's row images decoded in one pass over its bytes, as python-mysql-replication
1.0 decodes them, for events whose columns are all of the common types below.

The library reads a row column by column through several calls each (a type dispatch, a packet
read, a struct unpack): three quarters of a MariaDB capture's time (BENCHMARKS.md, "Capture").
Here each event's columns are planned once and every row is cut from the event's bytes with
`struct.unpack_from`. The result is what `event.rows` gives, value for value (the same Python
types, the same Decimal text, the same "null" none-sources), so mysql_binlog_values and
mysql_events treat both alike; tests/test_capture_mysql_rows.py compares the two on a real server.

Any event with something else (another column type, a binary or unknown character set, a column
without its name, MINIMAL row images, MySQL's partial JSON updates) is left to the library.
"""

from __future__ import annotations

import codecs
import datetime as dt
import decimal
import struct
from typing import Any, Callable, Sequence

from python_jobs.capture.mysql_charsets import binlog_encoding, use_server_charsets

# Decimal digits in each count of bytes of MySQL's packed decimal (0-9 digits -> 0-4 bytes).
_DECIMAL_BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
_FIXED = {"tiny": ("<b", "<B"), "short": ("<h", "<H"), "long": ("<i", "<I"), "longlong": ("<q", "<Q")}

Reader = Callable[[bytes, int], "tuple[Any, int]"]

use_server_charsets()  # before any event is read

# The library's reason for a None that is not NULL (its NONE_SOURCE): a zero or impossible date.
OUT_OF_DATE_RANGE = "out of date range"
OUT_OF_DATETIME2_RANGE = "out of datetime2 range"


def fast_rows(event: Any) -> list[dict[str, Any]]:
    """event.rows: decoded here when every column is of a type read here, else by the library."""
    readers = readers_of(event)
    if readers is None:
        return event.rows
    body = event.packet.read(event.event_size - event.packet.read_bytes)
    images = 2 if _is_update(event) else 1
    rows = _decode(body, readers, images)
    # The library's own cache of the rows: its packet is read to the end now, so event.rows must not read it again.
    event._RowsEvent__rows = rows
    return rows


def _is_update(event: Any) -> bool:
    from pymysqlreplication.row_event import UpdateRowsEvent

    return isinstance(event, UpdateRowsEvent)


def readers_of(event: Any) -> list[tuple[str, Reader, str]] | None:
    """(name, reader, why a None it reads is None) of each column of the event, or None when one is not read here."""
    from pymysqlreplication.constants import BINLOG
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

    if type(event) not in (WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent) or not getattr(event, "complete", False):
        return None
    if event.event_type == BINLOG.PARTIAL_UPDATE_ROWS_EVENT or event.__dict__.get("_RowsEvent__rows") is not None:
        return None
    columns = event.columns
    bitmaps = [event.columns_present_bitmap] + ([event.columns_present_bitmap2] if _is_update(event) else [])
    if any(not _all_present(bitmap, len(columns)) for bitmap in bitmaps):
        return None  # binlog_row_image=MINIMAL or NOBLOB: the library's bookkeeping of absent columns
    readers = []
    none_sources = _none_sources()
    for column in columns:
        reader = _reader(column, event._ignore_decode_errors)
        if reader is None or not column.name:
            return None
        readers.append((column.name, reader, none_sources.get(column.type, "null")))
    return readers


def _all_present(bitmap: bytes, count: int) -> bool:
    return all(bitmap[index >> 3] & (1 << (index & 7)) for index in range(count))


def absent_columns(event: Any) -> list[str]:
    """The columns an image of the rows event leaves out: logged by a session whose binlog_row_image
    is MINIMAL or NOBLOB, whatever the server's is. The library reads such a column as None."""
    bitmaps = [event.columns_present_bitmap] + ([event.columns_present_bitmap2] if _is_update(event) else [])
    return [column.name or f"#{index + 1}" for index, column in enumerate(event.columns)
            if not all(bitmap[index >> 3] & (1 << (index & 7)) for bitmap in bitmaps)]


def _reader(column: Any, ignore_decode_errors: bool) -> Reader | None:
    from pymysqlreplication.constants import FIELD_TYPE

    kind = column.type
    if kind == FIELD_TYPE.TINY:
        return _fixed(_FIXED["tiny"][bool(column.unsigned)], 1)
    if kind == FIELD_TYPE.SHORT:
        return _fixed(_FIXED["short"][bool(column.unsigned)], 2)
    if kind == FIELD_TYPE.LONG:
        return _fixed(_FIXED["long"][bool(column.unsigned)], 4)
    if kind == FIELD_TYPE.LONGLONG:
        return _fixed(_FIXED["longlong"][bool(column.unsigned)], 8)
    if kind == FIELD_TYPE.INT24:
        return _int24(bool(column.unsigned))
    if kind == FIELD_TYPE.FLOAT:
        return _fixed("<f", 4)
    if kind == FIELD_TYPE.DOUBLE:
        return _fixed("<d", 8)
    if kind == FIELD_TYPE.NEWDECIMAL:
        return _new_decimal(column.precision, column.decimals)
    if kind in (FIELD_TYPE.VARCHAR, FIELD_TYPE.STRING):
        return _text(2 if column.max_length > 255 else 1, column.character_set_name, ignore_decode_errors)
    if kind == FIELD_TYPE.BLOB:
        return _text(column.length_size, column.character_set_name, ignore_decode_errors)
    if kind == FIELD_TYPE.DATE:
        return _date
    if kind == FIELD_TYPE.DATETIME2:
        return _datetime2(column.fsp)
    if kind == FIELD_TYPE.TIMESTAMP2:
        return _timestamp2(column.fsp)
    return None


def _none_sources() -> dict[int, str]:
    from pymysqlreplication.constants import FIELD_TYPE

    return {FIELD_TYPE.DATE: OUT_OF_DATE_RANGE, FIELD_TYPE.DATETIME2: OUT_OF_DATETIME2_RANGE}


def _fixed(layout: str, size: int) -> Reader:
    unpack = struct.Struct(layout).unpack_from

    def read(body: bytes, at: int) -> tuple[Any, int]:
        return unpack(body, at)[0], at + size

    read.inline = ("fixed", layout, size)  # type: ignore[attr-defined]  # mysql_row_decoder.py reads it in place
    return read


def _date(body: bytes, at: int) -> tuple[dt.date | None, int]:
    packed = int.from_bytes(body[at:at + 3], "little")
    year, month, day = packed >> 9, (packed >> 5) & 0xF, packed & 0x1F
    if not (year and month and day):  # the zero date '0000-00-00', or one with a zero part
        return None, at + 3
    return dt.date(year, month, day), at + 3


def _fraction(fsp: int) -> tuple[int, Callable[[bytes], int]]:
    """(bytes, reader of microseconds) of a time's fractional seconds of fsp digits, as the library reads them."""
    size = (fsp + 1) // 2

    def microseconds(data: bytes) -> int:
        value = int.from_bytes(data, "big", signed=True)
        if fsp % 2:
            value = int(value / 10)
        return value * 10 ** (6 - fsp)

    return size, microseconds


def _datetime2(fsp: int) -> Reader:
    """DATETIME(fsp): 40 bits (sign, year*13+month, day, hour, minute, second), then the fraction."""
    size, microseconds = _fraction(fsp)

    def read(body: bytes, at: int) -> tuple[dt.datetime | None, int]:
        packed = int.from_bytes(body[at:at + 5], "big")
        end = at + 5 + size
        year_month = (packed >> 22) & 0x1FFFF
        try:
            value = dt.datetime(year_month // 13, year_month % 13, (packed >> 17) & 0x1F, (packed >> 12) & 0x1F,
                                (packed >> 6) & 0x3F, packed & 0x3F)
        except ValueError:  # a zero date, or one with a zero part
            return None, end
        fraction = microseconds(body[at + 5:end]) if size else 0
        return (value.replace(microsecond=fraction) if fraction > 0 else value), end

    return read


def _timestamp2(fsp: int) -> Reader:
    """TIMESTAMP(fsp): seconds since the epoch (big-endian), then the fraction; the library's UTC datetime."""
    size, microseconds = _fraction(fsp)

    def read(body: bytes, at: int) -> tuple[dt.datetime, int]:
        value = dt.datetime.utcfromtimestamp(int.from_bytes(body[at:at + 4], "big", signed=True))
        end = at + 4 + size
        fraction = microseconds(body[at + 4:end]) if size else 0
        return (value.replace(microsecond=fraction) if fraction > 0 else value), end

    return read


def _int24(unsigned: bool) -> Reader:
    def read(body: bytes, at: int) -> tuple[int, int]:
        return int.from_bytes(body[at:at + 3], "little", signed=not unsigned), at + 3

    return read


def _text(length_size: int, charset: str | None, ignore_decode_errors: bool) -> Reader | None:
    """A string as the library's __read_string gives it: decoded with the column's character set."""
    from pymysqlreplication.row_event import RowsEvent

    if charset is None or charset == "binary" or not 1 <= length_size <= 4:
        return None  # bytes, or the library's guess of an encoding: left to it
    encoding = RowsEvent.charset_to_encoding(charset)
    try:
        codecs.lookup(encoding)
    except LookupError:
        return None  # the library keeps such a value as bytes
    errors = "ignore" if ignore_decode_errors else "strict"

    # The common lengths (a VARCHAR's, a TEXT's) read from their bytes, without a call.
    def read_short(body: bytes, at: int) -> tuple[str, int]:
        end = at + 1 + body[at]
        return body[at + 1:end].decode(encoding, errors), end

    def read_long(body: bytes, at: int) -> tuple[str, int]:
        end = at + 2 + (body[at] | body[at + 1] << 8)
        return body[at + 2:end].decode(encoding, errors), end

    def read(body: bytes, at: int) -> tuple[str, int]:
        length = int.from_bytes(body[at:at + length_size], "little")
        start = at + length_size
        return body[start:start + length].decode(encoding, errors), start + length

    read_short.inline = ("text", 1, encoding, errors)  # type: ignore[attr-defined]  # read in place (mysql_row_decoder.py)
    read_long.inline = ("text", 2, encoding, errors)  # type: ignore[attr-defined]
    return {1: read_short, 2: read_long}.get(length_size, read)


def decimal_layout(precision: int, decimals: int) -> tuple[list[tuple[int, int]], int]:
    """(bytes, digits) of each group of a packed decimal, most significant first (the point after
    the integral ones), and its size in bytes."""
    integral = precision - decimals
    whole_integral, whole_fractional = integral // 9, decimals // 9
    rest_integral, rest_fractional = integral - whole_integral * 9, decimals - whole_fractional * 9
    groups = ([(_DECIMAL_BYTES[rest_integral], rest_integral)] if rest_integral else []) + [(4, 9)] * whole_integral
    fraction_groups = [(4, 9)] * whole_fractional + ([(_DECIMAL_BYTES[rest_fractional], rest_fractional)] if rest_fractional else [])
    layout = groups + fraction_groups
    return layout, sum(length for length, _ in layout)


def _new_decimal(precision: int, decimals: int) -> Reader:
    """MySQL's packed decimal: groups of 9 digits in 4 bytes (fewer digits in fewer bytes at either
    end), big-endian, the sign in the first byte's high bit, a negative value's bytes complemented.
    The same Decimal as the library's __read_new_decimal (same digits, same exponent)."""
    layout, size = decimal_layout(precision, decimals)
    exponent = f"E-{decimals}"

    def read(body: bytes, at: int) -> tuple[decimal.Decimal, int]:
        data = bytearray(body[at:at + size])
        negative = not data[0] & 0x80
        data[0] ^= 0x80
        if negative:
            data = bytearray(byte ^ 0xFF for byte in data)
        digits = 0
        offset = 0
        for length, width in layout:
            digits = digits * 10 ** width + int.from_bytes(data[offset:offset + length], "big")
            offset += length
        return decimal.Decimal(f"{'-' if negative else ''}{digits}{exponent}"), at + size

    return read


def _decode(body: bytes, readers: Sequence[tuple[str, Reader, str]], images: int) -> list[dict[str, Any]]:
    rows = []
    bitmap_size = (len(readers) + 7) // 8
    at = 0
    while at < len(body):
        decoded = []
        for _ in range(images):
            nulls = body[at:at + bitmap_size]
            at += bitmap_size
            values: dict[str, Any] = {}
            none_sources: dict[str, str] = {}
            for index, (name, read, none_source) in enumerate(readers):
                if nulls[index >> 3] & (1 << (index & 7)):
                    values[name] = None
                    none_sources[name] = "null"
                else:
                    values[name], at = read(body, at)
                    if values[name] is None:
                        none_sources[name] = none_source
            decoded.append((values, none_sources))
        if images == 2:
            (before, before_nones), (after, after_nones) = decoded
            rows.append({"before_values": before, "before_none_sources": before_nones,
                         "after_values": after, "after_none_sources": after_nones})
        else:
            rows.append({"values": decoded[0][0], "none_sources": decoded[0][1]})
    return rows
