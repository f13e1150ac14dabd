# Why one file of about 410 lines: fixtures, edge cases and fuzzed lines all feed the one comparison with the Python parsers.
"""The JVM fast path (jvm/src/cdc_merge/DebeziumFastParser.java) against the Python parsers.

Whatever line the JVM parser takes, it must give exactly the event the Python parser gives;
everything else it must leave to Python. Real fixtures, hand-made edge cases and fuzzed lines.
"""

from __future__ import annotations

import json
import random
import threading

import pytest
import yaml
from conftest import FIXTURES
from pyspark.sql import functions as F
from test_debezium import mysql_event, postgres_event
from test_fuzz import mutate

from python_jobs.formats import detect as formats
from python_jobs.formats.records import STATUS_EVENT
from python_jobs.landing import io, land, small_batch
from python_jobs.landing.config import load_config
from python_jobs.landing.io import jvm_functions
from python_jobs.landing.schemas import QUARANTINE_SCHEMA, RAW_EVENT_SCHEMA
from python_jobs.landing.transforms import fractional_numbers_quoted, parse_in_jvm, parsed_in_jvm

KEYS = {
    "inventory.products": ["id"],
    "inventory.customers": ["id"],
    "inventory.orders": ["order_number"],
    "public.products": ["id"],
    "shop.order_lines": ["order_id", "line_no"],
}
BARE_DEBEZIUM_FIXTURES = [
    "flink/debezium-data-schema-exclude.txt",
    "flink/debezium-postgres-data-schema-exclude.txt",
    "flink/debezium-postgres-data-replica-identity.txt",
]
OTHER_FIXTURES = [
    "flink/debezium-data-schema-include.txt",
    "flink/debezium-postgres-data-schema-include.txt",
    "flink/canal-data.txt",
    "flink/canal-data-with-init.txt",
    "flink/maxwell-data.txt",
    "flink/ogg-data.txt",
]
EVENT_FIELDS = ["table_name", "key", "action", "raw_data", "before_data", "seq", "source_ts_ms", "tx_id", "tx_order", "tx_events"]


def fixture_lines(names: list[str]) -> list[str]:
    return [line for name in names for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines()]


def document_lines() -> list[str]:
    """Debezium's own documented events and serde test inputs, one compact line each."""
    lines = []
    for path in sorted((FIXTURES / "debezium").rglob("*.json*")):
        text = path.read_text(encoding="utf-8")
        try:
            lines.append(json.dumps(json.loads(text)))
        except json.JSONDecodeError:
            lines += text.splitlines()
    return lines


