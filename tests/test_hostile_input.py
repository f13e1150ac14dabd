"""Hostile input: every bad line is quarantined with its file, line and reason, every good line
lands, and nothing stops the batch (the bounded part of `python -m reliability.hostile_input`)."""

from __future__ import annotations

import gc
import itertools

import pytest

from python_jobs.formats import detect as formats
from python_jobs.formats.records import INTERNAL_ERROR, STATUS_EVENT, STATUS_REJECTED
from python_jobs.landing import io
from python_jobs.landing.transforms import NOT_UTF8_REASON, parse_in_jvm, parsed_in_jvm
from reliability import hostile_input, hostile_lines

_counter = itertools.count(1)
DEBEZIUM = ('{"before":null,"after":{"id":7,"name":"x"},"source":{"connector":"mysql","db":"shop","table":"items",'
            '"file":"mysql-bin.000003","pos":154,"row":0},"op":"c","ts_ms":1}')


@pytest.fixture
def no_collection_at_the_recursion_limit():
    """Deeply nested lines take the Python parsers to the recursion limit, where they stop and reject the
    line (formats/records.py). A finalizer the cycle collector ran there (a py4j object's, left by an
    earlier Spark test in this worker) would have no stack left, and pytest fails the test on the error
    it could not raise: collected before, not during."""
    gc.collect()
    gc.disable()
    yield
    gc.enable()


@pytest.mark.usefixtures("no_collection_at_the_recursion_limit")
@pytest.mark.parametrize("fmt", hostile_lines.FORMATS)
def test_every_generated_line_gets_its_outcome_from_the_python_parsers(fmt):
    for case in hostile_lines.cases(fmt, 40, 40, seed=5):
        if case.kind == "not_utf8":  # bytes; the landing marks them before any parser (below)
            continue
        parsed = formats.parse_line(case.data.decode("utf-8"), hostile_lines.KEYS)
        outcome = hostile_lines.EVENT if [p.status for p in parsed] == [STATUS_EVENT] else hostile_lines.QUARANTINE
        assert outcome == case.expected, (case.kind, case.data[:300], parsed)
        for p in parsed:
            assert p.status == STATUS_EVENT or (p.status == STATUS_REJECTED and p.reason), (case.kind, p)
            assert not (p.reason or "").startswith(INTERNAL_ERROR), (case.kind, p.reason)


@pytest.mark.parametrize(
    "line, reason",
    [
        (DEBEZIUM.replace('"id":7,', '"id":7,"id":8,'), 'member "id" appears twice in one object'),
        (DEBEZIUM.replace('"op":"c"', '"op":"c","op":"d"'), 'member "op" appears twice in the line'),
        (DEBEZIUM.replace('"name":"x"', '"name":NaN'), "NaN is not a JSON number"),
        (DEBEZIUM.replace('"name":"x"', '"name":-Infinity'), "-Infinity is not a JSON number"),
        (DEBEZIUM.replace('"row":0', '"row":10000000000'), "field 'source.row' is 10000000000"),
        ('{"database":"shop","table":"items","type":"insert","position":"mysql-bin.000003:' + "9" * 21
         + '","data":{"id":1},"primary_key_columns":["id"]}', "its numbers are beyond a binlog position"),
        ('{"action":"I","lsn":"0/1FFFFFFFF","schema":"shop","table":"items","columns":[{"name":"id","type":"bigint",'
         '"value":1}]}', "not a WAL position"),
        ('{"action":"I","lsn":"0/1","schema":"shop","table":"items","columns":[{"name":"id","type":"bigint",'
         '"value":"abc"}]}', 'column "id" of type bigint has value "abc"'),
        ('{"action":"U","lsn":"0/1","schema":"shop","table":"items","identity":[{"name":"id","type":"bigint",'
         '"value":1}]}', "action 'U' needs a non-empty 'columns' array"),
    ],
)
def test_lines_that_landed_wrong_or_failed_as_parser_bugs_are_quarantined_with_a_reason(line, reason):
    parsed = formats.parse_line(line, hostile_lines.KEYS)
    assert [p.status for p in parsed] == [STATUS_REJECTED]
    assert reason in parsed[0].reason


