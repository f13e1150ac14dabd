"""The JVM fast path for the PostgreSQL capture's record lines (jvm/src/cdc_merge/CapturedWal2jsonParser.java)
against the Python parser (python_jobs/formats/captured_wal2json.py).

Whatever record line the JVM takes, it must give exactly the event Python gives, row images byte
for byte; everything else it must leave to Python. Lines written by the capture's record_lines from
hand-made wal2json records of every column type, hand-made edge cases, and fuzzed lines.
"""

from __future__ import annotations

import json
import random

import yaml
from test_fuzz import mutate
from test_jvm_parser import EVENT_FIELDS, assert_same_tables, landing_tables  # noqa: F401 (a fixture)
from unit.test_postgres_records import transaction

from python_jobs.capture.postgres_records import record_lines, table_columns
from python_jobs.formats import detect as formats
from python_jobs.formats.records import STATUS_EVENT
from python_jobs.landing import io, land, small_batch
from python_jobs.landing.config import load_config
from python_jobs.landing.transforms import parse_in_jvm

TS = '"timestamp":"2026-11-29 16:01:28.012559+00"'
# Each table's columns (name, type) as wal2json names them, and a value of each as wal2json sends it (JSON text).
TABLES = {
    "types": [
        ("id", "bigint", "1"), ("i", "integer", "-5"), ("s", "smallint", "0"), ("amount", "numeric(12,2)", "150001.50"),
        ("wide", "numeric(40,10)", "-123456789012345678901234567890.0123456789"), ("free", "numeric", "0.000001"),
        ("note", "text", '"n"'), ("flag", "boolean", "true"), ("at", "timestamp with time zone", '"2026-11-29 16:01:28.012559+00"'),
        ("local", "timestamp without time zone", '"2026-11-29 16:01:28.5"'), ("day", "date", '"2026-11-29"'),
        ("ref", "uuid", '"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"'), ("doc", "jsonb", json.dumps('{"a": [1, 2.50, "x"]}')),
        ("bytes", "bytea", '"deadbeef"'), ("o", "oid", "16384"),
    ],
    "lines": [("order_id", "bigint", "12"), ("line_no", "integer", "3"), ("note", "character varying(20)", '"x"')],
    "announced": [("code", "text", '"A-1"'), ("n", "integer", "7"), ("note", "text", '"x"')],
    "flags": [("flag", "boolean", "false"), ("note", "text", '"x"')],
    "prices": [("price", "numeric(12,2)", "1.50"), ("note", "text", '"x"')],
    "measures": [("id", "bigint", "1"), ("ratio", "real", "null"), ("score", "double precision", "null")],
}
PK = {"types": ["id"], "lines": ["order_id", "line_no"], "announced": ["code", "n"], "flags": ["flag"], "prices": ["price"],
      "measures": ["id"]}
# Configured keys; shop.announced has none, so its records' pk gives it.
KEYS = {f"shop.{table}": PK[table] for table in TABLES if table != "announced"}
CATALOG = table_columns({f"shop.{table}": [name for name, _, _ in columns] for table, columns in TABLES.items()})
TEXTS = ['quote " back \\ slash', "nl \n cr \r tab \t", "bell \u0001 esc \u001b del \u007f bs \b ff \f", "caf\u00e9 \u4e2d",
         "emoji \U0001f600", "line sep \u2028 para \u2029", "", " ", "{\"a\":1}", "\u00a0nbsp", "</script>"]


def entries(table: str, without: tuple[str, ...] = (), **values: str) -> str:
    """The table's column list with these values (JSON text) instead of the defaults, without some columns."""
    return ",".join(f'{{"name":"{name}","type":"{pg_type}","value":{values.get(name, default)}}}'
                    for name, pg_type, default in TABLES[table] if name not in without)


def key_entries(table: str, **values: str) -> str:
    return ",".join(f'{{"name":"{name}","type":"{pg_type}","value":{values.get(name, default)}}}'
                    for name, pg_type, default in TABLES[table] if name in PK[table])


