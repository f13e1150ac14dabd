"""Source transactions in the raw log: the fields each format gives, and the end markers.

A change event carries its transaction's id (tx_id) and, where the format numbers them, its order
in the transaction (tx_order, from 0 or 1 as the format counts). A record that ends a transaction
(Debezium's END, wal2json's C, Maxwell's commit row) also lands as a marker: table_name
TX_MARKER_TABLE, action ACTION_TX_END, key [], the transaction's id, and its event count when the
record gives one (tx_events; raw_data holds the per-table counts as the record lists them). No
mirror applies a marker; docs/ordering.md says per format how a transaction is known complete.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from python_jobs.formats.records import STATUS_EVENT, TABLE_KEY, ParsedLine, RejectedRecord, short

ACTION_TX_END = "tx_end"
# The table_name of markers: no source table's (a source schema named _cdc_merge is not expected).
TX_MARKER_TABLE = "_cdc_merge.transactions"


def transaction_id(value: Any, field: str) -> str:
    """A transaction id as text: a string, or an integer (wal2json and Maxwell xids)."""
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        raise RejectedRecord(f"field '{field}' is {short(value)}, not a transaction id")
    return str(value)


def order_in_transaction(value: Any, field: str) -> int | None:
    """The event's place in its transaction, or None when the record leaves it out."""
    if value is None:
        return None
    # Debezium's documentation shows the orders as strings ("1"); its JSON converter writes numbers.
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) < 19:
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
        raise RejectedRecord(f"field '{field}' is {short(value)}, not an event's order in its transaction")
    return value


def tx_end_marker(tx_id: str, seq: str, source_ts_ms: int | None, event_count: Any = None,
                  tables: Mapping[str, int] | None = None) -> ParsedLine:
    """The marker of a transaction's end; event_count and tables (events per table) when known."""
    if event_count is not None and (isinstance(event_count, bool) or not isinstance(event_count, int)
                                    or not 0 <= event_count < 2**63):
        raise RejectedRecord(f"field 'event_count' is {short(event_count)}, not a number of events")
    return ParsedLine(
        STATUS_EVENT,
        table_name=TX_MARKER_TABLE,
        key=TABLE_KEY,
        action=ACTION_TX_END,
        raw_data=json.dumps({"tables": dict(tables)}, ensure_ascii=False, separators=(",", ":")) if tables is not None else None,
        seq=seq,
        source_ts_ms=source_ts_ms,
        tx_id=tx_id,
        tx_events=event_count,
    )


def per_table_counts(value: Any) -> dict[str, int] | None:
    """Debezium's data_collections ([{data_collection, event_count}]) as {table: events}."""
    if value is None:
        return None
    if not isinstance(value, list):
        raise RejectedRecord(f"field 'data_collections' is {short(value)}, not a list")
    counts: dict[str, int] = {}
    for entry in value:
        name = entry.get("data_collection") if isinstance(entry, dict) else None
        count = entry.get("event_count") if isinstance(entry, dict) else None
        if not isinstance(name, str) or isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise RejectedRecord(f"field 'data_collections' has an entry {short(entry)} without a table and its event count")
        counts[name] = count
    return counts
