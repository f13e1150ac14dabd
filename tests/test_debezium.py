"""The line parser: ordering contract, exact images, and a reason for every rejection."""

from __future__ import annotations

import dataclasses
import json
from decimal import Decimal

import pytest

from conftest import FIXTURES
from python_jobs.formats.debezium import parse_line
from python_jobs.formats.records import STATUS_BLANK, STATUS_EVENT, STATUS_REJECTED, STATUS_TOMBSTONE

KEYS = {"inventory.products": ["id"], "shop.order_lines": ["order_id", "line_no"]}


def mysql_event(op="u", file="mysql-bin.000003", pos=100, row=0, snapshot="false", after=None, before=None):
    return json.dumps({
        "before": before,
        "after": after if after is not None else {"id": 7, "name": "x"},
        "source": {"connector": "mysql", "db": "inventory", "table": "products", "file": file,
                   "pos": pos, "row": row, "snapshot": snapshot, "ts_ms": 1_700_000_000_000},
        "op": op,
        "ts_ms": 1_700_000_000_123,
    })


def postgres_event(op="u", lsn=1000, snapshot="false", after=None, before=None):
    return json.dumps({
        "before": before,
        "after": after if after is not None else {"id": 7, "name": "x"},
        "source": {"connector": "postgresql", "db": "shop", "schema": "inventory", "table": "products",
                   "lsn": lsn, "snapshot": snapshot, "ts_ms": 1_700_000_000_000},
        "op": op,
    })


def seq_of(line: str) -> str:
    parsed = parse_line(line, KEYS)
    assert parsed.status == STATUS_EVENT, parsed.reason
    return parsed.seq


def test_mysql_order_is_binlog_file_then_position_then_row():
    in_order = [
        mysql_event(file="mysql-bin.000003", pos=900, row=0),
        mysql_event(file="mysql-bin.000003", pos=900, row=1),
        mysql_event(file="mysql-bin.000003", pos=1000, row=0),
        mysql_event(file="mysql-bin.000010", pos=4, row=0),  # numeric, not text, file order
    ]
    seqs = [seq_of(line) for line in in_order]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


def test_postgres_order_is_lsn():
    seqs = [seq_of(postgres_event(lsn=lsn)) for lsn in (99, 100, 1_000_000_000_000)]
    assert seqs == sorted(seqs) and len(set(seqs)) == 3


def test_postgres_order_with_the_captures_commit_lsn_is_commit_then_lsn():
    def event(lsn: int, commit_lsn: int | None) -> str:
        line = json.loads(postgres_event(lsn=lsn))
        line["source"]["commit_lsn"] = commit_lsn
        return json.dumps(line)

    # A transaction that wrote at 100 and committed at 400, after one that wrote at 200 and committed at 300.
    assert seq_of(event(200, 300)) < seq_of(event(100, 400)) < seq_of(event(150, 400))
    # A log landed before the capture wrote commit_lsn: lsn alone, and each key's order agrees (a later
    # writer of a key waits for the earlier one's commit).
    assert seq_of(event(90, None)) == seq_of(postgres_event(lsn=90)) < seq_of(event(100, 400))
    assert "is -1, not a non-negative integer" in parse_line(event(100, -1), KEYS).reason


def test_snapshot_rows_sort_before_streamed_rows_at_the_same_position():
    snapshot_row = seq_of(postgres_event(op="r", lsn=500, snapshot="true"))
    streamed = seq_of(postgres_event(op="u", lsn=500))
    assert snapshot_row < streamed
    # MySQL snapshots of Debezium 1.x are op 'c' with snapshot "true"/"last".
    assert seq_of(mysql_event(op="c", pos=154, snapshot="last")) < seq_of(mysql_event(op="u", pos=154))


def test_same_millisecond_events_of_the_flink_fixture_are_ordered_by_position():
    lines = (FIXTURES / "flink" / "debezium-data-schema-exclude.txt").read_text().splitlines()
    parsed = [parse_line(line, KEYS) for line in lines]
    streamed = [p for p in parsed if p.seq.endswith(".1")]
    assert [p.seq for p in streamed] == sorted(p.seq for p in streamed)
    assert len({p.seq for p in streamed}) == len(streamed)


def test_schema_envelope_gives_the_same_events_as_the_bare_one():
    for bare, enveloped in (
        ("debezium-data-schema-exclude.txt", "debezium-data-schema-include.txt"),
        ("debezium-postgres-data-schema-exclude.txt", "debezium-postgres-data-schema-include.txt"),
    ):
        bare_lines = (FIXTURES / "flink" / bare).read_text().splitlines()
        enveloped_lines = (FIXTURES / "flink" / enveloped).read_text().splitlines()
        # The fixtures' own texts differ in places (weight 1 vs 1.0), so images compare as numbers.
        assert [comparable(parse_line(line, KEYS)) for line in bare_lines] == [
            comparable(parse_line(line, KEYS)) for line in enveloped_lines
        ]


