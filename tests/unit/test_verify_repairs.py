"""cdc-verify --repair's requests (python_jobs/verify/cli.py) and the mirror side's string literals
(python_jobs/verify/mirror_ranges.py)."""

from __future__ import annotations

import json

from python_jobs.status.model import what_to_do
from python_jobs.status.status_files import read_verify_report
from python_jobs.verify.cli import note_repairs_asked, parse_args, request_repairs
from python_jobs.verify.mirror_ranges import MirrorRanges, engine_literal
from python_jobs.verify.ranges import KeyRange


def test_a_sampled_checks_differing_keys_are_each_asked_of_the_capture(tmp_path, capsys):
    state = tmp_path / "state.json"
    state.write_text("{}")
    checks = [{"source_table": "shop.t", "clean": False, "differing_ranges": [(["2024-01-21"], ["2024-01-21"])]},
              {"source_table": "shop.u", "clean": False, "differing_ranges": []},
              {"source_table": "shop.v", "clean": True, "differing_ranges": []},
              {"source_table": "shop.w", "clean": False, "differing_ranges": [], "unkeyed": 1}]
    assert request_repairs(state, checks) == {"shop.t"}
    requests = [json.loads(path.read_text()) for path in (tmp_path / "state.json.requests").glob("*.json")]
    assert requests == [{"table": "shop.t", "from": ["2024-01-21"], "to": ["2024-01-21"]}]
    said = capsys.readouterr().err
    assert "shop.u: no differing key was found to read again" in said and "--table shop.u" in said
    assert "shop.v" not in said
    # Rows written by hand, not the counts: no snapshot of the table would change them.
    assert "shop.w: nothing to read again: what differs is the mirror's 1 rows without a _cdc_key" in said
    assert "cdc-snapshot --state" not in said.split("shop.w:")[1]
    # --repair goes with --sample: a sampled check's keys are asked of the capture too.
    assert parse_args(["--repair", "--state", str(state), "--sample", "10"]).repair


def test_a_mirror_behind_its_source_is_not_read_again(tmp_path, capsys):
    """Its differences may be changes still on their way: reading its ranges (often most of the table) again
    would only repeat them, so it is told to wait for the mirror instead."""
    state = tmp_path / "state.json"
    state.write_text("{}")
    checks = [{"source_table": "shop.t", "clean": False, "behind": True, "source_position": "0/16B3748",
               "differing_ranges": [(None, ["500"]), (["500"], None)]},
              {"source_table": "shop.u", "clean": False, "behind": False, "differing_ranges": [(["7"], ["9"])]}]
    assert request_repairs(state, checks) == {"shop.u"}
    requests = [json.loads(path.read_text()) for path in (tmp_path / "state.json.requests").glob("*.json")]
    assert requests == [{"table": "shop.u", "from": ["7"], "to": ["9"]}]
    said = capsys.readouterr().err
    assert "shop.t: not read again" in said and "0/16B3748" in said and "once it has caught up" in said


def test_keys_a_mirror_behind_its_source_holds_twice_are_read_again(tmp_path, capsys):
    """Its runs fail on such a key, so it never catches up: waiting for it, as for its other differences,
    left the mirror stuck."""
    state = tmp_path / "state.json"
    state.write_text("{}")
    checks = [{"source_table": "shop.t", "clean": False, "behind": True, "source_position": "0/16B3748",
               "differing_ranges": [(None, ["500"])], "repeated": ['["7"]']}]
    assert request_repairs(state, checks) == {"shop.t"}
    requests = [json.loads(path.read_text()) for path in (tmp_path / "state.json.requests").glob("*.json")]
    assert requests == [{"table": "shop.t", "from": ["7"], "to": ["7"]}]
    said = capsys.readouterr().err
    assert "shop.t: not read again (but the keys it held more than once, read again below)" in said


def test_a_range_two_models_of_a_table_differ_in_is_asked_once(tmp_path, capsys):
    """A mirror and a history of one table differing in the same keys asked the capture to read them twice."""
    state = tmp_path / "state.json"
    state.write_text("{}")
    checks = [{"source_table": "shop.t", "clean": False, "differing_ranges": [(["7"], ["9"])]},
              {"source_table": "shop.t", "clean": False, "differing_ranges": [(["7"], ["9"]), (["12"], ["20"])]}]
    assert request_repairs(state, checks) == {"shop.t"}
    requests = [json.loads(path.read_text()) for path in (tmp_path / "state.json.requests").glob("*.json")]
    assert sorted(request["from"] for request in requests) == [["12"], ["7"]]
    assert capsys.readouterr().err.count("keys 7 to 9") == 1


def plain_literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def test_no_dollar_reaches_spark_sql_text():
    """Spark replaces ${x} in a statement's text before parsing it: \\u0024 is the literal's own `$`."""
    assert engine_literal("spark", plain_literal, "${x}z") == "'\\u0024{x}z'"
    assert engine_literal("databend", plain_literal, "${x}") == "'${x}'"
    mirror = {"columns": [["id", "string"]], "range_keys_sql": "select k where __CDC_MERGE_RANGE__"}
    side = MirrorRanges("spark", mirror, ["id"], [], lambda sql: [], plain_literal)
    side.exclude(['["${y}"]'])
    where = side._where(KeyRange(("${x}",), ("${y}z",)))
    assert "$" not in where and where.count("\\u0024") == 3, where


def test_the_report_says_when_a_checks_ranges_were_asked_to_be_read_again(tmp_path):
    """The status page reads it: a check that differed may be repaired since (python_jobs/status/page.py)."""
    report = tmp_path / "cdc_verify.json"
    written = {"differing": 1, "checks": [
        {"mirror": "shop.t", "source_table": "shop.t", "clean": False, "differing": 1, "checked_at": "2026-01-01 00:00:00"},
        {"mirror": "shop.u", "source_table": "shop.u", "clean": False, "missing": 3, "checked_at": "2026-01-01 00:00:00"}]}
    note_repairs_asked(report, written, {"shop.t"})
    asked, not_asked = read_verify_report(report)
    assert asked.repair_asked_at > "2026-01-01" and not_asked.repair_asked_at is None
    assert (asked.differing, not_asked.missing) == (1, 3)
    note_repairs_asked(tmp_path / "none.json", written, set())
    assert not (tmp_path / "none.json").exists()


def test_a_key_held_more_than_once_is_read_again_and_the_failure_says_to_repair_it(tmp_path, capsys):
    """Its rows are deleted first (macros/verify_repair.sql): a check that found nothing else to read
    asked for the whole table, and a mirror's runs fail on such a key until one row holds it."""
    state = tmp_path / "state.json"
    state.write_text("{}")
    checks = [{"source_table": "shop.r", "mirror": "m.r", "clean": False, "differing_ranges": [], "repeated": ['["5"]']},
              {"source_table": "shop.s", "mirror": "m.s", "clean": False, "differing_ranges": [(["1"], ["9"])],
               "repeated": ['["a\'b"]']}]
    assert request_repairs(state, checks) == {"shop.r", "shop.s"}
    requests = sorted(json.loads(path.read_text())["from"] for path in (tmp_path / "state.json.requests").glob("*.json"))
    assert requests == [["1"], ["5"], ["a'b"]]
    assert "no differing key was found" not in capsys.readouterr().err
    failed = ("lake.m.r holds the key [\"5\"] more than once (rows written into it by hand?), and applies nothing until one "
              "row holds it: run cdc-verify --repair --state <the capture's state file>, which deletes the key's rows")
    assert what_to_do(failed).startswith("do what the message says")