def edge_cases() -> list[str]:
    composite = {"order_id": 12, "line_no": 3, "note": "x"}

    def order_line(**key) -> str:
        return mysql_event(after={**composite, **key}).replace('"db": "inventory", "table": "products"',
                                                               '"db": "shop", "table": "order_lines"')

    lines = [
        mysql_event(), mysql_event(op="c"), mysql_event(op="r", snapshot="true"), mysql_event(snapshot="last"),
        mysql_event(snapshot=True), mysql_event(snapshot=False), mysql_event(snapshot=None), mysql_event(snapshot=1),
        mysql_event(row=None), mysql_event(row=7), mysql_event(row=10**10 - 1), mysql_event(row=10**10),
        mysql_event(row=2**63 - 1), mysql_event(pos=2**63), mysql_event(pos=2**63 - 1), mysql_event(pos=0),
        mysql_event(pos=10**20), mysql_event(pos=1.0), mysql_event(pos=True), mysql_event(file="bin.\u0663\u0660"),
        mysql_event(file="mysql-bin.000003\n"), mysql_event(file="x" + "9" * 25), mysql_event(file="77"),
        mysql_event(op="d", before={"id": 7}, after={}).replace('"after": {}', '"after": null'),
        # Updates with a before image: of another key (a delete and an insert, in Python), of the same key, of none.
        mysql_event(before={"id": 6, "name": "x"}), mysql_event(before={"id": 7, "name": "y"}), mysql_event(before={"name": "y"}),
        mysql_event(before={"id": None}), mysql_event(before={"id": 6.5}), mysql_event(before={"id": "7"}),
        mysql_event(op="d", before={"id": 7}, after={}).replace('"after": {}', '"after": [1]'),
        postgres_event(), postgres_event(op="c", lsn=0), postgres_event(lsn=-1), postgres_event(snapshot="incremental"),
        postgres_event(after={"id": -0, "amount": 12345678901234567.891}),
        postgres_event(after={"id": "-0"}), postgres_event(after={"id": 1.5}), postgres_event(after={"id": 10**30}),
        postgres_event(after={"id": True}), postgres_event(after={"id": None}), postgres_event(after={"id": [1]}),
        postgres_event(after={"id": 'quote " back \\ tab \t nl \n cr \r nul \u0000 bell \u0007 del \u007f'}),
        postgres_event(after={"id": "caf\u00e9 \u2028 \U0001f600"}),
        postgres_event().replace('"id": 7', '"id": "\\ud800"'),
        postgres_event().replace('"id": 7', '"id": "\\ud83d\\ude00"'),
        postgres_event().replace('"id": 7', '"id": 7, "id": 8'),
        postgres_event().replace('"op": "u"', '"op": "u", "op": "c"'),
        postgres_event().replace('"schema": "inventory"', '"schema": ""'),
        postgres_event().replace('"schema": "inventory"', '"schema": null, "db": "inventory"'),
        postgres_event().replace('"schema": "inventory"', '"schema": 0'),
        postgres_event().replace('"ts_ms": 1700000000000', '"ts_ms": 0'),
        postgres_event().replace('"ts_ms": 1700000000000', '"ts_ms": 1700000000000.5'),
        postgres_event() + "\r", postgres_event() + "\r\r", "  \t" + postgres_event() + " \n ", "\ufeff" + postgres_event(),
        postgres_event() + " x", postgres_event() + "\u00a0", postgres_event()[:-1],
        json.dumps({"schema": None, **json.loads(postgres_event())}),
        json.dumps({"payload": json.loads(postgres_event())}),
        json.dumps({"database": "x", **json.loads(postgres_event())}),
        order_line(), order_line(line_no="3"), order_line(line_no=None), order_line(order_id="a,b\"c"),
        postgres_event().replace("{", "{ ").replace(":", " : ").replace(",", " ,\t"),
        '{"before":null,"after":{"id":1},"source":{"connector":"postgresql","schema":"inventory",'
        '"table":"products","lsn":5},"op":"c","ts_ms":1700000000000}',
        # The captures' commit_lsn orders before lsn; null leaves lsn alone; anything else Python rejects.
        *(postgres_event().replace('"lsn": ', f'"commit_lsn": {commit}, "lsn": ') for commit in (
            "900", "0", "null", "-1", '"900"', "1.5", "99999999999999999999")),
        "", "   ", "null", "[]", "{}", "nul", "{\"op\": NaN}",
        # Without source.connector (Flink CDC's debezium-json): ordered by the line.
        '{"before":null,"after":{"id":1,"name":"a"},"op":"c","source":{"db":"inventory","table":"products"}}',
        '{"before":{"id":1},"after":null,"op":"d","source":{"db":"inventory","table":"products"}}',
        '{"before":null,"after":{"id":1},"op":"r","source":{"db":"inventory","table":"products","connector":null}}',
        '{"before":null,"after":{"id":1},"op":"c","source":{"db":"inventory","table":"products","connector":""}}',
        '{"before":null,"after":{"id":1},"op":"c","source":{"db":"inventory","table":"products","connector":7}}',
        '{"before":null,"after":{"id":1},"op":"c","source":{"db":"inventory","table":"products","snapshot":"true"}}',
        '{"before":null,"after":{"id":1},"op":"c"}',
        # Debezium's transaction block: taken when its id is a string or an integer and its order a number.
        *(postgres_event()[:-1] + ', "transaction": ' + block + "}" for block in (
            '{"id":"571:53195832","total_order":2,"data_collection_order":1}', '{"id":"0-1-9","total_order":1}',
            '{"id":42}', '{"id":"a","total_order":null}', 'null', '{"id":"a","total_order":"1"}',
            '{"id":"a","total_order":-1}', '{"id":"","total_order":1}', '{"total_order":1}', '{"id":[1]}', '[]',
            '{"id":"a","total_order":1.5}', '{"id":"a","id":"b"}')),
        # Debezium's transaction END record (the captures end every transaction with one): a marker.
        *('{"status":"END",' + members + "}" for members in (
            '"id":"571:53195832","ts_ms":1700000000000,"event_count":2,"data_collections":[{"data_collection":"shop.a","event_count":1},{"data_collection":"inventory.products","event_count":1}]',
            '"id":"0-1-9","event_count":1,"data_collections":[{"data_collection":"s.t","event_count":1}]',
            '"id":42,"ts_ms":0,"event_count":0,"data_collections":[]', '"id":"a","data_collections":null',
            '"id":"a","event_count":null', '"id":"a"',
            '"id":"a","data_collections":[{"data_collection":"s.t","event_count":1},{"data_collection":"s.u","event_count":2},{"data_collection":"s.t","event_count":3}]',
            '"id":"a","data_collections":[{"data_collection":"caf\\u00e9 \\"q\\" \\n \\u0001","event_count":1}]',
            '"id":"a","data_collections":[{"data_collection":"s.t","event_count":1,"extra":[1]}]',
            # Left to Python: what it rejects, or reads as something else.
            '"id":"","event_count":1', '"event_count":1', '"id":true', '"id":1.5', '"id":"a","event_count":-1',
            '"id":"a","event_count":"2"', '"id":"a","event_count":true', '"id":"a","event_count":99999999999999999999',
            '"id":"a","data_collections":{}', '"id":"a","data_collections":[1]',
            '"id":"a","data_collections":[{"data_collection":7,"event_count":1}]',
            '"id":"a","data_collections":[{"data_collection":"s.t","event_count":-1}]',
            '"id":"a","data_collections":[{"data_collection":"s.t"}]', '"id":"\\ud800"',
            '"id":"a","ddl":"x"', '"id":"a","range":{}', '"id":"a","op":"c"', '"id":"a","source":{}', '"id":"a","id":"b"')),
        '{"status":"BEGIN","id":"a"}', '{"status":"end","id":"a"}', '{"status":7,"id":"a"}',
        # A schemaless VariableScaleDecimal ({scale, value}): decoded in Python, so left to it; other objects taken.
        postgres_event(after={"id": 7, "amount": {"scale": 3, "value": "erg="}}),
        postgres_event(after={"id": {"scale": 0, "value": "Bw=="}}),
        postgres_event(after={"id": 7, "amount": {"value": "erg=", "scale": "3"}}),
        postgres_event(after={"id": 7, "shape": {"wkb": "AQ==", "srid": 4326}}),
        postgres_event(after={"id": 7, "amount": {"scale": 3, "value": "erg=", "x": 1}}),
        # Truncates: table events, left to Python.
        '{"source":{"connector":"postgresql","schema":"inventory","table":"products","lsn":9,"snapshot":"false"},"op":"t"}',
        '{"source":{"connector":"mysql","db":"inventory","table":"products","file":"mysql-bin.000003","pos":4,"row":0},'
        '"op":"t","ts_ms":1700000000000}',
    ]
    return lines