def comparable(parsed):
    as_json = {name: json.loads(text, parse_float=Decimal) if text else None
               for name, text in (("raw_data", parsed.raw_data), ("before_data", parsed.before_data))}
    return dataclasses.replace(parsed, raw_data=None, before_data=None), as_json


def test_images_keep_the_exact_source_text():
    after = '{"id":7, "amount":12345678901234567.891,"rate":0.1000,"note":"caf\\u00e9"}'
    line = postgres_event(op="c").replace('{"id": 7, "name": "x"}', after)
    parsed = parse_line(line, KEYS)
    assert parsed.raw_data == after
    assert parsed.key == '["7"]'
    assert parsed.action == "insert"


def test_delete_takes_its_key_from_the_before_image():
    parsed = parse_line(postgres_event(op="d", after={}, before={"id": 42}).replace('"after": {}', '"after": null'), KEYS)
    assert (parsed.status, parsed.action, parsed.key, parsed.raw_data, parsed.before_data) == (
        STATUS_EVENT, "delete", '["42"]', None, '{"id": 42}'
    )


def test_composite_key_is_a_json_array_of_exact_values():
    line = json.dumps({
        "after": {"order_id": 12, "line_no": 3, "sku": "A"},
        "source": {"connector": "postgresql", "schema": "shop", "table": "order_lines", "lsn": 5},
        "op": "c",
    })
    assert parse_line(line, KEYS).key == '["12","3"]'


@pytest.mark.parametrize("line", ["", "   ", "\r"])
def test_blank_lines_are_not_records(line):
    assert parse_line(line, KEYS).status == STATUS_BLANK


@pytest.mark.parametrize("line", ["null", '{"schema": {"type": "struct"}, "payload": null}'])
def test_tombstones_are_recognised(line):
    assert parse_line(line, KEYS).status == STATUS_TOMBSTONE


@pytest.mark.parametrize(
    "line, reason",
    [
        ('{"op": "c", "after": {"id": 1}', "invalid JSON"),
        ("garbage", "invalid JSON"),
        ('{"op": "c"} trailing', "extra data"),
        ("[1, 2]", "not a JSON object"),
        ('{"after": {"id": 1}, "source": {}}', "field 'op' is missing"),
        (postgres_event(op="x"), "unknown value \"x\""),
        (postgres_event(op="m"), "logical decoding message"),
        ('{"op": "c", "after": {"id": 1}}', "field 'source' is missing"),
        (postgres_event(op="c").replace('"table": "products"', '"table": "unknown"'), "no key columns configured for table 'inventory.unknown'"),
        (postgres_event(op="c", after={"name": "no id"}), "key column 'id' is missing in 'after' (its fields: name)"),
        (postgres_event(op="c", after={"id": None, "name": "x"}), "key column 'id' is null in 'after'"),
        (postgres_event(op="c", after={"idd": 1}), "did you mean 'idd'?"),
        (postgres_event(op="c", after={"id": {"nested": 1}}), "not a scalar"),
        (postgres_event(op="c").replace('"lsn": 1000', '"lsn": "abc"'), "'source.lsn' is \"abc\""),
        (postgres_event(op="c").replace('"lsn": 1000', '"lsn": -5'), "not a non-negative integer"),
        (mysql_event(file="binlog"), "not a binlog file name"),
        (postgres_event(op="c").replace('"postgresql"', '"oracle"'), "connector \"oracle\" has no supported source position"),
        (postgres_event(op="u").replace('"after": {"id": 7, "name": "x"}', '"after": null'), "op 'u' needs an 'after' object"),
        (postgres_event(op="d").replace('"after": {"id": 7, "name": "x"}', '"after": null'), "delete has no 'before' image"),
        ('{"after": ' + "[" * 100_000, "nested too deeply"),
    ],
)
def test_rejections_say_why(line, reason):
    parsed = parse_line(line, KEYS)
    assert parsed.status == STATUS_REJECTED
    assert reason in parsed.reason


def test_replica_identity_default_delete_fixture_is_rejected_with_a_reason():
    lines = (FIXTURES / "flink" / "debezium-postgres-data-replica-identity.txt").read_text().splitlines()
    rejected = [parse_line(line, KEYS) for line in lines if parse_line(line, KEYS).status == STATUS_REJECTED]
    assert len(rejected) == 1
    assert "REPLICA IDENTITY" in rejected[0].reason


def test_a_transaction_begin_is_kept_aside_and_its_end_lands_as_a_marker_with_the_counts():
    from python_jobs.formats.detect import parse_line as parse_any
    from python_jobs.formats.records import STATUS_IGNORED
    from python_jobs.formats.transactions import ACTION_TX_END, TX_MARKER_TABLE

    begin, end = (FIXTURES / "debezium" / "docs" / "postgresql.adoc.transaction-begin-end.json.txt").read_text().split("\n\n")
    (parsed,) = parse_any(json.dumps(json.loads(begin)), KEYS)
    assert parsed.status == STATUS_IGNORED and "Debezium transaction BEGIN" in parsed.reason
    for line in (json.dumps(json.loads(end)), json.dumps({"schema": {}, "payload": json.loads(end)})):
        (marker,) = parse_any(line, KEYS)
        assert (marker.table_name, marker.action, marker.key) == (TX_MARKER_TABLE, ACTION_TX_END, "[]")
        assert (marker.tx_id, marker.tx_events, marker.tx_order) == ("571:53195832", 2, None)
        assert json.loads(marker.raw_data) == {"tables": {"s1.a": 1, "s2.a": 1}}
        assert marker.source_ts_ms == 1486500577691


