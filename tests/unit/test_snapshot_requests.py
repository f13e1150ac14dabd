"""cdc-snapshot's requests: a key as written on the command line, and a request kept until the
capture's state records what it asks for; one it cannot serve refused with the reason, which whoever
asked is told."""

from __future__ import annotations

import json
import logging
import threading

import pytest

from python_jobs.capture.output import write_state
from python_jobs.capture.snapshot_pages import Pages, TableSnapshot
from python_jobs.capture.snapshot_requests import (
    await_request,
    key_parts,
    main,
    outcome_line,
    refuse,
    requests_folder,
    taken_requests,
    write_request,
)

log = logging.getLogger("test")


def test_a_key_keeps_its_spaces_and_escaped_commas():
    assert key_parts(None) is None
    assert key_parts(" a") == [" a"]
    assert key_parts("10, x") == ["10", " x"]
    assert key_parts("a\\,b,c\\\\") == ["a,b", "c\\"]


def test_a_request_stays_until_the_state_records_its_snapshot(tmp_path):
    state = tmp_path / "state.json"
    write_state(state, {"slot": "s", "written_lsn": "0/1"})
    write_request(state, "shop.t", ["1"], ["2"])
    pages = Pages()
    with pytest.raises(RuntimeError):
        with taken_requests(state, pages) as requests:
            pages.request(TableSnapshot("shop.t", "requested"))
            raise RuntimeError("the capture dies before its state says so")
    assert len(list(requests_folder(state).glob("*.json"))) == 1

    pages = Pages()
    with taken_requests(state, pages) as requests:
        assert [{key: value for key, value in request.items() if key != "file"} for request in requests] == [
            {"table": "shop.t", "from": ["1"], "to": ["2"]}]
        pages.request(TableSnapshot("shop.t", "requested"))
    assert list(requests_folder(state).glob("*.json")) == []
    kept = json.loads(state.read_text())
    assert kept["written_lsn"] == "0/1" and [snapshot["table"] for snapshot in kept["snapshots"]] == ["shop.t"]


def test_a_request_is_reported_taken_refused_or_waiting(tmp_path):
    state = tmp_path / "state.json"
    write_state(state, {"slot": "s", "written_lsn": "0/1"})
    taken, refused = write_request(state, "shop.t", ["1"], None), write_request(state, "shop.t", ["x"], None)
    assert await_request(taken, 0) == ("waiting", None)  # no capture running

    def capture() -> None:
        pages = Pages()
        with taken_requests(state, pages) as requests:
            for request in requests:
                if request["from"] == ["x"]:
                    refuse(state, request, "--from x: not an integer", log)
                else:
                    pages.request(TableSnapshot("shop.t", "requested"))

    threading.Timer(0.3, capture).start()
    assert await_request(taken, 5) == ("taken", None)
    assert await_request(refused, 5) == ("refused", "--from x: not an integer")
    kept = json.loads((requests_folder(state) / "refused" / refused.name).read_text())
    assert kept == {"table": "shop.t", "from": ["x"], "to": None, "refused": "--from x: not an integer"}
    assert list(requests_folder(state).glob("*.json")) == []  # a refused one is not taken again
    assert "refused by the capture: --from x: not an integer" in outcome_line("shop.t", "keys x to end", refused,
                                                                              ("refused", "--from x: not an integer"), 5)


def test_cdc_snapshot_says_a_request_no_capture_took_is_waiting(tmp_path, capsys):
    state = tmp_path / "state.json"
    write_state(state, {"slot": "s", "written_lsn": "0/1", "tables": ["shop.t"]})
    assert main(["--state", str(state), "--table", "shop.t", "--from", "5", "--wait-seconds", "0.2"]) == 0
    said = capsys.readouterr().err
    assert "shop.t keys 5 to end: not taken by a capture within 0.2 s" in said, said


def test_cdc_snapshot_refuses_a_bound_the_key_cannot_take_before_asking_the_capture(tmp_path, capsys):
    """A bound of too few values, or a text for an integer key column, was asked of the capture, which refused
    it at its next start with the server's cast error and a warning that stood until someone removed it."""
    state = tmp_path / "state.json"
    write_state(state, {"slot": "s", "written_lsn": "0/1", "tables": ["shop.lines", "shop.notes"],
                        "keys": {"shop.lines": ["order_id", "line_no"], "shop.notes": ["code"]},
                        "columns": {"shop.lines": {"1": "order_id", "2": "line_no"}, "shop.notes": {"1": "code"}},
                        "column_types": {"shop.lines": {"1": "bigint", "2": "integer"}, "shop.notes": {"1": "text"}}})

    def asked(*bounds: str) -> int:
        return main(["--state", str(state), "--wait-seconds", "0", *bounds])

    assert asked("--table", "shop.lines", "--from", "10", "--to", "12") == 2
    said = capsys.readouterr().err
    assert ("--from gives 1 value(s), but the key of shop.lines has 2 column(s) (order_id, line_no)" in said
            and "nothing was asked of the capture" in said), said
    assert asked("--table", "shop.lines", "--from", "abc,1") == 2
    assert "--from: 'abc' is not a value of shop.lines.order_id, which is bigint" in capsys.readouterr().err
    assert asked("--table", "shop.lines", "--from", "10,1", "--to", "12,x") == 2
    assert "--to: 'x' is not a value of shop.lines.line_no, which is integer" in capsys.readouterr().err
    # Was taken, and read as no row in one page, with no word of why.
    assert asked("--table", "shop.lines", "--from", "50,1", "--to", "10,1") == 2
    assert ("--from 50,1 comes after --to 10,1 in the key order of shop.lines (order_id, line_no), so the range holds"
            " no row: give the lower key as --from" in capsys.readouterr().err)
    assert not requests_folder(state).exists() or not list(requests_folder(state).glob("*.json"))
    assert asked("--table", "shop.lines", "--from=-20,7", "--to=-12,6") == 0
    assert asked("--table", "shop.notes", "--from", "b", "--to", "a") == 0  # a text key's order is the server's collation's
    assert asked("--table", "shop.notes", "--from", "abc") == 0  # a text key takes any text
    assert len(list(requests_folder(state).glob("*.json"))) == 3