def record(action: str, lsn: str, table: str = "types", columns: str | None = None, identity: str | None = None,
           pk: list[str] | None = None) -> bytes:
    """A wal2json record as the capture's server sends it (postgres_events.DECODING_OPTIONS)."""
    types = {name: pg_type for name, pg_type, _ in TABLES[table]}
    members = [f'"action":"{action}"', TS, f'"lsn":"{lsn}"', '"schema":"shop"', f'"table":"{table}"']
    members += [f'"columns":[{columns}]'] if columns is not None else []
    members += [f'"identity":[{identity}]'] if identity is not None else []
    members += ['"pk":[' + ",".join(f'{{"name":"{name}","type":"{types[name]}"}}' for name in (PK[table] if pk is None else pk)) + "]"]
    return ("{" + ",".join(members) + "}").encode()


def captured(*records: bytes) -> list[str]:
    """The lines the capture writes for one transaction of these records: each wrapped, then its END."""
    written = record_lines(transaction(*records), CATALOG)
    assert written is not None, "the capture would decode these records instead"
    return [line.decode() for line in written[0]]


def wrapped(inner: str, head: str = '"commit_lsn":38520000,"tx_id":"0:38520000","ts_ms":1795968088012,"tx_order":1') -> str:
    """A record line made by hand, for what record_lines never writes."""
    return "{" + head + ',"wal2json":' + inner + "}"


def common_lines() -> list[str]:
    """Lines the capture writes, of every column type: the JVM must take all of them."""
    def text(value: str) -> str:
        return json.dumps(value, ensure_ascii=False)

    lines = captured(
        record("I", "0/231FCC0", columns=entries("types")),
        record("I", "0/231FD58", columns=entries("types", id="2", **{name: "null" for name, _, _ in TABLES["types"][1:]})),
        record("U", "0/231FDF0", columns=entries("types", note='"updated"', amount="-0.01"), identity=key_entries("types")),
        record("U", "0/231FE88", columns=entries("types", id="2", flag="false")),
        record("D", "0/231FF20", identity=key_entries("types", id="2")),
    )
    lines += captured(*(record("I", f"1/{n:X}", columns=entries("types", id=str(n), note=text(note)))
                        for n, note in enumerate(TEXTS, 10)))
    lines += captured(*(record("I", f"2/{n:X}", columns=entries("types", **{"id": str(n), **values})) for n, values in enumerate([
        {"i": "2147483647", "s": "-32768", "amount": "-0.01", "wide": "99999999999999999999999999999.9999999999"},
        {"id": "-9223372036854775808", "amount": "0.00", "free": "12345678901234567890.123456789", "o": "4294967295"},
        {"id": "-0", "free": "-0", "wide": "1E+5"},
        {"at": '"2026-11-29 16:01:28+00"', "local": '"2026-11-29 16:01:28"', "flag": "false"},
        {"at": '"2026-11-29 16:01:28.5+00"', "local": '"2026-11-29 16:01:28.123456"'},
        {"at": '"2026-11-29 16:01:28.123456+00"', "day": '"infinity"', "local": '"infinity"'},
        {"at": '"9999-12-31 23:59:59.999999+00"', "doc": json.dumps('{"k": "v \\" q", "n": null}'), "bytes": '""'},
    ], 1)))
    lines += captured(
        record("I", "3/1", "lines", entries("lines")),
        record("I", "3/2", "lines", entries("lines", line_no="4", note='"a,b\\"c"')),
        record("U", "3/3", "lines", entries("lines", note='"y"'), key_entries("lines")),
        record("D", "3/4", "lines", identity=key_entries("lines", line_no="4")),
        record("I", "3/5", "announced", entries("announced")),
        record("U", "3/6", "announced", entries("announced", note='"z"'), key_entries("announced")),
        record("D", "3/7", "announced", identity=key_entries("announced")),
        record("I", "3/8", "flags", entries("flags")),
        record("D", "3/9", "flags", identity=key_entries("flags", flag="true")),
        record("I", "3/A", "prices", entries("prices")),
        record("U", "3/B", "prices", entries("prices", note='"q \\u0001"'), key_entries("prices")),
        record("I", "3/C", "measures", entries("measures")),
    )
    return lines


