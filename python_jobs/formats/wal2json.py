"""Parse one wal2json format-version 2 line, as pg_recvlogical writes it, into raw events.

    pg_recvlogical -d shop --slot cdc --start -f changes.json -o format-version=2 \
        -o include-lsn=true -o include-pk=true -o include-timestamp=true -o include-xids=true

    {"action":"U","lsn":"0/1527660","timestamp":"2026-11-22 14:05:16.05+00","schema":"shop",
     "table":"accounts","columns":[{"name":"id","type":"bigint","value":3},...],
     "identity":[{"name":"id","type":"bigint","value":1}],"pk":[{"name":"id","type":"bigint"}]}

With include-xids=true each change carries its transaction's xid and the commit record ("C")
lands as the transaction's end marker (python_jobs/formats/transactions.py); begin records are
kept in the quarantine table as not a row change.

Also the value conventions shared with python_jobs/capture/postgres.py: values become what
Debezium writes (exact decimals, ISO-8601 UTC timestamps), so one mirror model reads both.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import re
from dataclasses import replace
from typing import Any, Callable, Iterator, Mapping, Sequence

from python_jobs.formats.records import (
    STATUS_EVENT,
    IgnoredRecord,
    Members,
    ParsedLine,
    RejectedRecord,
    array_elements,
    canonical_key,
    format_seq,
    key_columns_for,
    line_ordered_seq,
    short,
    truncate_event,
)
from python_jobs.formats.transactions import transaction_id, tx_end_marker

_INTEGER_TYPES = {"smallint", "integer", "bigint", "oid"}
_FLOAT_TYPES = {"real", "double precision"}
# The types wal2json writes as bare JSON numbers.
_BARE_NUMBER_TYPES = _INTEGER_TYPES | _FLOAT_TYPES | {"numeric"}
_NOT_FINITE = {"NaN", "Infinity", "-Infinity"}
# The types wal2json writes otherwise than as their text output (snapshot_converter says how); a
# value of a domain over one comes as the text output.
NOT_AS_TEXT_TYPES = _BARE_NUMBER_TYPES | {"boolean", "bytea"}
NOT_ROW_CHANGES = {
    "B": "wal2json transaction begin",
    "M": "logical decoding message",
}


_LSN = re.compile(r"^([0-9A-Fa-f]{1,8})/([0-9A-Fa-f]{1,8})$")


def parse_lsn(text: Any) -> int:
    """'16/B374D848' -> the 64-bit WAL position (two 32-bit halves in hex)."""
    match = _LSN.match(text) if isinstance(text, str) else None
    if match is None:
        raise RejectedRecord(f"field 'lsn' is {short(text)}, not a WAL position like 16/B374D848")
    return (int(match.group(1), 16) << 32) + int(match.group(2), 16)


def json_value(pg_type: str, value: Any) -> Any:
    """A column value as Debezium writes it (decimal.handling.mode=string, ISO-8601 times).

    Numbers arrive as their exact text (json parse_float/parse_int=str), so decimals and
    bigints are never rounded through a float.
    """
    return None if value is None else value_converter(pg_type)(value)


@functools.lru_cache(maxsize=4096)
def value_converter(pg_type: str) -> Callable[[Any], Any]:
    """json_value's conversion for one column type, chosen once per type (captures convert millions)."""
    base_type = pg_type.split("(")[0].strip()
    if base_type in _INTEGER_TYPES:
        return int
    if base_type in _FLOAT_TYPES:
        return _float_value
    if base_type == "timestamp with time zone":
        return _utc_timestamp
    if base_type == "timestamp without time zone":
        return lambda value: None if value.endswith(_BEFORE_CHRIST) else value.replace(" ", "T", 1)
    if base_type in ("date", "timestamp"):  # timestamp(n) with or without time zone: as sent
        return _unless_before_christ
    return _as_sent


