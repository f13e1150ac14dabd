"""postgres_partitions: leaf changes named as their table's, what a change of the leaves needs read,
and the leaves a capture resumes with."""

from __future__ import annotations

from python_jobs.capture.postgres_partitions import as_tables, reads_for_change, resumed, wal2json_table

PARTITIONS = {"shop.events": ("shop.events_a", "shop.events_b"), "shop.empty": ()}


def change(action: str, table: str, **fields) -> dict:
    schema, name = table.split(".")
    return {"action": action, "schema": schema, "table": name, **fields}


def test_leaf_changes_are_named_as_their_tables():
    named, read_again = as_tables([change("I", "shop.events_a", lsn="0/1"), change("M", "shop.events_a"),
                                   change("D", "shop.other"), change("U", "shop.events_b", lsn="0/2")], PARTITIONS)
    assert [(c["action"], c["schema"], c["table"]) for c in named] == [
        ("I", "shop", "events"), ("M", "shop", "events_a"), ("D", "shop", "other"), ("U", "shop", "events")]
    assert named[0]["lsn"] == "0/1" and read_again == []


def test_a_truncate_of_every_leaf_is_the_tables_and_of_some_is_read_again():
    named, read_again = as_tables([change("I", "shop.events_a"), change("T", "shop.events_a"),
                                   change("T", "shop.events_b"), change("I", "shop.events_b")], PARTITIONS)
    assert [(c["action"], c["table"]) for c in named] == [("I", "events"), ("T", "events"), ("I", "events")]
    assert read_again == []
    named, read_again = as_tables([change("T", "shop.events_b"), change("I", "shop.events_b")], PARTITIONS)
    assert [(c["action"], c["table"]) for c in named] == [("I", "events")]
    assert read_again == ["shop.events"]


def test_a_new_leaf_is_read_alone_and_a_leaf_gone_has_its_table_read_again():
    new = {"shop.events": ("shop.events_b", "shop.events_c", "shop.events_d"), "shop.empty": ("shop.empty_1",)}
    assert reads_for_change(PARTITIONS, new) == [
        ("shop.empty", "partition shop.empty_1 attached", "shop.empty_1"),
        ("shop.events", "partition shop.events_a detached or dropped", None),
        ("shop.events", "partition shop.events_c attached", "shop.events_c"),
        ("shop.events", "partition shop.events_d attached", "shop.events_d"),
    ]
    assert reads_for_change(PARTITIONS, dict(PARTITIONS)) == []


def test_a_capture_resumes_with_the_leaves_of_its_log():
    current = {"shop.events": ("shop.events_a",), "shop.added": ("shop.added_1",)}
    kept = {"partitions": {"shop.events": ["shop.events_a", "shop.events_b"], "shop.left_out": ["shop.left_out_1"]}}
    assert resumed(kept, current, ["shop.events", "shop.added"]) == {
        "shop.events": ("shop.events_a", "shop.events_b"), "shop.added": ("shop.added_1",)}
    assert resumed({}, current, ["shop.events"]) == current


def test_names_wal2json_must_read_escaped():
    assert wal2json_table("shop.events_2026") == "shop.events_2026"
    assert wal2json_table("my schema.a,b.c*") == "my\\ schema.a\\,b\\.c\\*"