def left_lines() -> list[str]:
    """Lines the JVM must leave to Python: values whose conversion Python does its own way, and
    lines Python rejects."""
    inner = record("I", "0/1", columns=entries("types")).decode()
    line = wrapped(inner)
    lines = [wrapped(record("I", "0/1", columns=entries("types", **values)).decode()) for values in [
        {"at": '"2026-11-29 16:01:28+01"'}, {"at": '"2026-11-29 16:01:28.5-05:30"'}, {"at": '"infinity"'},
        {"at": '"0999-01-01 00:00:00+00"'}, {"at": '"2026-11-29 16:01:28.1234567+00"'}, {"at": '"2026-11-29T16:01:28+00"'},
        {"at": "20261129"}, {"at": "true"}, {"at": '"2026-11-29 16:01:28.\u0663+00"'},
        {"id": '"12"'}, {"id": "1.0"}, {"id": "1e3"}, {"id": "true"}, {"i": "123456789012345678901234567890"},
        {"note": '"\\ud800"'}, {"note": '{"a":1}'}, {"note": "[1]"}, {"id": "null"}, {"local": "true"},
    ]]
    lines += [wrapped(record("I", "0/1", "measures", entries("measures", **values)).decode())
              for values in [{"ratio": "1.5"}, {"score": "0.1"}, {"score": "1e300"}, {"ratio": "-0.0"}]]
    lines += [
        wrapped(record("U", "0/1", columns=entries("types"), identity=key_entries("types", id="9")).decode()),  # the key changes
        wrapped(record("I", "0/1", columns="").decode()), wrapped(record("U", "0/1", columns="").decode()),
        wrapped(record("D", "0/1", identity="").decode()), wrapped(record("D", "0/1").decode()),
        wrapped(record("I", "0/1", columns=entries("types") + ',{"name":"id","type":"bigint","value":2}').decode()),
        wrapped(record("I", "0/1", columns=entries("types").replace('"type":"bigint",', '"type":" bigint",', 1)).decode()),
        wrapped(record("I", "0/1", "announced", entries("announced"), pk=[]).decode()),
        wrapped(record("I", "0/1", "announced", entries("announced")).decode().replace(',"pk":', ',"pkx":')),
        wrapped(inner.replace('"action":"I"', '"action":"T"')), wrapped(inner.replace('"lsn":"0/1"', '"lsn":"0/1/2"')),
        wrapped(inner.replace('"lsn":"0/1"', '"lsn":"123456789/1"')), wrapped(inner.replace('"lsn":"0/1"', '"lsn":null')),
        wrapped(inner.replace('"lsn":"0/1",', "")), wrapped(inner.replace('"schema":"shop"', '"schema":1')),
        wrapped(inner.replace('"lsn"', '"origin":{"a":1},"lsn"')), wrapped(inner.replace('"lsn"', '"xid":"","lsn"')),
        wrapped(inner.replace('"lsn"', '"xid":1.5,"lsn"')), wrapped(inner.replace('"lsn"', '"lsn":"0/2","lsn"')),
        wrapped(inner.replace(TS, '"timestamp":"0001-01-01 00:00:00"')),
        wrapped(inner.replace('"value":1}', '"value":1,"value":2}', 1)),
        line.replace('"tx_order":1', '"tx_order":1,"extra":1'), line.replace('"tx_order":1', '"tx_order":1,"op":"c"'),
        line.replace('"tx_order":1', '"tx_order":"1"'), line.replace('"tx_order":1', '"tx_order":-1'),
        line.replace('"commit_lsn":38520000', '"commit_lsn":-1'), line.replace('"commit_lsn":38520000', '"commit_lsn":"5"'),
        line.replace('"tx_id":"0:38520000"', '"tx_id":""'), line.replace('"tx_id":"0:38520000"', '"tx_id":true'),
        line.replace('"tx_id":"0:38520000"', '"tx_id":"\\udc00"'), line.replace('"ts_ms":1795968088012', '"ts_ms":[1]'),
        line.replace('"tx_order":1', '"tx_order":1,"tx_order":2'), line.replace(',"tx_id":"0:38520000"', ""),
        line + " x", line[:-1], "\ufeff" + line, line.replace('"wal2json":', '"wal2json":[') + "]",
        line.replace('{"commit_lsn":38520000', '{"commit_lsn":38520000,"commit_lsn":38520000'),
    ]
    return lines