def compare_with_python(spark, lines: list[str]) -> dict[str, int]:
    """Assert the JVM agrees with Python on every line it takes; how many it took and left."""
    jvm_parser = io.register_jvm_parser(spark, KEYS)
    assert jvm_parser, "the parsers jar is missing: run 'make jvm'"
    df = spark.createDataFrame(
        [("file", number, line) for number, line in enumerate(lines)], "landed_file string, landed_line int, line_text string"
    )
    marked = parse_in_jvm(df, jvm_parser)
    taken = {row["landed_line"]: row for row in parsed_in_jvm(marked).collect()}
    for number, row in taken.items():
        python = formats.parse_line(lines[number], KEYS)
        assert len(python) == 1 and python[0].status == STATUS_EVENT, (lines[number], python)
        assert {name: row[name] for name in EVENT_FIELDS} == {name: getattr(python[0], name) for name in EVENT_FIELDS}, lines[number]
    return {"taken": len(taken), "left": len(lines) - len(taken)}


def test_every_bare_debezium_fixture_event_is_parsed_in_the_jvm_exactly_as_in_python(spark):
    lines = fixture_lines(BARE_DEBEZIUM_FIXTURES)
    python_events = sum(
        1 for line in lines for parsed in formats.parse_line(line, KEYS) if parsed.status == STATUS_EVENT
    )
    counts = compare_with_python(spark, lines)
    assert counts["taken"] == python_events > 40, counts


def test_other_formats_and_schema_envelopes_are_left_to_python(spark):
    lines = fixture_lines(OTHER_FIXTURES) + document_lines()
    counts = compare_with_python(spark, lines)
    # Debezium's documented bare events (with keys under KEYS) are the only ones the JVM takes.
    bare_documented = [line for line in document_lines() if '"schema"' not in line and '"payload"' not in line]
    assert counts["taken"] <= len(bare_documented)
    assert counts["left"] >= len(fixture_lines(OTHER_FIXTURES)), counts