# How the server writes a time before year 1, which no mirror's reader takes: Spark reads the date
# '0044-03-15 BC' as the year 44, and fails on such a timestamp in JSON; Python holds neither.
_BEFORE_CHRIST = " BC"


def _unless_before_christ(value: Any) -> Any:
    return None if value.endswith(_BEFORE_CHRIST) else value


def _float_value(value: Any) -> Any:
    number = float(value)
    return value if number != number or number in (float("inf"), float("-inf")) else number


def _utc_timestamp(value: str) -> str:
    # Already in UTC, as the captures' sessions render it ("2026-01-02 03:04:05.5+00"): rewritten
    # as text, several times faster than through datetime, to the same result.
    # (Years before 1000 take the slow path.)
    if value.endswith("+00") and len(value) >= 22 and value[10] == " " and value[4] == "-" and value[13] == ":" \
            and value[0] != "0":
        clock = value[11:-3]
        seconds, _, fraction = clock.partition(".")
        if len(seconds) == 8 and len(fraction) <= 6 and (fraction.isdigit() or not fraction):
            return f"{value[:10]}T{seconds}.{fraction:0<6}Z"
    if value.endswith(_BEFORE_CHRIST):
        return None
    try:
        instant = dt.datetime.fromisoformat(value)
    except ValueError:  # infinity, years past 9999: kept as the server wrote them (a mirror reads null)
        return value
    # A time without a zone is one the capture's sessions read (TimeZone=UTC), not the machine's local time.
    instant = instant.replace(tzinfo=dt.timezone.utc) if instant.tzinfo is None else instant.astimezone(dt.timezone.utc)
    # strftime's %Y writes years before 1000 without their leading zeros.
    return f"{instant.year:04d}-{instant:%m-%dT%H:%M:%S.%f}Z"


def _as_sent(value: Any) -> Any:
    """Text types, json, arrays, bytea, ...: the type's text output, as wal2json sends it."""
    return value


def keeps_text(convert: Callable[[Any], Any]) -> bool:
    """Whether a converter returns its value as it is (a reader may then skip calling it)."""
    return convert is _as_sent


def snapshot_converter(pg_type: str) -> Callable[[str], Any]:
    """value_converter for a column read as its type's text output (format('%s', column)), as the
    capture's snapshot reads it. wal2json sends that same text but for numbers and booleans, which it writes
    bare (not-finite numbers as null), and bytea, whose hex it sends without the leading \\x; every
    other type converts alike."""
    if pg_type == "boolean":
        return lambda text: text in ("t", "true")
    if pg_type == "bytea":
        return lambda text: text[2:] if text.startswith("\\x") else text
    convert = value_converter(pg_type)
    base_type = pg_type.split("(")[0]
    if base_type in _INTEGER_TYPES:  # never NaN or infinite
        return convert
    if base_type in _BARE_NUMBER_TYPES:
        # wal2json 2.5 sends NaN and +-Infinity of these types as null.
        return lambda text: None if text in _NOT_FINITE else convert(text)
    return convert


