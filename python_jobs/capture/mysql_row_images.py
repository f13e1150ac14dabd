"""A binlog rows event's row images decoded straight to the Debezium values the capture writes, in
one pass, for events whose columns are all of the common types below.

The general path reads each row three times: mysql_rows.fast_rows gives the library's values (a dict
of values and one of none-sources per image), mysql_binlog_values makes them what the snapshot's
SELECT gives, and mysql_events.row_image what Debezium writes (another dict). For an integer or a
text column the last two change nothing, and for a decimal, a double, a float, a date, a datetime or
a timestamp each does one known step; here every image is one dict of the final values, read with
mysql_rows' readers (a decimal's text built from its digits, without a Decimal), half of what the
three passes took. The values are the three passes' (tests/test_capture_mysql_row_images.py holds
the events byte for byte to theirs on a real server).

Which step a value takes is chosen by its binlog type and its column's type in the table's info
(mysql_events.TableInfo, what json_value goes by): any other pair, a column the info lacks, or an
event mysql_rows leaves to the library, and the event takes the general path.
"""

from __future__ import annotations

import datetime as dt
import struct
from typing import Any, Callable

from python_jobs.capture.mysql_binlog_values import ZERO_TIMESTAMP
from python_jobs.capture.mysql_events import TableInfo, float32_value
from python_jobs.capture.mysql_row_decoder import decoder
from python_jobs.capture.mysql_rows import Reader, decimal_layout, readers_of

Image = dict[str, Any]

# Column types (information_schema data_type) whose binlog int or text value json_value and
# binlog_values keep as they are.
_INTEGERS = {"tinyint", "smallint", "mediumint", "int", "bigint"}
_TEXTS = {"char", "varchar", "tinytext", "text", "mediumtext", "longtext"}


def debezium_images(event: Any, table: TableInfo) -> tuple[str, list[tuple[Image | None, Image | None]]] | None:
    """The rows event's op (c, u, d) and the (before, after) images of each of its rows as Debezium
    writes them; or None: the event is left to the general path (fast_rows, binlog_values, row_image)."""
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent

    readers = readers_of(event)
    if readers is None:
        return None
    types = table.types
    plan: list[tuple[str, Reader]] = []
    for column, (name, reader, _) in zip(event.columns, readers):
        info = types.get(name)
        final = _final_reader(column, reader, info.data_type) if info is not None else None
        if final is None:
            return None
        plan.append((name, final))
    # The event's packet is read to its end here: its rows are these images, not event.rows.
    body = event.packet.read(event.event_size - event.packet.read_bytes)
    images = decoder(plan, image_with_nulls)(body)
    if isinstance(event, UpdateRowsEvent):  # each row's before image, then its after image
        return "u", list(zip(images[::2], images[1::2]))
    if isinstance(event, DeleteRowsEvent):
        return "d", [(image, None) for image in images]
    return "c", [(None, image) for image in images]


def _final_reader(column: Any, reader: Reader, data_type: str) -> Reader | None:
    """The reader of a column's Debezium value: mysql_rows' reader and the step json_value and
    binlog_values take for this binlog type and column type; None for a pair not known here."""
    from pymysqlreplication.constants import FIELD_TYPE

    kind = column.type
    if kind in (FIELD_TYPE.TINY, FIELD_TYPE.SHORT, FIELD_TYPE.INT24, FIELD_TYPE.LONG, FIELD_TYPE.LONGLONG):
        return reader if data_type in _INTEGERS else None
    if kind in (FIELD_TYPE.VARCHAR, FIELD_TYPE.STRING, FIELD_TYPE.BLOB):
        return reader if data_type in _TEXTS else None
    if kind == FIELD_TYPE.DOUBLE:
        return reader if data_type == "double" else None
    if kind == FIELD_TYPE.NEWDECIMAL:
        return decimal_text(column.precision, column.decimals) if data_type == "decimal" else None
    if kind == FIELD_TYPE.FLOAT and data_type == "float":
        return _then(reader, float32_value)
    if kind == FIELD_TYPE.DATE and data_type == "date":
        return _then(reader, dt.date.isoformat)
    if kind == FIELD_TYPE.DATETIME2 and data_type == "datetime":
        return _then(reader, lambda value: value.isoformat(timespec="microseconds"))
    if kind == FIELD_TYPE.TIMESTAMP2 and data_type == "timestamp":
        # binlog_values: the epoch itself is the zero timestamp, null.
        return _then(reader, lambda value: None if value == ZERO_TIMESTAMP else value.strftime("%Y-%m-%dT%H:%M:%S.%fZ"))
    return None


