"""A bookkeeping table's rows kept by snapshot and followed through the process's own appends
(followed_rows.py): plain Python, no Spark, milliseconds."""

from __future__ import annotations

from dbt.adapters.cdc_core.followed_rows import FollowedRows, latest_start, newest_offset


def test_values_are_known_at_their_snapshot_only():
    rows = FollowedRows()
    rows.store("m.runs", "s1", {"m.a": 5})

    assert rows.at("m.runs", "s1") == {"m.a": 5}
    assert rows.at("m.runs", "s2") is None
    assert rows.at("m.runs", None) is None
    assert rows.at("m.other", "s1") is None


def test_an_append_on_the_known_snapshot_moves_the_values_to_its_own():
    rows = FollowedRows()
    rows.store("m.runs", "s1", {"m.a": 5, "m.b": None})

    rows.appended("m.runs", ("s1", "s2"), [("m.a", 3), ("m.b", 7), ("m.c", 1)], latest_start)

    assert rows.at("m.runs", "s1") is None
    assert rows.at("m.runs", "s2") == {"m.a": 5, "m.b": 7, "m.c": 1}


def test_a_mirror_new_to_values_known_for_some_mirrors_only_stays_unknown():
    rows = FollowedRows()
    rows.store("m.runs", "s1", {"m.a": 5})

    rows.appended("m.runs", ("s1", "s2"), [("m.a", 6), ("m.c", 1)], latest_start, every_mirror=False)

    assert rows.at("m.runs", "s2") == {"m.a": 6}


def test_an_append_on_another_snapshot_or_of_unknown_outcome_forgets_the_table():
    rows = FollowedRows()
    rows.store("m.runs", "s1", {"m.a": 5})
    rows.appended("m.runs", ("s9", "s10"), [("m.a", 6)], latest_start)
    assert rows.at("m.runs", "s1") is None and rows.at("m.runs", "s10") is None

    rows.store("m.runs", "s1", {"m.a": 5})
    rows.appended("m.runs", None, [("m.a", 6)], latest_start)
    assert rows.at("m.runs", "s1") is None


def test_values_read_are_copies():
    rows = FollowedRows()
    rows.store("m.runs", "s1", {"m.a": 5})
    rows.at("m.runs", "s1")["m.a"] = 99

    assert rows.at("m.runs", "s1") == {"m.a": 5}


def test_the_newest_offset_is_the_higher_ordinal_and_the_latest_start_ignores_none():
    assert newest_offset({"offset_snapshot": "1", "offset_ordinal": 4}, {"offset_snapshot": "2", "offset_ordinal": 3}) == {
        "offset_snapshot": "1", "offset_ordinal": 4}
    assert latest_start(None, 3) == 3 and latest_start(4, None) == 4 and latest_start(None, None) is None