def test_edge_cases_agree_with_python(spark):
    lines = edge_cases()
    counts = compare_with_python(spark, lines)
    assert counts["taken"] >= 25 and counts["left"] >= 25, counts


def test_events_with_a_transaction_block_are_parsed_in_the_jvm_too(spark):
    lines = [line for line in edge_cases() if '"transaction": {"id":"571' in line or '"transaction": {"id":42}' in line]
    assert len(lines) == 2
    assert compare_with_python(spark, lines) == {"taken": 2, "left": 0}


def test_envelopes_without_a_connector_are_parsed_in_the_jvm_too(spark):
    lines = [line for line in edge_cases() if '"source":{"db"' in line and '"connector":""' not in line
             and '"connector":7' not in line]
    assert len(lines) == 4
    assert compare_with_python(spark, lines) == {"taken": 4, "left": 0}


def test_transaction_end_records_are_parsed_in_the_jvm_too(spark):
    lines = [line for line in edge_cases() if line.startswith('{"status":"END"')]
    counts = compare_with_python(spark, lines)
    assert counts == {"taken": 9, "left": len(lines) - 9}, counts


def test_fuzzed_debezium_lines_agree_with_python(spark):
    rng = random.Random(20261123)
    seeds = fixture_lines(BARE_DEBEZIUM_FIXTURES) + edge_cases()
    seeds = [line for line in seeds if ":" in line]  # mutate() needs a member to change
    lines = [mutate(rng.choice(seeds), rng) for _ in range(6000)]
    counts = compare_with_python(spark, lines)
    # Both outcomes happen often, or the comparison proves little.
    assert counts["taken"] > 1000 and counts["left"] > 1000, counts


def test_the_jvm_number_quoter_quotes_exactly_as_python(spark):
    """Databend landing: the JVM FractionalNumbersQuoted against transforms.fractional_numbers_quoted."""
    quoter = io.register_jvm_number_quoter(spark)
    assert quoter, "the parsers jar is missing: run 'make jvm'"
    rng = random.Random(20261124)
    seeds = fixture_lines(BARE_DEBEZIUM_FIXTURES + OTHER_FIXTURES) + document_lines() + edge_cases()
    texts = seeds + [mutate(rng.choice([line for line in seeds if ":" in line]), rng) for _ in range(4000)] + [
        '{"a":1.5,"b":"x 1.5","c":-2e10,"d":3,"e":1E+2,"f":"esc \\" 2.5","g":[1.0,2,-0.0]}',
        "-", "--1.5", "1.", "1.e5", "-.5", "1e", "1e+", "2E-07x", "0012.50", '"unterminated 1.5', '"a\\\n"2.5', '"a\\\n1.5"',
        '"\\', '\\"1.5"', "\u0661.\u0665", "\u0661.5", "x1.5y", "", None,
        # Integers beyond 64 bits, which a VARIANT would hold as float64, and the ones at its edges.
        '{"a":10000000000000000000000000000000000002,"b":18446744073709551615,"c":18446744073709551616,'
        '"d":-9223372036854775808,"e":-9223372036854775809,"f":-0000000000000000000001,"g":99999999999999999999}',
        "7" * 5000, "\u0661" * 20, "\u0669" * 20,
    ]
    rows = spark.createDataFrame([(number, text) for number, text in enumerate(texts)], "n int, text string")
    quoted = {row["n"]: row["quoted"] for row in rows.selectExpr("n", f"{quoter}(text) as quoted").collect()}
    mismatches = [(text, quoted[n]) for n, text in enumerate(texts) if quoted[n] != fractional_numbers_quoted(text)]
    assert not mismatches, mismatches[:5]
    assert sum(1 for n, text in enumerate(texts) if text is not None and quoted[n] != text) > 500
    assert fractional_numbers_quoted(texts[-4]) == (
        '{"a":"10000000000000000000000000000000000002","b":18446744073709551615,"c":"18446744073709551616",'
        '"d":-9223372036854775808,"e":"-9223372036854775809","f":"-0000000000000000000001","g":"99999999999999999999"}')


@pytest.fixture()
def landing_tables(spark):
    """Two raw/quarantine table pairs: one landed with the JVM fast path, one without."""
    namespace = "jvm_landing"
    spark.sql(f"create namespace if not exists {namespace}")
    created = {}
    for variant in ("jvm", "python"):
        for table, schema in (("raw", RAW_EVENT_SCHEMA), ("quarantine", QUARANTINE_SCHEMA)):
            name = f"{namespace}.{table}_{variant}"
            spark.sql(f"drop table if exists {name} purge")
            columns = ", ".join(f"{field.name} {field.dataType.simpleString()}" for field in schema.fields)
            spark.sql(f"create table {name} ({columns}) using iceberg")
            created[table, variant] = name
    return created


