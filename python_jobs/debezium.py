"""Parse one Debezium JSON line into the fields of a raw event.

Pure Python on purpose: Spark's JSON functions re-serialize nested objects
through doubles (12345678901234567.891 becomes 1.2345678901234568E16), so the
row images are cut out of the line as exact source text instead.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from decimal import Decimal
from json.decoder import scanstring
from typing import Any, Mapping, Sequence

ACTIONS = {"c": "insert", "u": "update", "d": "delete", "r": "read"}
NOT_ROW_CHANGES = {
    "t": "op 't' (truncate) is not applied by cdc_merge yet; truncate the mirror by hand "
    "or rebuild it with --full-refresh",
    "m": "op 'm' is a logical decoding message, not a row change",
}
# Debezium writes snapshot as a string enum ("true", "last", ...); 0.x wrote a boolean.
NOT_SNAPSHOT = {None, False, "false"}
MYSQL_CONNECTORS = {"mysql", "mariadb"}
POSTGRES_CONNECTORS = {"postgresql"}

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_TRAILING_DIGITS = re.compile(r"(\d+)$")
_DECODER = json.JSONDecoder(parse_float=Decimal)

STATUS_EVENT = "event"
STATUS_TOMBSTONE = "tombstone"
STATUS_BLANK = "blank"
STATUS_REJECTED = "rejected"


class RejectedRecord(ValueError):
    """A line that cannot become a raw event; the message is the quarantine reason."""


@dataclass(frozen=True)
class ParsedLine:
    status: str
    table_name: str | None = None
    key: str | None = None
    action: str | None = None
    raw_data: str | None = None
    before_data: str | None = None
    seq: str | None = None
    source_ts_ms: int | None = None
    reason: str | None = None


def parse_line(text: str, key_columns: Mapping[str, Sequence[str]]) -> ParsedLine:
    """Classify one line: an event, a tombstone, a blank line, or a rejected record."""
    text = text.rstrip("\r")
    if not text.strip():
        return ParsedLine(STATUS_BLANK)
    try:
        return _parse_event(text, key_columns)
    except RejectedRecord as rejected:
        return ParsedLine(STATUS_REJECTED, reason=str(rejected))
    except RecursionError:
        return ParsedLine(STATUS_REJECTED, reason="JSON nested too deeply")


def _parse_event(text: str, key_columns: Mapping[str, Sequence[str]]) -> ParsedLine:
    start = _skip_whitespace(text, 0)
    if text.startswith("null", start) and not text[start + 4 :].strip():
        return ParsedLine(STATUS_TOMBSTONE)
    members = _object_members(text, start, "line")
    if "payload" in members and "op" not in members:
        payload_value, payload_text, payload_start = members["payload"]
        if payload_value is None:
            return ParsedLine(STATUS_TOMBSTONE)
        members = _object_members(text, payload_start, "payload")
    envelope = {name: value for name, (value, _, _) in members.items()}

    op = envelope.get("op")
    if op is None:
        raise RejectedRecord("field 'op' is missing: not a Debezium change event")
    if op in NOT_ROW_CHANGES:
        raise RejectedRecord(NOT_ROW_CHANGES[op])
    if op not in ACTIONS:
        raise RejectedRecord(f"field 'op' has unknown value {_short(op)}; expected c, u, d or r")
    source = envelope.get("source")
    if not isinstance(source, dict):
        raise RejectedRecord("field 'source' is missing or not an object")

    table_name = _table_name(source)
    image_field = "before" if op == "d" else "after"
    image = envelope.get(image_field)
    if not isinstance(image, dict):
        if op == "d":
            raise RejectedRecord(
                "delete has no 'before' image, so the deleted key is unknown "
                "(PostgreSQL: set REPLICA IDENTITY DEFAULT or FULL on the table)"
            )
        raise RejectedRecord(f"op '{op}' needs an 'after' object")
    columns = key_columns.get(table_name)
    if not columns:
        raise RejectedRecord(
            f"no key columns configured for table '{table_name}'; "
            "add it under 'tables:' in the landing config"
        )

    return ParsedLine(
        STATUS_EVENT,
        table_name=table_name,
        key=_canonical_key(image, image_field, columns),
        action=ACTIONS[op],
        raw_data=_member_text(members, "after"),
        before_data=_member_text(members, "before"),
        seq=_seq(source, op),
        source_ts_ms=_source_ts_ms(source, envelope.get("ts_ms")),
    )


def _table_name(source: Mapping[str, Any]) -> str:
    """Schema-qualified source table: Postgres schema.table, MySQL database.table."""
    table = source.get("table")
    namespace = source.get("schema") or source.get("db")
    if not isinstance(table, str) or not table:
        raise RejectedRecord("field 'source.table' is missing")
    if not isinstance(namespace, str) or not namespace:
        raise RejectedRecord("fields 'source.schema' and 'source.db' are both missing")
    return f"{namespace}.{table}"


def _canonical_key(image: Mapping[str, Any], image_field: str, columns: Sequence[str]) -> str:
    """JSON array of the key values as exact text, e.g. ["7","ACME"]."""
    values = []
    for column in columns:
        value = image.get(column)
        if value is None:
            raise RejectedRecord(f"key column '{column}' is missing or null in '{image_field}'")
        if isinstance(value, (dict, list)):
            raise RejectedRecord(f"key column '{column}' in '{image_field}' is not a scalar")
        if isinstance(value, bool):
            values.append("true" if value else "false")
        else:
            values.append(str(value))
    return json.dumps(values, ensure_ascii=False, separators=(",", ":"))


def source_position(source: Mapping[str, Any]) -> tuple[int, int, int]:
    """Where the change sits in the source log, as three non-negative integers."""
    connector = source.get("connector")
    if connector in MYSQL_CONNECTORS:
        binlog_file = source.get("file")
        match = _TRAILING_DIGITS.search(binlog_file) if isinstance(binlog_file, str) else None
        if match is None:
            raise RejectedRecord(
                f"field 'source.file' {_short(binlog_file)} is not a binlog file name ending in a number"
            )
        return (
            int(match.group(1)),
            _non_negative_int(source, "pos"),
            _non_negative_int(source, "row", default=0),
        )
    if connector in POSTGRES_CONNECTORS:
        return (_non_negative_int(source, "lsn"), 0, 0)
    raise RejectedRecord(
        f"connector {_short(connector)} has no supported source position "
        "(supported: mysql, mariadb, postgresql)"
    )


def _seq(source: Mapping[str, Any], op: str) -> str:
    """Fixed-width sortable string: source position, then snapshot rows before streamed ones.

    Two events of one key at the same position are one event delivered twice, so the
    landed file and line are not part of seq; they only break ties inside one batch.
    """
    major, minor, row = source_position(source)
    phase = 0 if (op == "r" or source.get("snapshot") not in NOT_SNAPSHOT) else 1
    return f"{major:020d}.{minor:020d}.{row:010d}.{phase}"


def _source_ts_ms(source: Mapping[str, Any], processed_ts_ms: Any) -> int | None:
    """Commit time in the source; early MySQL snapshots write 0, so fall back to processing time."""
    for value in (source.get("ts_ms"), processed_ts_ms):
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _non_negative_int(source: Mapping[str, Any], field: str, default: int | None = None) -> int:
    value = source.get(field, default)
    if value is None:
        value = default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value >= 10**20:
        raise RejectedRecord(f"field 'source.{field}' is {_short(value)}, not a non-negative integer")
    return value


def _member_text(members: Mapping[str, tuple[Any, str, int]], name: str) -> str | None:
    value, text, _ = members.get(name, (None, None, 0))
    return text if isinstance(value, dict) else None


def _object_members(text: str, start: int, what: str) -> dict[str, tuple[Any, str, int]]:
    """Top-level members of the JSON object at text[start]: name -> (value, exact text, start)."""
    if start >= len(text) or text[start] != "{":
        raise RejectedRecord(f"invalid JSON: {what} is not a JSON object")
    members: dict[str, tuple[Any, str, int]] = {}
    index = _skip_whitespace(text, start + 1)
    if text.startswith("}", index):
        index += 1
    else:
        while True:
            if not text.startswith('"', index):
                raise RejectedRecord(f"invalid JSON: expected a member name at char {index}")
            try:
                name, index = scanstring(text, index + 1)
            except json.JSONDecodeError as error:
                raise RejectedRecord(f"invalid JSON: {error.msg} at char {error.pos}") from None
            index = _skip_whitespace(text, index)
            if not text.startswith(":", index):
                raise RejectedRecord(f"invalid JSON: expected ':' at char {index}")
            value_start = _skip_whitespace(text, index + 1)
            try:
                value, index = _DECODER.raw_decode(text, value_start)
            except json.JSONDecodeError as error:
                raise RejectedRecord(f"invalid JSON: {error.msg} at char {error.pos}") from None
            members[name] = (value, text[value_start:index], value_start)
            index = _skip_whitespace(text, index)
            if text.startswith(",", index):
                index = _skip_whitespace(text, index + 1)
                continue
            if text.startswith("}", index):
                index += 1
                break
            raise RejectedRecord(f"invalid JSON: expected ',' or '}}' at char {index}")
    if what == "line" and text[index:].strip():
        raise RejectedRecord(f"invalid JSON: extra data after the object at char {index}")
    return members


def _skip_whitespace(text: str, index: int) -> int:
    return _WHITESPACE.match(text, index).end()


def _short(value: Any) -> str:
    shown = json.dumps(value, default=str)
    return shown if len(shown) <= 40 else shown[:37] + "..."
