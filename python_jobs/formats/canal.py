"""Parse one Canal flat message (canal-json) into raw events: one per row of 'data'.

    {"data":[{"id":"106","weight":"1.0"}],"old":[{"weight":"0.9"}],"database":"inventory",
     "table":"products","pkNames":["id"],"isDdl":false,"type":"UPDATE","es":1589373546000,
     "id":4,"ts":1589373546301,"sqlType":{"id":4,"weight":7},...}

Canal writes every value as a string. Columns whose sqlType (java.sql.Types) is numeric are
written into the image as JSON numbers, with their exact text, so a model reads them with
the same cdc_column() casts as any other format.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any, Mapping, Sequence

from python_jobs.formats.records import (
    STATUS_EVENT,
    IgnoredRecord,
    Members,
    ParsedLine,
    RejectedRecord,
    canonical_key,
    key_columns_for,
    line_ordered_seq,
    positive_ms,
    configured_table,
    schema_event,
    short,
    truncate_event,
)

ACTIONS = {"INSERT": "insert", "UPDATE": "update", "DELETE": "delete", "INIT": "read"}
# java.sql.Types: BIT, TINYINT, SMALLINT, INTEGER, BIGINT, FLOAT, REAL, DOUBLE, NUMERIC, DECIMAL.
NUMERIC_SQL_TYPES = {-7, -6, 5, 4, -5, 6, 7, 8, 2, 3}
_JSON_NUMBER = re.compile(r"^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$")


def parse_members(text: str, members: Members, key_columns: Mapping[str, Sequence[str]]) -> list[ParsedLine]:
    message = {name: value for name, (value, _, _) in members.items()}
    kind = message.get("type")
    if not isinstance(kind, str):
        raise RejectedRecord(f"field 'type' is {short(kind)}, not a Canal event type")
    database, table = message.get("database"), message.get("table")
    table_name = f"{database}.{table}"
    if kind == "TRUNCATE":
        # A DDL record (isDdl true, no 'data'): the line's place orders it, as every Canal message.
        if not isinstance(database, str) or not database or not isinstance(table, str) or not table:
            raise RejectedRecord("fields 'database' and 'table' must name the truncated table")
        key_columns_for(table_name, key_columns, message.get("pkNames"), "pkNames")
        return [truncate_event(table_name, line_ordered_seq(1), positive_ms(message.get("es")) or positive_ms(message.get("ts")))]
    if message.get("isDdl") is True and configured_table(table_name, key_columns, message.get("pkNames")):
        # Canal's DDL carries its statement, not the columns: the line's place orders it.
        ts_ms = positive_ms(message.get("es")) or positive_ms(message.get("ts"))
        return [schema_event(table_name, line_ordered_seq(1), ts_ms, message.get("sql"), None, None)]
    if message.get("isDdl") is True:
        raise IgnoredRecord(f"Canal DDL {short(kind)} on {table_name}: {short(message.get('sql'))}")
    if kind not in ACTIONS:
        raise RejectedRecord(f"field 'type' has unknown value {short(kind)}; expected INSERT, UPDATE, DELETE or INIT")
    if not isinstance(database, str) or not database or not isinstance(table, str) or not table:
        raise RejectedRecord("fields 'database' and 'table' must name the source table")
    rows = message.get("data")
    if not isinstance(rows, list) or not rows or not all(isinstance(row, dict) for row in rows):
        raise RejectedRecord(f"type '{kind}' needs a non-empty 'data' array of row objects")
    old_rows = message.get("old")
    if kind == "UPDATE" and old_rows is not None:
        if not isinstance(old_rows, list) or len(old_rows) != len(rows) or not all(isinstance(o, dict) for o in old_rows):
            raise RejectedRecord("field 'old' must be an array of objects, one per row of 'data'")
    sql_types = message.get("sqlType") if isinstance(message.get("sqlType"), dict) else {}
    columns = key_columns_for(table_name, key_columns, message.get("pkNames"), "pkNames")
    # No log position: 'es' is the statement's start second and 'id' a counter of one Canal process,
    # so the message's place in the landed files orders it, then the row's place in 'data'
    # (docs/ordering.md). INIT rows (a full load) too: they are written in stream order, and a full load
    # taken again after missed changes must win over the older streamed rows of its keys.
    seq = line_ordered_seq(1)
    source_ts_ms = positive_ms(message.get("es")) or positive_ms(message.get("ts"))

    def event(key: str, action: str, raw_data: str | None, before_data: str | None) -> ParsedLine:
        return ParsedLine(STATUS_EVENT, table_name=table_name, key=key, action=action, raw_data=raw_data,
                          before_data=before_data, seq=seq, source_ts_ms=source_ts_ms)

    events = []
    for index, row in enumerate(rows):
        image = _image_text(row, sql_types)
        key = canonical_key(row, f"data[{index}]", columns)
        if kind == "DELETE":
            events.append(event(key, "delete", None, image))
            continue
        if kind != "UPDATE":
            events.append(event(key, ACTIONS[kind], image, None))
            continue
        old_row = {**row, **(old_rows[index] if old_rows else {})}
        before = _image_text(old_row, sql_types)
        old_key = canonical_key(old_row, f"old[{index}]", columns)
        if old_key != key:
            # An update of the key ('old' holds its former value): the former key's row is gone,
            # as Debezium emits it, a delete and then an insert of the new key.
            events.extend([event(old_key, "delete", None, before), event(key, "insert", image, None)])
        else:
            events.append(event(key, "update", image, before))
    return events


def _is_numeric(sql_type: Any) -> bool:
    return isinstance(sql_type, int) and not isinstance(sql_type, bool) and sql_type in NUMERIC_SQL_TYPES


def _image_text(row: Mapping[str, Any], sql_types: Mapping[str, Any]) -> str:
    members = []
    for name, value in row.items():
        if isinstance(value, str) and _is_numeric(sql_types.get(name)) and _JSON_NUMBER.match(value):
            rendered = value
        elif isinstance(value, Decimal):
            rendered = str(value)
        else:
            rendered = json.dumps(value, ensure_ascii=False)
        members.append(f"{json.dumps(name, ensure_ascii=False)}:{rendered}")
    return "{" + ",".join(members) + "}"