def mixed_lines(rng: random.Random, count: int) -> list[str]:
    """Fixture lines of every format, 30% of them mutated."""
    seeds = [line for line in fixture_lines(BARE_DEBEZIUM_FIXTURES + OTHER_FIXTURES) if line.strip()]
    return [mutate(rng.choice(seeds), rng) if rng.random() < 0.3 else rng.choice(seeds) for _ in range(count)]


def landing_config(tmp_path, landing_tables, variant: str):
    path = tmp_path / f"landing-{variant}.yml"
    path.write_text(yaml.safe_dump({
        "input": str(tmp_path / "inbox"),
        "checkpoint": str(tmp_path / f"checkpoint-{variant}"),
        "raw_table": landing_tables["raw", variant],
        "quarantine_table": landing_tables["quarantine", variant],
        "tables": {table: {"key": key} for table, key in KEYS.items()},
    }))
    return load_config(path)


def assert_same_tables(spark, landing_tables) -> None:
    """The raw and quarantine tables landed with and without the JVM fast path hold the same rows."""
    for table in ("raw", "quarantine"):
        jvm, python = (spark.table(landing_tables[table, variant]).drop("landed_at") for variant in ("jvm", "python"))
        if table == "raw":  # the two landings ran at different times: each batch's start time is in line-ordered seqs
            jvm, python = (df.withColumn("seq", F.regexp_replace("seq", r"^(0{20}[.]0{20}[.]0{10}[.][01][.])[0-9]{15}", "$1"))
                           for df in (jvm, python))
        assert jvm.exceptAll(python).count() == 0 and python.exceptAll(jvm).count() == 0, table
        assert jvm.count() == python.count() > 0


@pytest.mark.parametrize("way", ["jvm fast path", "parsed in the driver"])
def test_landing_with_and_without_the_jvm_parser_writes_the_same_tables(spark, tmp_path, monkeypatch, landing_tables, way):
    rng = random.Random(11)
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for part in range(3):
        (inbox / f"part-{part}.json").write_text("\n".join(mixed_lines(rng, 400)) + "\n\n", encoding="utf-8")
    if way == "jvm fast path":
        monkeypatch.setattr(small_batch, "MAX_BATCH_BYTES_PARSED_IN_DRIVER", -1)
    else:
        assert small_batch.local_bytes(map(str, inbox.iterdir())) <= small_batch.MAX_BATCH_BYTES_PARSED_IN_DRIVER

    summaries = {"jvm": land.run(landing_config(tmp_path, landing_tables, "jvm"), spark=spark)}
    monkeypatch.setenv("CDC_MERGE_PARSERS_JAR", "")
    summaries["python"] = land.run(landing_config(tmp_path, landing_tables, "python"), spark=spark)

    assert summaries["jvm"].counts == summaries["python"].counts
    assert summaries["jvm"].counts["event"] > 500 and summaries["jvm"].counts["rejected"] > 50
    assert_same_tables(spark, landing_tables)
    tags = [row.tag for row in spark.sql(f"select summary['{io.LANDING_BATCH_PROPERTY}'] as tag "
                                         f"from {landing_tables['raw', 'jvm']}.snapshots").collect()]
    assert [tag.endswith(small_batch.JVM_COMMIT_SUFFIX) for tag in tags] == ([True, False] if way == "jvm fast path" else [False])


def land_dying_after_its_first_commit(spark, tmp_path, monkeypatch, landing_tables, step: str, seed: int) -> str:
    """Lands a file of mixed lines into the "jvm" tables with land.<step> raising, after the batch's
    first commit; returns the raw table, which holds that commit while the quarantine holds nothing."""
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "part-0.json").write_text("\n".join(mixed_lines(random.Random(seed), 600)) + "\n", encoding="utf-8")

    def crash(*args, **kwargs):
        raise RuntimeError("killed between the two commits")

    with monkeypatch.context() as patched:
        patched.setattr(land, step, crash)
        with pytest.raises(Exception, match="killed between the two commits"):
            land.run(landing_config(tmp_path, landing_tables, "jvm"), spark=spark)
    raw = landing_tables["raw", "jvm"]
    assert spark.table(raw).count() > 0, "the first commit came before"
    assert spark.table(landing_tables["quarantine", "jvm"]).count() == 0
    return raw


