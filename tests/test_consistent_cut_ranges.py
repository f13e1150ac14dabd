"""An online snapshot page's range record (docs/online_snapshots.md) in a consistency group's run
(docs/consistent_cuts.md): it carries no transaction id, so the group applies it whatever its horizon
defers; but a key changed between the page's watermarks by a deferred transaction keeps its older
row in the mirror, which the range would delete as older than the low watermark. The range waits
with that transaction: the group's mirror holds the row as before the transaction, then its change.
Hand-written Debezium lines with transaction metadata, as the PostgreSQL capture writes a page."""

from __future__ import annotations

import json

from test_history_ranges import COLUMNS, position, range_line, read_line
from test_range_tombstones import docs_after


def in_transaction(line: str, tx_id: str) -> str:
    event = json.loads(line)
    event["transaction"] = {"id": tx_id, "total_order": 1, "data_collection_order": 1}
    return json.dumps(event)


def end(tx_id: str) -> str:
    return json.dumps({"status": "END", "id": tx_id, "ts_ms": position(0)["ts_ms"], "event_count": 1,
                       "data_collections": [{"data_collection": "public.docs", "event_count": 1}]})


def change(op: str, lsn: int, row: dict) -> str:
    return json.dumps({"before": None, "after": row, "source": position(lsn), "op": op})


def test_a_range_record_waits_for_a_deferred_transaction_that_changed_a_key_inside_the_page(conformance_project):
    project = conformance_project
    project.write_model("docs", "unique_key='id', source_table='public.docs', consistency_group='docs'", COLUMNS)

    before = [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
    opened = [in_transaction(change("c", 100 + 10 * key, {"id": key, "status": status}), f"t{key}") for key, status in before]
    assert docs_after(project, "1.json", opened + [end(f"t{key}") for key, _ in before]) == before
    # The source lost key 2 with no delete in the log. A page of keys up to 5 (watermarks 200 and 210)
    # reads 1 and 3; transaction t9 changed 4 between the watermarks, its END record not landed yet.
    assert docs_after(project, "2.json", [
        in_transaction(change("u", 205, {"id": 4, "status": "d2"}), "t9"),
        read_line(210, {"id": 1, "status": "a"}),
        read_line(210, {"id": 3, "status": "c"}),
        range_line(220, 200, {"id": 5}),
    ]) == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
    assert docs_after(project, "3.json", [end("t9")]) == [(1, "a"), (3, "c"), (4, "d2")]