def edge_lines() -> list[str]:
    """Lines the capture does not write but a record line may hold: compared, whoever takes them."""
    inner = record("I", "0/1", columns=entries("types")).decode()
    line = wrapped(inner)
    full = entries("types", note='"old"')
    return [
        # REPLICA IDENTITY FULL: the old row; and an unchanged TOAST value left out, filled from it.
        wrapped(record("U", "0/1", columns=entries("types", note='"new"'), identity=full).decode()),
        wrapped(record("U", "0/1", columns=entries("types", without=("doc",)), identity=full).decode()),
        wrapped(record("U", "0/1", columns=entries("types", without=("note", "at")), identity=full).decode()),
        wrapped(record("U", "0/1", columns=entries("types"), identity=key_entries("types", id="null")).decode()),
        wrapped(record("D", "0/1", columns=entries("types"), identity=full).decode()),
        wrapped(record("I", "0/1", columns=entries("types"), pk=["note"]).decode()),  # the configured key wins
        wrapped(inner.replace('"value":"n"', '"value":"caf\\u00e9 \\ud83d\\ude00 \\u2028 \\/ \\u0041"')),
        wrapped(inner.replace('"type":"text",', "")),
        wrapped(inner.replace('"timestamp with time zone"', '"timestamp(3) with time zone"')),
        wrapped(inner.replace('"type":"bigint"', '"type":"bigint","optional":false', 1)),
        wrapped(inner.replace('"lsn":"0/1"', '"lsn":"ffffffff/ffffffff"')), wrapped(inner.replace('"lsn":"0/1"', '"lsn":"0/1\\n"')),
        wrapped(inner.replace('"lsn"', '"xid":771,"nextlsn":"0/2","lsn"')), wrapped(inner.replace(TS, '"timestamp":null')),
        wrapped(inner.replace(TS, '"timestamp":"9999-12-31 00:00:00"')), wrapped(inner.replace(TS, '"timestamp":"soon"')),
        line.replace('"ts_ms":1795968088012', '"ts_ms":null'), line.replace('"ts_ms":1795968088012', '"ts_ms":0'),
        line.replace('"ts_ms":1795968088012', '"ts_ms":"x"'), line.replace('"ts_ms":1795968088012', '"ts_ms":1.5'),
        line.replace('"ts_ms":1795968088012', '"ts_ms":99999999999999999999'),
        line.replace('"tx_order":1', '"tx_order":null'), line.replace(',"tx_order":1', ""),
        line.replace('"tx_id":"0:38520000"', '"tx_id":771'), line.replace('"commit_lsn":38520000', '"commit_lsn":0'),
        line.replace('"commit_lsn":38520000', '"commit_lsn":9223372036854775807'),
        line.replace('"commit_lsn":38520000', '"commit_lsn":99999999999999999999'),
        line + "\r", line + " \t", line.replace(",", " , ").replace(":", " : "),
        wrapped(inner, '"tx_order":3,"ts_ms":5,"tx_id":"a","commit_lsn":7'),
    ]