def landing_tags_equal_to_python(spark, tmp_path, monkeypatch, landing_tables) -> list[str]:
    """Lands the same files without the JVM parser into the "python" tables, checks that the "jvm"
    ones hold the same rows, and returns the tags of the "jvm" raw table's commits."""
    monkeypatch.setenv("CDC_MERGE_PARSERS_JAR", "")
    land.run(landing_config(tmp_path, landing_tables, "python"), spark=spark)
    assert_same_tables(spark, landing_tables)
    raw = landing_tables["raw", "jvm"]
    return [row.tag for row in spark.sql(f"select summary['{io.LANDING_BATCH_PROPERTY}'] as tag from {raw}.snapshots").collect()]


def test_a_batch_that_dies_between_its_two_commits_lands_every_line_once(spark, tmp_path, monkeypatch, landing_tables):
    """The JVM's events are committed first; a crash before the Python parsers' commit must
    neither lose their lines nor land the JVM's events twice when the batch is retried, also when
    the retry would parse a batch of its size in the driver."""
    with monkeypatch.context() as patched:
        patched.setattr(small_batch, "MAX_BATCH_BYTES_PARSED_IN_DRIVER", -1)
        land_dying_after_its_first_commit(spark, tmp_path, monkeypatch, landing_tables, "_parsed_in_python", seed=5)
    retried = land.run(landing_config(tmp_path, landing_tables, "jvm"), spark=spark)
    assert retried.counts["rejected"] > 0

    tags = landing_tags_equal_to_python(spark, tmp_path, monkeypatch, landing_tables)
    assert len(tags) == 2 and tags[0].endswith("/jvm") and tags[1] == tags[0][: -len("/jvm")]


def test_without_the_jar_the_landing_parses_in_python_and_says_so(spark, monkeypatch, tmp_path, caplog):
    # A name and class this session has not seen: the real jar may already be on its classpath.
    monkeypatch.setattr(jvm_functions, "JVM_DEBEZIUM_PARSER", "cdc_merge_test_missing_parser")
    monkeypatch.setattr(jvm_functions, "JVM_DEBEZIUM_PARSER_CLASS", "cdc_merge.NoSuchParser")
    monkeypatch.setenv("CDC_MERGE_PARSERS_JAR", str(tmp_path / "missing.jar"))
    assert io.register_jvm_parser(spark, KEYS) is None
    assert "missing.jar not found" in caplog.text and "make jvm" in caplog.text
    monkeypatch.setenv("CDC_MERGE_PARSERS_JAR", "")
    assert io.register_jvm_parser(spark, KEYS) is None


def test_an_empty_parsers_jar_setting_turns_off_functions_registered_before(spark, monkeypatch):
    """CDC_MERGE_PARSERS_JAR= must win over a function the session registered earlier."""
    assert io.register_jvm_parser(spark, KEYS) and io.register_jvm_number_quoter(spark)
    monkeypatch.setenv("CDC_MERGE_PARSERS_JAR", "")
    assert io.register_jvm_parser(spark, KEYS) is None
    assert io.register_jvm_number_quoter(spark) is None


def test_the_parsers_jar_is_added_to_a_session_once(spark, monkeypatch):
    """Each function registered added the jar again, and Spark warned "has been added already" in every
    landing's output; it is added once."""
    statements = []
    sql = spark.sql
    monkeypatch.setattr(spark, "sql", lambda text, *args, **kwargs: (statements.append(text), sql(text, *args, **kwargs))[1])
    jar = jvm_functions.parsers_jar()
    io.register_jvm_parser(spark, {"shop.once": ["id"]})
    monkeypatch.setattr(jvm_functions, "JVM_NUMBER_QUOTER", "cdc_number_quoter_once")
    io.register_jvm_number_quoter(spark)
    assert jvm_functions._jar_added(spark, jar)
    assert [text for text in statements if text.startswith("add jar")] in ([], [f"add jar '{jar}'"]), statements


def test_a_function_registered_from_another_thread_finds_the_jar_added_before(spark):
    """dbt runs each invocation's models on threads of its own: in `cdc-run`, a landing whose tables
    changed registered its parser from a thread the jar had not been added on, did not find the
    class, and parsed every line in Python from then on."""
    assert io.register_jvm_parser(spark, KEYS)  # the jar added on this thread
    names = []
    other = threading.Thread(target=lambda: names.append(io.register_jvm_parser(spark, {"shop.threaded": ["id"]})))
    other.start()
    other.join()
    assert names and names[0], names
