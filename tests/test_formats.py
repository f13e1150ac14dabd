"""Format detection and the seq each format gives (docs/ordering.md), parser by parser."""

from __future__ import annotations

import json

import pytest

from python_jobs.formats import detect as formats
from python_jobs.formats.records import LINE_ORDERED_PREFIX, STATUS_EVENT, STATUS_REJECTED, object_members

ZERO = LINE_ORDERED_PREFIX
FLINK_DEBEZIUM = '{"before":null,"after":{"id":1,"name":"a"},"op":"c","source":{"db":"inventory","table":"products"}}'
FLINK_CANAL = ('{"old":null,"data":[{"id":1,"name":"a"},{"id":2,"name":"b"}],"type":"INSERT",'
               '"database":"inventory","table":"products"}')


def parsed(line: str, keys=None):
    return formats.parse_line(line, keys or {"inventory.products": ["id"]})


@pytest.mark.parametrize(
    "line, detected",
    [
        (FLINK_DEBEZIUM, "debezium"),
        ('{"before":{"id":1},"after":null,"op":"d"}', "debezium"),
        (FLINK_CANAL, "canal"),
        (FLINK_CANAL.replace('"type"', '"pkNames":["id"],"type"'), "canal"),
        ('{"database":"d","table":"t","type":"insert","ts":1,"data":{"id":1}}', "maxwell"),
        ('{"action":"I","schema":"s","table":"t","columns":[]}', "wal2json"),
    ],
)
def test_envelopes_without_positions_are_detected(line, detected):
    assert formats.detect(object_members(line, 0, "line")) == detected


def test_envelopes_without_positions_are_ordered_by_their_line():
    (debezium,) = parsed(FLINK_DEBEZIUM)
    assert (debezium.status, debezium.seq, debezium.source_ts_ms) == (STATUS_EVENT, f"{ZERO}1", None)
    snapshot = parsed(FLINK_DEBEZIUM.replace('"op":"c"', '"op":"r"'))[0]
    assert snapshot.seq == f"{ZERO}0"
    canal = parsed(FLINK_CANAL)
    assert [(event.key, event.seq) for event in canal] == [('["1"]', f"{ZERO}1"), ('["2"]', f"{ZERO}1")]


def test_time_and_batch_fields_do_not_order_canal():
    """es and id are kept out of seq: the same on every line of a Canal batch, and id restarts with Canal."""
    message = json.loads(FLINK_CANAL)
    for es, batch_id in ((1589373515000, 3), (1589373515000, 1), (1589373514000, 9)):
        line = json.dumps({**message, "es": es, "id": batch_id, "ts": es + 5, "isDdl": False})
        event = parsed(line)[0]
        assert event.seq == f"{ZERO}1" and event.source_ts_ms == es
    init = json.dumps({**message, "type": "INIT"})
    assert parsed(init)[0].seq == f"{ZERO}0"


def test_maxwell_orders_by_binlog_position_when_it_has_one():
    record = {"database": "inventory", "table": "products", "type": "update", "ts": 1596684893, "xid": 7,
              "data": {"id": 1}, "old": {}}
    with_position = [
        {**record, "position": "master.000006:800911", "xoffset": 0},
        {**record, "position": "master.000006:800911", "commit": True},
        {**record, "position": "master.000007:4", "xoffset": 0},
    ]
    seqs = [parsed(json.dumps(line))[0].seq for line in with_position]
    assert seqs == sorted(seqs) and not any(seq.startswith(ZERO) for seq in seqs)
    assert parsed(json.dumps(record))[0].seq == f"{ZERO}1"
    assert parsed(json.dumps({**record, "type": "bootstrap-insert"}))[0].seq == f"{ZERO}0"


def test_goldengate_and_wal2json_without_positions_are_ordered_by_their_line():
    ogg = {"table": "inventory.products", "op_type": "I", "after": {"id": 1}, "op_ts": "2020-05-13 15:40:06.000000"}
    assert parsed(json.dumps(ogg))[0].seq == f"{ZERO}1"
    assert parsed(json.dumps({**ogg, "pos": "00000000000000000000143"}))[0].seq.startswith("00000000000000000000.")
    assert parsed(json.dumps({**ogg, "pos": "x1"}))[0].status == STATUS_REJECTED
    key_change = {"action": "U", "schema": "inventory", "table": "products",
                  "columns": [{"name": "id", "type": "bigint", "value": 2}],
                  "identity": [{"name": "id", "type": "bigint", "value": 1}]}
    events = parsed(json.dumps(key_change))
    assert [(event.action, event.key, event.seq) for event in events] == [
        ("delete", '["1"]', f"{ZERO}1"), ("insert", '["2"]', f"{ZERO}1")
    ]


def test_a_connector_whose_position_is_not_read_is_still_quarantined():
    line = FLINK_DEBEZIUM.replace('"db"', '"connector":"sqlserver","db"')
    (event,) = parsed(line)
    assert event.status == STATUS_REJECTED and "no supported source position" in event.reason
