"""The PostgreSQL stream's records written as the server sent them (python_jobs/capture/postgres_records.py)
land as the very events the capture's Debezium events of the same changes land as
(python_jobs/formats/captured_wal2json.py), and a record that needs the capture's own knowledge is
decoded instead. Records in wal2json format-version 2 with the capture's options; plain Python."""

from __future__ import annotations

import json
import random

import orjson
import pytest
from test_fuzz import mutate

from python_jobs.capture.output import debezium_event
from python_jobs.capture.postgres_events import TableShape, Transaction, change_events, source_block
from python_jobs.capture.postgres_records import (
    RecordAssembler,
    decoded,
    file_events,
    peeked_transactions,
    record_lines,
    table_columns,
)
from python_jobs.formats.detect import parse_line
from python_jobs.formats.records import INTERNAL_ERROR, STATUS_EVENT, STATUS_REJECTED
from python_jobs.formats.wal2json import snapshot_converter

TS = '"timestamp":"2026-11-29 16:01:28.012559+00"'
PK = '"pk":[{"name":"id","type":"bigint"}]'
KEYS = {"shop.items": ["id"]}
COLUMNS = {"shop.items": ["id", "note", "price", "at"]}


def row(action: str, lsn: str, columns: str | None = None, identity: str | None = None, table: str = "items") -> bytes:
    members = [f'"action":"{action}"', '"xid":726', TS, f'"lsn":"{lsn}"', '"schema":"shop"', f'"table":"{table}"']
    members += [f'"columns":[{columns}]'] if columns is not None else []
    members += [f'"identity":[{identity}]'] if identity is not None else []
    return ("{" + ",".join([*members, PK]) + "}").encode()


def full(id_: int, note: str = "n", price: str = "1.50", at: str = "2026-01-02 03:04:05.5+00") -> str:
    return (f'{{"name":"id","type":"bigint","value":{id_}}},{{"name":"note","type":"text","value":{json.dumps(note)}}},'
            f'{{"name":"price","type":"numeric(12,2)","value":{price}}},'
            f'{{"name":"at","type":"timestamp with time zone","value":"{at}"}}')


def key(id_: int) -> str:
    return f'{{"name":"id","type":"bigint","value":{id_}}}'


def transaction(*records: bytes) -> Transaction:
    assembler = RecordAssembler()
    begin = ('{"action":"B","xid":726,' + TS + ',"lsn":"0/24BC4C0","nextlsn":"0/24BC4F0"}').encode()
    commit = ('{"action":"C","xid":726,' + TS + ',"lsn":"0/24BC4C0","nextlsn":"0/24BC4F0"}').encode()
    assert assembler.add(0x24BC4C0, begin) is None
    for record in records:
        assert assembler.add(0x2400000, record) is None
    committed = assembler.add(0x24BC4C0, commit)
    assert committed is not None and committed.records == list(records)
    return committed


def landed(lines: list[bytes]) -> list[tuple]:
    """Each line's events as the landing parses them, row images compared as JSON values."""
    events = []
    for line in lines:
        for event in parse_line(line.decode(), KEYS):
            assert event.status == STATUS_EVENT, event.reason
            events.append((event.table_name, event.key, event.action, event.seq, event.source_ts_ms, event.tx_id,
                           event.tx_order, event.tx_events, None if event.raw_data is None else json.loads(event.raw_data),
                           None if event.before_data is None else json.loads(event.before_data)))
    return events


def debezium_lines(tx: Transaction) -> list[bytes]:
    shapes = {"shop.items": TableShape(frozenset(COLUMNS["shop.items"]), frozenset({"note"}))}
    return [orjson.dumps(event) for event in change_events(decoded(tx), "shop", shapes, 0)]