def compare_with_python(spark, lines: list[str], format_name: str = "auto") -> dict[str, int]:
    """Assert the JVM gives Python's event, byte for byte, for every line it takes; how many it took and left."""
    jvm_parser = io.register_jvm_parser(spark, KEYS, format_name)
    assert jvm_parser, "the parsers jar is missing: run 'make jvm'"
    df = spark.createDataFrame(
        [("file", number, line) for number, line in enumerate(lines)], "landed_file string, landed_line int, line_text string"
    )
    taken = {row["landed_line"]: row["in_jvm"] for row in parse_in_jvm(df, jvm_parser).where("in_jvm is not null").collect()}
    for number, event in taken.items():
        python = formats.parse_line(lines[number], KEYS, format_name)
        assert len(python) == 1 and python[0].status == STATUS_EVENT, (lines[number], python)
        expected = {name: getattr(python[0], name) for name in EVENT_FIELDS}
        for name in ("raw_data", "before_data"):
            expected[name] = None if expected[name] is None else expected[name].encode("utf-8")
        got = {name: bytes(event[name]) if name in ("raw_data", "before_data") and event[name] is not None else event[name]
               for name in EVENT_FIELDS}
        assert got == expected, lines[number]
    return {"taken": len(taken), "left": len(lines) - len(taken)}


def test_every_line_the_capture_writes_is_parsed_in_the_jvm_exactly_as_in_python(spark):
    lines = common_lines()
    assert compare_with_python(spark, lines) == {"taken": len(lines), "left": 0}
    assert sum(line.startswith('{"commit_lsn":') for line in lines) > 30


def test_floats_unusual_times_and_lines_python_rejects_are_left_to_it(spark):
    assert compare_with_python(spark, left_lines()) == {"taken": 0, "left": len(left_lines())}


def test_edge_cases_agree_with_python(spark):
    counts = compare_with_python(spark, edge_lines())
    assert counts["taken"] >= 20 and counts["left"] >= 3, counts


def test_fuzzed_record_lines_agree_with_python(spark):
    rng = random.Random(20261129)
    seeds = common_lines() + left_lines() + edge_lines()
    lines = [mutate(rng.choice(seeds), rng) for _ in range(8000)]
    counts = compare_with_python(spark, lines)
    # Both outcomes happen often, or the comparison proves little.
    assert counts["taken"] > 1000 and counts["left"] > 1000, counts


def test_with_format_debezium_the_capture_s_record_lines_are_read_too(spark):
    """The capture's files are read with format: debezium (the starters' config): record lines among them."""
    lines = common_lines()
    assert compare_with_python(spark, lines, "debezium") == {"taken": len(lines), "left": 0}


def test_landing_record_lines_with_and_without_the_jvm_parser_writes_the_same_tables(
        spark, tmp_path, monkeypatch, landing_tables):  # noqa: F811 (the fixture imported above)
    rng = random.Random(12)
    seeds = common_lines() + left_lines() + edge_lines()
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for part in range(2):
        lines = seeds + [mutate(rng.choice(seeds), rng) for _ in range(300)]
        (inbox / f"part-{part}.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setattr(small_batch, "MAX_BATCH_BYTES_PARSED_IN_DRIVER", -1)

    def config(variant: str):
        path = tmp_path / f"landing-{variant}.yml"
        path.write_text(yaml.safe_dump({
            "input": str(inbox), "checkpoint": str(tmp_path / f"checkpoint-{variant}"),
            "raw_table": landing_tables["raw", variant], "quarantine_table": landing_tables["quarantine", variant],
            "tables": {table: {"key": list(key)} for table, key in KEYS.items()},
        }))
        return load_config(path)

    jvm = land.run(config("jvm"), spark=spark)
    monkeypatch.setenv("CDC_MERGE_PARSERS_JAR", "")
    python = land.run(config("python"), spark=spark)

    assert jvm.counts == python.counts and jvm.counts["event"] > 200 and jvm.counts["rejected"] > 50
    tx_ends = spark.sql(f"select count(*) as n from {landing_tables['raw', 'jvm']} where action = 'tx_end'").first().n
    assert jvm.counts["tx_ends"] == tx_ends > 0, (jvm.counts, tx_ends)
    assert_same_tables(spark, landing_tables)
    tags = [row.tag for row in spark.sql(f"select summary['{io.LANDING_BATCH_PROPERTY}'] as tag "
                                         f"from {landing_tables['raw', 'jvm']}.snapshots").collect()]
    assert [tag.endswith(small_batch.JVM_COMMIT_SUFFIX) for tag in tags] == [True, False]
