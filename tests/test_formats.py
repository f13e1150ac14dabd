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
    # Flink CDC writes its snapshot rows in stream order: the line orders them too.
    assert snapshot.seq == f"{ZERO}1"
    canal = parsed(FLINK_CANAL)
    assert [(event.key, event.seq) for event in canal] == [('["1"]', f"{ZERO}1"), ('["2"]', f"{ZERO}1")]


def test_time_and_batch_fields_do_not_order_canal():
    """es and id are kept out of seq: the same on every line of a Canal batch, and id restarts with Canal."""
    message = json.loads(FLINK_CANAL)
    for es, batch_id in ((1589373515000, 3), (1589373515000, 1), (1589373514000, 9)):
        line = json.dumps({**message, "es": es, "id": batch_id, "ts": es + 5, "isDdl": False})
        event = parsed(line)[0]
        assert event.seq == f"{ZERO}1" and event.source_ts_ms == es
    # INIT rows (a full load) are written in stream order: the line orders them too.
    init = json.dumps({**message, "type": "INIT"})
    assert parsed(init)[0].seq == f"{ZERO}1"


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
    assert parsed(json.dumps({**record, "type": "bootstrap-insert"}))[0].seq == f"{ZERO}1"
    # With a position, a bootstrap row sits at its request's: after the rows before it, before the rows after.
    bootstrap = {key: value for key, value in record.items() if key not in ("xid", "old")}
    (read,) = parsed(json.dumps({**bootstrap, "type": "bootstrap-insert", "position": "master.000006:900000"}))
    assert read.action == "read" and seqs[0] < read.seq < seqs[2] and read.seq.endswith(".0")


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


def test_maxwell_rows_carry_their_xid_and_xoffset_and_the_commit_row_ends_the_transaction():
    from python_jobs.formats.transactions import ACTION_TX_END, TX_MARKER_TABLE

    record = {"database": "inventory", "table": "products", "type": "insert", "ts": 1596684893, "xid": 7152,
              "position": "master.000006:800911", "data": {"id": 1}}
    (first,) = parsed(json.dumps({**record, "xoffset": 0}))
    assert (first.tx_id, first.tx_order) == ("7152", 0)
    last, marker = parsed(json.dumps({**record, "commit": True}))
    assert (last.status, last.tx_id, last.tx_order) == (STATUS_EVENT, "7152", None)
    assert (marker.table_name, marker.action, marker.tx_id, marker.tx_events) == (TX_MARKER_TABLE, ACTION_TX_END, "7152", None)
    assert marker.seq == last.seq
    (untracked,) = parsed(json.dumps({key: value for key, value in record.items() if key != "xid"}))
    assert untracked.tx_id is None


def test_wal2json_with_xids_keeps_each_change_s_transaction_and_lands_the_commit_as_its_end():
    from python_jobs.formats.records import STATUS_IGNORED
    from python_jobs.formats.transactions import ACTION_TX_END, TX_MARKER_TABLE

    keys = {"shop.accounts": ["id"]}
    change = {"action": "I", "xid": 751, "lsn": "0/1527660", "schema": "shop", "table": "accounts",
              "columns": [{"name": "id", "type": "bigint", "value": 3}]}
    (begin,) = parsed('{"action":"B","xid":751}', keys)
    assert begin.status == STATUS_IGNORED and "transaction begin" in begin.reason
    (event,) = parsed(json.dumps(change), keys)
    assert (event.status, event.tx_id) == (STATUS_EVENT, "751")
    (commit,) = parsed('{"action":"C","xid":751,"lsn":"0/1527700","timestamp":"2026-11-22 14:05:16.05+00"}', keys)
    assert (commit.table_name, commit.action, commit.tx_id) == (TX_MARKER_TABLE, ACTION_TX_END, "751")
    assert commit.seq > event.seq and commit.source_ts_ms == 1795356316050
    (without_xid,) = parsed('{"action":"C","lsn":"0/1527700"}', keys)
    assert without_xid.status == STATUS_IGNORED and "include-xids" in without_xid.reason
    (odd,) = parsed(json.dumps({**change, "xid": [1]}), keys)
    assert odd.status == STATUS_REJECTED and "'xid'" in odd.reason