def test_records_land_as_the_capture_s_debezium_events_of_the_same_changes():
    tx = transaction(
        row("I", "0/231FCC0", full(1, "é \"quoted\"", "150001.50")),
        row("U", "0/231FD58", full(1, "updated", "2.00"), key(1)),
        row("U", "0/231FDF0", full(2, "no identity", "-0.01")),
        row("I", "0/231FE88", full(3, "x", "null", at="2026-01-02 03:04:05+00")),
        row("D", "0/231FF20", identity=key(2)),
    )
    written = record_lines(tx, table_columns(COLUMNS))

    assert written is not None
    lines, first = written
    assert first == 0x231FCC0
    assert len(lines) == 6 and lines[0].startswith(b'{"commit_lsn":%d,' % 0x24BC4C0)
    assert landed(lines) == landed(debezium_lines(tx))


@pytest.mark.parametrize("record, why", [
    (row("U", "0/1", full(1, "k", "1.00"), key(9)), "the key changes: a delete and an insert"),
    (row("U", "0/1", full(1).replace(',{"name":"note","type":"text","value":"n"}', "")),
     "an unchanged TOAST value left out, which only the catalog can mark"),
    (row("U", "0/1", full(1) + ',{"name":"extra","type":"text","value":"e"}'), "a column the catalog does not have"),
    (row("I", "0/1", full(1), table="other"), "a table the capture does not know"),
    (b'{"action":"T",' + TS.encode() + b',"lsn":"0/1","schema":"shop","table":"items"}', "a truncate"),
    (b'{"action":"M","transactional":true,"prefix":"cdc_merge.columns","content":"{}"}', "a logical message"),
])
def test_a_record_that_needs_the_capture_s_own_knowledge_is_decoded(record, why):
    tx = transaction(row("I", "0/0", full(5)), record)

    assert record_lines(tx, table_columns(COLUMNS)) is None, why


def test_a_key_changing_update_as_a_record_line_is_rejected_not_landed_as_one_event():
    line = (b'{"commit_lsn":5,"tx_id":"726:5","ts_ms":1,"tx_order":1,"wal2json":'
            + row("U", "0/1", full(1), key(9)) + b"}")

    [event] = parse_line(line.decode(), KEYS)

    assert event.status == STATUS_REJECTED and "changes the key" in event.reason


def test_the_files_reader_gives_each_record_line_its_debezium_event(tmp_path):
    tx = transaction(row("I", "0/231FCC0", full(1, price="3.10")), row("D", "0/231FF20", identity=key(1)))
    lines, _ = record_lines(tx, table_columns(COLUMNS))
    (tmp_path / "f.json").write_bytes(b"\n".join(lines) + b"\n")

    events = list(file_events(tmp_path / "f.json"))

    assert [(e.get("op"), e.get("after"), e.get("before")) for e in events] == [
        ("c", {"id": 1, "note": "n", "price": "3.10", "at": "2026-01-02T03:04:05.500000Z"}, None),
        ("d", None, {"id": 1}),
        (None, None, None),
    ]
    assert [e["source"]["lsn"] for e in events[:2]] == [0x231FCC0, 0x231FF20]
    assert events[2]["status"] == "END" and events[2]["event_count"] == 2


def test_mutated_record_lines_land_or_are_rejected_with_a_reason_never_a_parser_error():
    tx = transaction(row("I", "0/231FCC0", full(1, "é\\n\\u0001")), row("U", "0/231FD58", full(1, "u", "2.00"), key(1)),
                     row("D", "0/231FF20", identity=key(1)))
    seeds = [line.decode() for line in record_lines(tx, table_columns(COLUMNS))[0]]
    rng = random.Random(20261129)
    outcomes = set()
    for _ in range(3_000):
        for parsed in parse_line(mutate(rng.choice(seeds), rng), KEYS):
            assert INTERNAL_ERROR not in (parsed.reason or ""), parsed.reason
            outcomes.add(parsed.status)
    assert {STATUS_EVENT, STATUS_REJECTED} <= outcomes


def test_the_capture_s_files_read_as_debezium_land_record_lines_alike():
    tx = transaction(row("I", "0/231FCC0", full(1)), row("D", "0/231FF20", identity=key(1)))
    lines = [line.decode() for line in record_lines(tx, table_columns(COLUMNS))[0]]

    as_debezium = [parse_line(line, KEYS, "debezium") for line in lines]

    assert as_debezium == [parse_line(line, KEYS) for line in lines]
    assert [event.status for events in as_debezium for event in events] == [STATUS_EVENT] * 3
    assert parse_line(lines[0], KEYS, "wal2json")[0].status == STATUS_REJECTED


