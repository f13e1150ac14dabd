"""A committed transaction's events as the JSON lines the capture writes, without their dicts.

mysql_events.change_events builds three dicts a change (the source, the envelope, its transaction
block) that orjson then encodes and the file's end frees: a third of a following capture's time
(BENCHMARKS.md, "Capture"). Compact JSON is the concatenation of its parts' JSON, so here only the
row images are encoded with orjson; the rest of each line comes from a template made once per
transaction (its id, GTID, commit and processing times) and a source made once per rows event.
The lines are those of orjson.dumps over change_events' dicts, byte for byte
(tests/test_capture_mysql_event_lines.py, also on a real server's binlog).
"""

from __future__ import annotations

from typing import Any

import orjson

from python_jobs.capture.mysql_events import Transaction, row_image
from python_jobs.capture.output import CAPTURE_VERSION, TransactionOrder

_dumps = orjson.dumps


def _literal(value: Any) -> bytes:
    """A value's JSON, as a literal of a bytes %-template."""
    return _dumps(value).replace(b"%", b"%%")


def change_lines(transaction: Transaction, processed_ms: int) -> tuple[list[bytes], int]:
    """The transaction's events as lines (orjson.dumps of each of change_events' events, in order),
    and how many of them are changes (with an "op"), as output.change_event_count counts them."""
    lines = [_dumps(event) for event in transaction.schema_events]
    changes = sum("op" in event for event in transaction.schema_events)
    if not transaction.changes:
        return lines, changes
    transaction_id, commit_ms = transaction.id, transaction.commit_ts_ms
    # before, after, the source up to its row, the row, the op, total_order, data_collection_order.
    template = (b'{"before":%s,"after":%s,"source":%s%d,"gtid":' + _literal(transaction.gtid) + b',"ts_ms":'
                + _literal(commit_ms) + b',"snapshot":"false"},"op":%s,"ts_ms":' + _literal(processed_ms)
                + b',"transaction":{"id":' + _literal(transaction_id) + b',"total_order":%d,"data_collection_order":%d}}')
    ops: dict[str, bytes] = {}
    total, per_table = 0, dict[str, int]()
    source_of: tuple[Any, str, int] | None = None
    source = b""
    for change in transaction.changes:
        table = change.table
        if source_of is None or source_of[0] is not table or source_of[1] != change.binlog_file or source_of[2] != change.position:
            # The source's keys in change_events' order, to its row: the same for each row of a rows event.
            source_of = (table, change.binlog_file, change.position)
            source = (b'{"version":' + _dumps(CAPTURE_VERSION) + b',"connector":"mysql","name":"cdc_merge","db":'
                      + _dumps(table.schema) + b',"table":' + _dumps(table.name) + b',"file":'
                      + _dumps(change.binlog_file) + b',"pos":' + _dumps(change.position) + b',"row":')
            qualified = table.qualified
        before, after = change.before, change.after
        if not change.debezium:
            before = row_image(table, before) if before is not None else None
            after = row_image(table, after) if after is not None else None
        op = change.op
        if op == "u" and before is not None and after is not None and (
                [before.get(c) for c in table.primary_key] != [after.get(c) for c in table.primary_key]):
            operations: tuple[tuple[str, Any, Any], ...] = (("d", before, None), ("c", None, after))
        else:
            operations = ((op, before, after),)
        for op, before_image, after_image in operations:
            total += 1
            in_table = per_table[qualified] = per_table.get(qualified, 0) + 1
            lines.append(template % (_dumps(before_image), _dumps(after_image), source, change.row,
                                     ops.get(op) or ops.setdefault(op, _dumps(op)), total, in_table))
    lines.append(_dumps(TransactionOrder(total, per_table).end_record(transaction_id, commit_ms)))
    return lines, changes + total


def first_position(transaction: Transaction) -> tuple[str, int] | None:
    """The binlog file and position of the transaction's first event (None: it has none), which
    names the file it begins."""
    if transaction.schema_events:
        source = transaction.schema_events[0]["source"]
        return source["file"], source["pos"]
    if transaction.changes:
        return transaction.changes[0].binlog_file, transaction.changes[0].position
    return None