def _then(reader: Reader, step: Callable[[Any], Any]) -> Reader:
    """reader, and step on each value it reads that is not None (a zero date stays None)."""

    def read(body: bytes, at: int) -> tuple[Any, int]:
        value, at = reader(body, at)
        return (None if value is None else step(value)), at

    return read


def decimal_text(precision: int, decimals: int) -> Reader:
    """MySQL's packed decimal (mysql_rows._new_decimal) as format(Decimal, "f") writes the library's
    Decimal: its digits with the point before the last `decimals`, a minus sign when the sign bit
    says negative (also "-0.00", as the Decimal writes it)."""
    layout, size = decimal_layout(precision, decimals)
    pad = decimals + 1

    def text(digits: int, negative: bool) -> str:
        written = str(digits)
        if decimals:
            written = written.rjust(pad, "0")
            written = f"{written[:-decimals]}.{written[-decimals:]}"
        return "-" + written if negative else written

    if len(layout) <= 3 and all(length != 3 for length, _ in layout):
        return _few_groups(layout, size, decimals)
    # The sign bit is set for a positive value; a negative value's bytes are complemented besides.
    top = 1 << (8 * size - 1)
    negative_mask = ((1 << (8 * size)) - 1) ^ top
    # From the least significant group: (its bits, its mask, 10 ** its digits).
    groups = [(8 * length, (1 << (8 * length)) - 1, 10 ** width) for length, width in reversed(layout)]

    def read(body: bytes, at: int) -> tuple[str, int]:
        packed = int.from_bytes(body[at:at + size], "big")
        negative = not packed & top
        packed ^= negative_mask if negative else top
        digits, scale = 0, 1
        for bits, mask, factor in groups:
            digits += (packed & mask) * scale
            packed >>= bits
            scale *= factor
        return text(digits, negative), at + size

    return read


def _few_groups(layout: list[tuple[int, int]], size: int, decimals: int) -> Reader:
    """decimal_text's reader of the common decimals, of at most three digit groups of 1, 2 or 4 bytes
    (decimal(12,2): 1 + 9 + 2 digits): its groups unpacked at once and its text written in place,
    twice as fast."""
    pad = decimals + 1
    unpack = struct.Struct(">" + "".join({1: "B", 2: "H", 4: "I"}[length] for length, _ in layout)).unpack_from
    masks = [(1 << (8 * length)) - 1 for length, _ in layout] + [0] * (3 - len(layout))
    top = 1 << (8 * layout[0][0] - 1)  # the sign bit, in the first group
    first_negative, second_negative, third_negative = masks[0] ^ top, masks[1], masks[2]
    second, third = [10 ** width for _, width in layout[1:]] + [1] * (3 - len(layout))
    missing = (0,) * (3 - len(layout))

    def read(body: bytes, at: int) -> tuple[str, int]:
        first, middle, last = unpack(body, at) + missing
        negative = not first & top
        if negative:
            first, middle, last = first ^ first_negative, middle ^ second_negative, last ^ third_negative
        else:
            first ^= top
        written = str((first * second + middle) * third + last)
        if decimals:
            written = written.rjust(pad, "0")
            written = f"{written[:-decimals]}.{written[-decimals:]}"
        return ("-" + written if negative else written), at + size

    return read


def image_with_nulls(body: bytes, at: int, plan: list[tuple[str, Reader]], bitmap_size: int) -> tuple[Image, int]:
    """The image at `at` (its NULL bitmap first), and where the next begins."""
    nulls = body[at:at + bitmap_size]
    at += bitmap_size
    image: Image = {}
    for index, (name, read) in enumerate(plan):
        if nulls[index >> 3] & (1 << (index & 7)):
            image[name] = None
        else:
            image[name], at = read(body, at)
    return image, at


def decode_each(body: bytes, plan: list[tuple[str, Reader]]) -> list[Image]:
    """Every image of the event's rows, in order (an update's before then its after), column by
    column: what mysql_row_decoder's unrolled functions give."""
    images = []
    bitmap_size = (len(plan) + 7) // 8
    at, end = 0, len(body)
    while at < end:
        image, at = image_with_nulls(body, at, plan, bitmap_size)
        images.append(image)
    return images