def parse_members(text: str, members: Members, key_columns: Mapping[str, Sequence[str]]) -> Iterator[ParsedLine]:
    record = {name: value for name, (value, _, _) in members.items()}
    action = record.get("action")
    if action in NOT_ROW_CHANGES:
        raise IgnoredRecord(NOT_ROW_CHANGES[action])
    # With include-xids=true every record carries its transaction's xid; a commit ends it.
    tx = {"tx_id": transaction_id(record["xid"], "xid")} if record.get("xid") is not None else {}
    if action == "C":
        if not tx:
            raise IgnoredRecord("wal2json transaction commit without its xid (use -o include-xids=true)")
        seq = format_seq(parse_lsn(record["lsn"]), 0, 0, 1) if "lsn" in record else line_ordered_seq(1)
        yield tx_end_marker(tx["tx_id"], seq, _timestamp_ms(record.get("timestamp")))
        return
    if action not in ("I", "U", "D", "T"):
        raise RejectedRecord(f"field 'action' is {short(action)}; expected I, U, D or T")
    schema, table = record.get("schema"), record.get("table")
    if not isinstance(schema, str) or not isinstance(table, str):
        raise RejectedRecord("fields 'schema' and 'table' must name the source table")
    table_name = f"{schema}.{table}"
    # pg_recvlogical writes changes in WAL order: without include-lsn=true the line's place orders them.
    seq = format_seq(parse_lsn(record["lsn"]), 0, 0, 1) if "lsn" in record else line_ordered_seq(1)
    source_ts_ms = _timestamp_ms(record.get("timestamp"))
    if action == "T":
        key_columns_for(table_name, key_columns)
        yield replace(truncate_event(table_name, seq, source_ts_ms), **tx)
        return
    identity = _image(text, members, "identity")
    after = _image(text, members, "columns")
    announced = [column.get("name") for column in record.get("pk") or [] if isinstance(column, dict)]
    columns = key_columns_for(table_name, key_columns, announced or None, "pk")

    def event(action_name: str, image: Mapping[str, Any], image_field: str, raw: dict | None, before: dict | None) -> ParsedLine:
        return ParsedLine(
            STATUS_EVENT,
            table_name=table_name,
            key=canonical_key(image, image_field, columns),
            action=action_name,
            raw_data=_text(raw),
            before_data=_text(before),
            seq=seq,
            source_ts_ms=source_ts_ms,
            **tx,
        )

    if action in ("I", "U") and not after:
        raise RejectedRecord(f"action '{action}' needs a non-empty 'columns' array")
    if action == "I":
        yield event("insert", after, "columns", after, None)
    elif action == "D":
        if not identity:
            raise RejectedRecord("a delete without 'identity': the table has REPLICA IDENTITY NOTHING")
        yield event("delete", identity, "identity", None, identity)
    else:
        # Unchanged TOAST values are left out of the new tuple; REPLICA IDENTITY FULL has them.
        for name, value in identity.items():
            after.setdefault(name, value)
        old = canonical_key(identity, "identity", columns) if all(identity.get(c) is not None for c in columns) else None
        new = canonical_key(after, "columns", columns)
        if old is not None and old != new:  # a key change: the old key is gone, as Debezium emits it
            yield event("delete", identity, "identity", None, identity)
            yield event("insert", after, "columns", after, None)
        else:
            yield event("update", after, "columns", after, identity or None)


def _image(text: str, members: Members, name: str) -> dict[str, Any]:
    """{column: value} of a wal2json column list, numbers kept as their exact text."""
    value, _, start = members.get(name, (None, None, 0))
    if value is None:
        return {}
    image = {}
    for column, column_text, _ in array_elements(text, start, f"field '{name}'"):
        if not isinstance(column, dict) or not isinstance(column.get("name"), str):
            raise RejectedRecord(f"field '{name}' has an entry without a column name: {short(column_text)}")
        exact = json.loads(column_text, parse_float=str, parse_int=str)
        pg_type = column.get("type", "")
        if not isinstance(pg_type, str):
            raise RejectedRecord(f"field '{name}': column {short(column['name'])} has type {short(pg_type)}, not a type name")
        try:
            image[column["name"]] = json_value(pg_type, exact.get("value"))
        except (TypeError, ValueError, AttributeError):
            raise RejectedRecord(
                f"field '{name}': column {short(column['name'])} of type {pg_type} has value {short(exact.get('value'))}"
            ) from None
    return image


def _text(image: dict | None) -> str | None:
    return json.dumps(image, ensure_ascii=False, separators=(",", ":")) if image is not None else None


def _timestamp_ms(value: Any) -> int | None:
    if not isinstance(value, str):
        return None
    try:
        return int(dt.datetime.fromisoformat(value).timestamp() * 1000)
    except ValueError:
        return None