def test_the_jvm_fast_path_takes_no_bad_line(spark):
    """It returns an event only where Python would; anything else is left to the Python parsers."""
    jvm_parser = io.register_jvm_parser(spark, hostile_lines.KEYS)
    assert jvm_parser, "the parsers jar is missing: run 'make jvm'"
    cases = [case for fmt in ("debezium", "debezium_postgres", "flink_debezium")
             for case in hostile_lines.cases(fmt, 30, 30, seed=6) if case.kind != "not_utf8"]
    lines = spark.createDataFrame(
        [("f", number, case.data.decode("utf-8")) for number, case in enumerate(cases)],
        "landed_file string, landed_line int, line_text string",
    )
    taken = {row.landed_line for row in parsed_in_jvm(parse_in_jvm(lines, jvm_parser)).collect()}
    wrongly_taken = [cases[number].kind for number in taken if cases[number].expected != hostile_lines.EVENT]
    assert wrongly_taken == []
    # The fast path is still the fast path: it takes the good lines.
    assert sum(case.kind == "good" for case in cases) == len(taken)


def test_hostile_files_land_every_good_line_and_quarantine_every_bad_one(spark, tmp_path):
    """All formats, every bad kind, an empty file, files without a final newline, a 2 MB line,
    and a file deleted and one rewritten between listing and reading, in one landing."""
    result = hostile_input.run(tmp_path, bad_per_kind=12, good_per_format=30, huge_mb=2, seed=11, spark=spark,
                               raw_schema=f"hostile_{next(_counter)}")
    figures = result["figures"]
    assert result["landing_error"] is None
    assert figures["bad lines"] >= 7 * 8 * 12 and figures["lines tried"] > figures["bad lines"]
    assert {name: figures[name] for name in ("crashes", "lines lost", "good lines quarantined", "bad lines landed",
                                             "changed files without a note", "rows for no line")} == dict.fromkeys(
        ("crashes", "lines lost", "good lines quarantined", "bad lines landed", "changed files without a note",
         "rows for no line"), 0), result["examples"]
    assert figures["changed files"] == 2 and result["files_without_final_newline"] > 0
    assert result["jvm_fast_path"]


def test_a_line_that_is_not_utf8_is_quarantined_and_a_real_replacement_character_lands(dbt_project, spark):
    good = DEBEZIUM.replace('"name":"x"', '"name":"\ufffd kept"').encode()
    bad = DEBEZIUM.replace('"pos":154', '"pos":155').encode().replace(b'"name":"x"', b'"name":"\xff\xfe"')
    (dbt_project.inbox / "valid.json").write_bytes(good + b"\n")
    # In a file that is not all UTF-8, a line with U+FFFD cannot be told from a replaced byte: the
    # good line there has none.
    (dbt_project.inbox / "mixed.json").write_bytes(DEBEZIUM.replace('"pos":154', '"pos":156').encode() + b"\n" + bad + b"\n")

    summary = dbt_project.land(hostile_lines.KEYS)

    assert summary.counts["event"] == 2 and summary.counts["rejected"] == 1
    quarantined = dbt_project.rows(f"{dbt_project.raw_schema}.quarantine")
    assert [(row.landed_file.rsplit("/", 1)[-1], row.landed_line, row.reason) for row in quarantined] == [
        ("mixed.json", 2, NOT_UTF8_REASON)
    ]
    names = [row["name"] for row in spark.sql(
        f"select get_json_object(raw_data, '$.name') as name from {dbt_project.raw_schema}.raw_events order by 1").collect()]
    assert names == ["x", "\ufffd kept"]
