"""cdc-snapshot's requests: a key as written on the command line, and a request kept until the
capture's state records what it asks for."""

from __future__ import annotations

import json

import pytest

from python_jobs.capture.output import write_state
from python_jobs.capture.snapshot_pages import Pages, TableSnapshot
from python_jobs.capture.snapshot_requests import key_parts, requests_folder, taken_requests, write_request


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
        assert requests == [{"table": "shop.t", "from": ["1"], "to": ["2"]}]
        pages.request(TableSnapshot("shop.t", "requested"))
    assert list(requests_folder(state).glob("*.json")) == []
    kept = json.loads(state.read_text())
    assert kept["written_lsn"] == "0/1" and [snapshot["table"] for snapshot in kept["snapshots"]] == ["shop.t"]