def test_an_event_carries_its_transaction_id_and_order():
    envelope = json.loads(mysql_event(op="c", after={"id": 1, "name": "a"}))
    envelope["transaction"] = {"id": "file.000003:1234", "total_order": 3, "data_collection_order": 1}
    parsed = parse_line(json.dumps(envelope), KEYS)
    assert (parsed.status, parsed.tx_id, parsed.tx_order, parsed.tx_events) == (STATUS_EVENT, "file.000003:1234", 3, None)
    # As Debezium's documentation writes the orders: numbers as strings.
    envelope["transaction"] = {"id": "571:53195832", "total_order": "1", "data_collection_order": "1"}
    assert parse_line(json.dumps(envelope), KEYS).tx_order == 1
    envelope["transaction"] = {"id": "571:53195832", "total_order": -1}
    rejected = parse_line(json.dumps(envelope), KEYS)
    assert rejected.status == STATUS_REJECTED and "transaction.total_order" in rejected.reason
    del envelope["transaction"]
    assert parse_line(json.dumps(envelope), KEYS).tx_id is None


def with_schema(after: dict, columns: list[dict]) -> str:
    envelope = json.loads(mysql_event(op="c", after=after))
    schema = {"type": "struct", "fields": [
        {"type": "struct", "field": "before", "fields": columns},
        {"type": "struct", "field": "after", "fields": columns},
    ]}
    return json.dumps({"schema": schema, "payload": envelope})


def test_logical_types_are_decoded_with_the_schema():
    import base64

    def b64(unscaled: int, size: int) -> str:
        return base64.b64encode(unscaled.to_bytes(size, "big", signed=True)).decode()

    decimal = {"name": "org.apache.kafka.connect.data.Decimal", "type": "bytes", "parameters": {"scale": "2"}}
    columns = [
        {"field": "id", "type": "int64"},
        {"field": "price", **decimal},
        {"field": "refund", **decimal},
        # BIGINT UNSIGNED beyond int64, as bigint.unsigned.handling.mode=precise sends it.
        {"field": "counter", "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "0"}},
        {"field": "ratio", "type": "struct", "name": "io.debezium.data.VariableScaleDecimal"},
        {"field": "born", "type": "int32", "name": "io.debezium.time.Date"},
        {"field": "seen", "type": "int64", "name": "io.debezium.time.MicroTimestamp"},
        {"field": "at", "type": "int64", "name": "io.debezium.time.Timestamp"},
        {"field": "opens", "type": "int64", "name": "io.debezium.time.MicroTime"},
        {"field": "zoned", "type": "string", "name": "io.debezium.time.ZonedTimestamp"},
        {"field": "flags", "type": "bytes", "name": "io.debezium.data.Bits", "parameters": {"length": "12"}},
        {"field": "note", "type": "string"},
    ]
    after = {
        "id": 7, "price": b64(1234567890123456789, 9), "refund": b64(-5, 1), "counter": b64(2**64 - 1, 9),
        "ratio": {"scale": 3, "value": b64(31416, 3)}, "born": 19000, "seen": 1_700_000_000_123_456,
        "at": 1_700_000_000_123, "opens": 34_200_000_001, "zoned": "2026-11-22T10:00:00.5+01:00", "note": None,
        "flags": base64.b64encode((0b101000000011).to_bytes(2, "little")).decode(),
    }
    parsed = parse_line(with_schema(after, columns), KEYS)
    assert parsed.status == STATUS_EVENT, parsed.reason
    assert json.loads(parsed.raw_data, parse_float=Decimal, parse_int=Decimal) == {
        "id": 7, "price": Decimal("12345678901234567.89"), "refund": Decimal("-0.05"),
        "counter": Decimal(2**64 - 1), "ratio": Decimal("31.416"), "born": "2022-01-08",
        "seen": "2023-11-14 22:13:20.123456", "at": "2023-11-14 22:13:20.123000", "opens": "09:30:00.000001",
        "zoned": "2026-11-22T10:00:00.5+01:00", "note": None, "flags": 0b101000000011,
    }
    # The decimal's digits are written as they are, never through a float.
    assert '"price":12345678901234567.89' in parsed.raw_data


def test_undecodable_logical_value_is_rejected_naming_the_column():
    columns = [{"field": "id", "type": "int64"},
               {"field": "price", "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal",
                "parameters": {"scale": "2"}}]
    parsed = parse_line(with_schema({"id": 7, "price": "not base64!"}, columns), KEYS)
    assert parsed.status == STATUS_REJECTED
    assert "column 'price' in 'after'" in parsed.reason and "Decimal" in parsed.reason