def test_peeked_rows_become_transactions_of_records_with_the_row_s_xid():
    begin = '{"action":"B",' + TS + ',"lsn":"0/24BC4C0","nextlsn":"0/24BC4F0"}'
    commit = '{"action":"C",' + TS + ',"lsn":"0/24BC4F0","nextlsn":"0/24BC520"}'
    insert = row("I", "0/231FCC0", full(1)).decode().replace('"xid":726,', "")  # peeked: no include-xids

    [tx] = peeked_transactions([("0/24BC4C0", 731, begin), ("0/231FCC0", 731, insert), ("0/24BC4F0", 731, commit)])

    assert (tx.xid, tx.commit_lsn, tx.records) == (731, 0x24BC4F0, [insert.encode()])
    lines, _ = record_lines(tx, table_columns(COLUMNS))
    assert [event.tx_id for line in lines for event in parse_line(line.decode(), KEYS)] == [f"731:{0x24BC4F0}"] * 2


def test_the_capture_s_own_messages_are_not_counted_as_row_changes():
    """A heartbeat's transaction holds a record, a logical message, and changes no row: counted as a
    change, its commit became the capture's newest, which never lands, and cdc-verify --state called
    every mirror of a quiet source behind."""
    begin = '{"action":"B",' + TS + ',"lsn":"0/24BC4C0","nextlsn":"0/24BC4F0"}'
    commit = '{"action":"C",' + TS + ',"lsn":"0/24BC4F0","nextlsn":"0/24BC520"}'
    heartbeat = ('{"action":"M","xid":731,"lsn":"0/24BC4D0","transactional":true,"prefix":"cdc_merge.heartbeat",'
                 '"content":""}')
    insert = row("I", "0/24BC4E0", full(1)).decode().replace('"xid":726,', "")

    [beat, change] = peeked_transactions([("0/24BC4C0", 731, begin), ("0/24BC4D0", 731, heartbeat), ("0/24BC4F0", 731, commit),
                                          ("0/24BC4C0", 732, begin), ("0/24BC4D0", 732, heartbeat),
                                          ("0/24BC4E0", 732, insert), ("0/24BC4F0", 732, commit)])

    assert (len(beat.records), beat.row_changes) == (1, 0)
    assert (len(change.records), change.row_changes) == (2, 1)


@pytest.mark.parametrize("text", ["1e+300", "1.2345678901234568e+17", "1e-05", "3.4e+38", "0.1", "1", "-0", "16777216"])
def test_a_float_key_lands_as_one_key_from_a_record_line_a_debezium_event_and_a_snapshot_row(text):
    """A double precision (or real) key: the snapshot's row and the stream's record and decoded event
    of one row must land under one key, or the mirror keeps the snapshot's row beside the stream's
    (the landing reads a Debezium line's numbers as decimals, wal2json's as floats)."""
    keys, names = {"shop.readings": ["k"]}, {"shop.readings": ["k", "n"]}
    record = ('{"action":"I","xid":726,' + TS + ',"lsn":"0/231FCC0","schema":"shop","table":"readings","columns":['
              f'{{"name":"k","type":"double precision","value":{text}}},{{"name":"n","type":"integer","value":1}}],'
              '"pk":[{"name":"k","type":"double precision"}]}').encode()
    tx = transaction(record)
    snapshot_row = {"k": snapshot_converter("double precision")(text), "n": 0}
    snapshot = debezium_event(op="r", before=None, after=snapshot_row, source=source_block("shop", "shop.readings", 1, 1, snapshot=True),
                              transaction_id=None, total_order=1, processed_ms=0)
    lines = [*record_lines(tx, table_columns(names))[0][:1],
             orjson.dumps(change_events(decoded(tx), "shop", {"shop.readings": TableShape(frozenset(names["shop.readings"]))}, 0)[0]),
             orjson.dumps(snapshot)]

    landed_keys = {event.key for line in lines for event in parse_line(line.decode(), keys)}

    assert len(landed_keys) == 1, landed_keys
