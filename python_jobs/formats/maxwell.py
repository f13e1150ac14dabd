"""Parse one Maxwell JSON line into the fields of a raw event.

    {"database":"test","table":"product","type":"update","ts":1596684893,"xid":7152,
     "commit":true,"data":{"id":106,...},"old":{"description":"16oz carpenter's hammer"}}
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any, Mapping, Sequence

from python_jobs.formats.records import (
    MAX_POSITION,
    STATUS_EVENT,
    IgnoredRecord,
    Members,
    ParsedLine,
    RejectedRecord,
    canonical_key,
    format_seq,
    key_columns_for,
    line_ordered_seq,
    non_negative_int,
    object_members,
    positive_ms,
    short,
    configured_table,
    schema_event,
)
from python_jobs.formats.transactions import order_in_transaction, transaction_id, tx_end_marker

ACTIONS = {"insert": "insert", "update": "update", "delete": "delete", "bootstrap-insert": "read"}
BOOTSTRAP_MARKERS = {"bootstrap-start", "bootstrap-complete"}
# The row that carries "commit": true has no xoffset and is the transaction's last.
LAST_ROW = 10**10 - 1
_POSITION = re.compile(r"^.*?(\d+):(\d+)$")


def parse_members(text: str, members: Members, key_columns: Mapping[str, Sequence[str]]) -> list[ParsedLine]:
    """The row's events; the row with "commit": true also ends its transaction (a marker)."""
    events = _key_change(text, members, key_columns, _row_event(text, members, key_columns))
    record = {name: value for name, (value, _, _) in members.items()}
    event = events[-1]
    if event.tx_id is None or record.get("commit") is not True:
        return events
    return [*events, tx_end_marker(event.tx_id, event.seq, event.source_ts_ms)]


def _key_change(text: str, members: Members, key_columns: Mapping[str, Sequence[str]], event: ParsedLine) -> list[ParsedLine]:
    """An update whose 'old' holds a former value of the key is a delete of the former key and an
    insert of the new one (as Debezium emits it): the former key's row is gone from the source."""
    old = members.get("old", (None, None, 0))[0]
    if event.action != "update" or not isinstance(old, dict):
        return [event]
    record = {name: value for name, (value, _, _) in members.items()}
    columns = key_columns_for(event.table_name, key_columns, record.get("primary_key_columns"), "primary_key_columns")
    old_key = canonical_key({**record["data"], **old}, "old", columns)
    if old_key == event.key:
        return [event]
    return [replace(event, key=old_key, action="delete", raw_data=None),
            replace(event, action="insert", before_data=None)]


def _row_event(text: str, members: Members, key_columns: Mapping[str, Sequence[str]]) -> ParsedLine:
    record = {name: value for name, (value, _, _) in members.items()}
    kind = record.get("type")
    if not isinstance(kind, str):
        raise RejectedRecord(f"field 'type' is {short(kind)}, not a Maxwell event type")
    database, table = record.get("database"), record.get("table")
    if kind in BOOTSTRAP_MARKERS:
        raise IgnoredRecord(f"Maxwell {kind} marker for {database}.{table}")
    if kind.startswith("table-") and isinstance(database, str) and isinstance(table, str) \
            and configured_table(f"{database}.{table}", key_columns, _definition(record.get("def")).get("primary-key")):
        return schema_event(
            f"{database}.{table}", _seq(record, kind), _ts_ms(record), record.get("sql"),
            _columns(record.get("old")) if kind == "table-alter" else None,
            _columns(record.get("def")) if kind != "table-drop" else None,
        )
    if isinstance(kind, str) and (kind.startswith("table-") or kind.startswith("database-")):
        raise IgnoredRecord(f"Maxwell DDL {kind}: {short(record.get('sql'))}")
    if kind not in ACTIONS:
        raise RejectedRecord(
            f"field 'type' has unknown value {short(kind)}; expected insert, update, delete or bootstrap-insert"
        )
    if not isinstance(database, str) or not database or not isinstance(table, str) or not table:
        raise RejectedRecord("fields 'database' and 'table' must name the source table")
    table_name = f"{database}.{table}"
    data_value, data_text, data_start = members.get("data", (None, None, 0))
    if not isinstance(data_value, dict):
        raise RejectedRecord(f"type '{kind}' needs a 'data' object")
    columns = key_columns_for(table_name, key_columns, record.get("primary_key_columns"), "primary_key_columns")
    key = canonical_key(data_value, "data", columns)
    before_data = None
    if kind == "update":
        before_data = _before_image(text, data_start, members.get("old"))
    elif kind == "delete":
        before_data = data_text
    return ParsedLine(
        STATUS_EVENT,
        table_name=table_name,
        key=key,
        action=ACTIONS[kind],
        raw_data=None if kind == "delete" else data_text,
        before_data=before_data,
        seq=_seq(record, kind),
        source_ts_ms=_ts_ms(record),
        tx_id=transaction_id(record["xid"], "xid") if record.get("xid") is not None else None,
        tx_order=order_in_transaction(record.get("xoffset"), "xoffset"),
    )


