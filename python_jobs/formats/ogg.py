"""Parse one Oracle GoldenGate JSON line (GoldenGate for Big Data's JSON formatter, as read
by Flink's ogg-json format) into the fields of a raw event.

    {"table":"OGG.TBL_TEST","pos":"00000000000000000000143","primary_keys":["id"],
     "after":{...},"op_type":"I","op_ts":"2020-05-13 15:40:06.000000"}
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import replace
from typing import Any, Mapping, Sequence

from python_jobs.formats.records import (
    STATUS_EVENT,
    Members,
    ParsedLine,
    RejectedRecord,
    canonical_key,
    format_seq,
    key_columns_for,
    line_ordered_seq,
    positive_ms,
    short,
    truncate_event,
)

ACTIONS = {"I": "insert", "U": "update", "D": "delete"}
_POSITION = re.compile(r"^[0-9]{1,40}$")


def parse_members(text: str, members: Members, key_columns: Mapping[str, Sequence[str]]) -> ParsedLine | list[ParsedLine]:
    record = {name: value for name, (value, _, _) in members.items()}
    op_type = record.get("op_type")
    if not isinstance(op_type, str):
        raise RejectedRecord(f"field 'op_type' is {short(op_type)}, not I, U or D")
    if op_type not in ACTIONS and op_type != "T":
        raise RejectedRecord(f"field 'op_type' has unknown value {short(op_type)}; expected I, U, D or T")
    table_name = record.get("table")
    if not isinstance(table_name, str) or table_name.count(".") < 1:
        raise RejectedRecord(f"field 'table' is {short(table_name)}, not a schema-qualified table name")
    if op_type == "T":
        key_columns_for(table_name, key_columns, record.get("primary_keys"), "primary_keys")
        return truncate_event(table_name, _seq(record.get("pos")), _op_ts_ms(record.get("op_ts")))
    image_field = "before" if op_type == "D" else "after"
    image = record.get(image_field)
    if not isinstance(image, dict):
        raise RejectedRecord(f"op_type '{op_type}' needs a '{image_field}' object")
    columns = key_columns_for(table_name, key_columns, record.get("primary_keys"), "primary_keys")
    event = ParsedLine(
        STATUS_EVENT,
        table_name=table_name,
        key=canonical_key(image, image_field, columns),
        action=ACTIONS[op_type],
        raw_data=_object_text(members, "after"),
        before_data=_object_text(members, "before"),
        seq=_seq(record.get("pos")),
        source_ts_ms=_op_ts_ms(record.get("op_ts")),
    )
    before = record.get("before")
    if op_type != "U" or not isinstance(before, dict) or any(before.get(column) is None for column in columns):
        return [event]
    old_key = canonical_key(before, "before", columns)
    if old_key == event.key:
        return [event]
    # An update of the key (GoldenGate's pkUpdateHandling 'update'): the before image's key is gone
    # from the source, as Debezium emits it, a delete and then an insert of the new key.
    return [replace(event, key=old_key, action="delete", raw_data=None), replace(event, action="insert", before_data=None)]


def _seq(position: Any) -> str:
    """pos is the trail position (file sequence number and RBA) as zero-padded digits; without
    it the line's place orders the event (op_ts is a time, and goes backwards across transactions)."""
    if position is None:
        return line_ordered_seq(1)
    if not isinstance(position, str) or not _POSITION.match(position):
        raise RejectedRecord(f"field 'pos' is {short(position)}, not a trail position of up to 40 digits")
    digits = position.rjust(40, "0")
    return format_seq(int(digits[:20]), int(digits[20:]), 0, 1)


def _op_ts_ms(op_ts: Any) -> int | None:
    """op_ts is the source commit time, 'YYYY-MM-DD HH:MM:SS.ffffff' in UTC."""
    if not isinstance(op_ts, str):
        return None
    try:
        moment = dt.datetime.fromisoformat(op_ts.replace(" ", "T"))
    except ValueError:
        raise RejectedRecord(f"field 'op_ts' is {short(op_ts)}, not a timestamp") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return positive_ms(int(moment.timestamp() * 1000))


def _object_text(members: Members, name: str) -> str | None:
    value, text, _ = members.get(name, (None, None, 0))
    return text if isinstance(value, dict) else None