def _definition(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _columns(definition: Any) -> list[dict[str, Any]] | None:
    """[{name, type}] of a Maxwell table definition ('def' or 'old')."""
    columns = _definition(definition).get("columns")
    if not isinstance(columns, list):
        return None
    return [{"name": column.get("name"), "type": column.get("type")} for column in columns if isinstance(column, dict)]


def _before_image(text: str, data_start: int, old: tuple[Any, str, int] | None) -> str:
    """Maxwell's 'old' holds only the changed columns: overlay them on 'data', as exact text."""
    if old is None or old[0] is None:
        old_members: Members = {}
    elif isinstance(old[0], dict):
        old_members = object_members(text, old[2], "old")
    else:
        raise RejectedRecord("field 'old' is not an object")
    data_members = object_members(text, data_start, "data")
    merged = {name: member[1] for name, member in data_members.items()}
    merged.update({name: member[1] for name, member in old_members.items()})
    return "{" + ",".join(f"{json.dumps(name, ensure_ascii=False)}:{value}" for name, value in merged.items()) + "}"


def _seq(record: Mapping[str, Any], kind: str) -> str:
    """Binlog file + position + xoffset when Maxwell writes 'position' (output_binlog_position);
    otherwise no log position ('ts' is a second, 'xid' restarts with the server), so the line's
    place orders the event. Bootstrap rows without a position: their lines order them, for Maxwell
    writes them in stream order (the table's binlog rows are held back until bootstrap-complete), and
    a bootstrap run to catch up after changes were missed (a purged binlog) must win over the older
    streamed rows of its keys. With output_binlog_position Maxwell gives a bootstrap row the position
    of its request (the insert into maxwell.bootstrap): the table read after it, so a snapshot row
    there (PHASE 0), before the binlog rows after it."""
    position = record.get("position")
    if position is None:
        return line_ordered_seq(1)
    match = _POSITION.match(position) if isinstance(position, str) else None
    if match is None:
        raise RejectedRecord(f"field 'position' is {short(position)}, not 'binlog-file.N:pos'")
    if kind == "bootstrap-insert":
        binlog_file, offset = int(match.group(1)), int(match.group(2))
        if binlog_file >= MAX_POSITION or offset >= MAX_POSITION:
            raise RejectedRecord(f"field 'position' is {short(position)}: its numbers are beyond a binlog position")
        return format_seq(binlog_file, offset, 0, 0)
    row = LAST_ROW if record.get("xoffset") is None else non_negative_int(record, "xoffset", "")
    if row > LAST_ROW:
        raise RejectedRecord(f"field 'xoffset' is {short(row)}, more than a row of one transaction can be")
    binlog_file, offset = int(match.group(1)), int(match.group(2))
    if binlog_file >= MAX_POSITION or offset >= MAX_POSITION:
        raise RejectedRecord(f"field 'position' is {short(position)}: its numbers are beyond a binlog position")
    return format_seq(binlog_file, offset, row, 1)


def _ts_ms(record: Mapping[str, Any]) -> int | None:
    """Maxwell's ts is in seconds (milliseconds with output_ms? values past 10^11 are taken as ms)."""
    ts = record.get("ts")
    if isinstance(ts, bool) or not isinstance(ts, int) or ts <= 0:
        return None
    return positive_ms(ts if ts >= 10**11 else ts * 1000)
