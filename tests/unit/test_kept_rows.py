"""The rows a run's mirrors keep to write once (kept_rows.py) and the invocation's offsets cache
(run_state.py): plain Python, no Spark, milliseconds."""

from __future__ import annotations

import threading

import pytest

from dbt.adapters.cdc_core.followed_rows import newest_offset
from dbt.adapters.cdc_core.kept_rows import OFFSET, RUN, KeptRow, KeptRows, grouped, mirrors_to_release
from dbt.adapters.cdc_core.run_state import InvocationState


def row(kind, invocation="i1", target="m.a", table=None):
    return KeptRow(kind, invocation, table or f"m.cdc_merge_{kind}s", target, {"offset_snapshot": "7"})


def test_offsets_groups_come_first_and_keep_the_order_kept():
    rows = [row(RUN, target="m.a"), row(OFFSET, target="m.a"), row(RUN, target="m.b"), row(OFFSET, target="m.b")]

    groups = grouped(rows, now=rows[-1].kept_at)

    assert [(group["kind"], [r["target_table"] for r in group["rows"]]) for group in groups] == [
        (OFFSET, ["m.a", "m.b"]), (RUN, ["m.a", "m.b"])]
    assert all(r["seconds_since_kept"] >= 0 for group in groups for r in group["rows"])


def test_only_mirrors_with_a_kept_offset_are_released_after_the_write():
    rows = [row(RUN, target="m.idle"), row(OFFSET, target="m.b"), row(OFFSET, target="m.a")]

    assert mirrors_to_release(rows) == ["m.a", "m.b"]


def test_a_mirror_holds_its_lock_while_its_offset_row_waits():
    kept = KeptRows()
    kept.keep(row(RUN, target="m.idle"))
    kept.keep(row(OFFSET, target="m.a"))

    assert kept.holds_offset("m.a") and not kept.holds_offset("m.idle")
    assert len(kept.take_all()) == 2
    assert not kept.holds_offset("m.a")


def test_rows_of_an_earlier_invocation_are_taken_by_the_next_one_and_its_own_stay():
    kept = KeptRows()
    kept.keep(row(OFFSET, invocation="i1", target="m.a"))
    kept.keep(row(OFFSET, invocation="i2", target="m.b"))

    earlier = kept.take_earlier("i2")

    assert [r.target_table for r in earlier] == ["m.a"]
    assert [r.target_table for r in kept.take_all()] == ["m.b"]


def test_a_reader_waits_until_rows_taken_by_another_thread_are_written():
    kept = KeptRows()
    kept.keep(row(OFFSET, target="m.a"))
    assert kept.wait_for_writes(timeout=0)  # nothing taken: no wait
    assert len(kept.take_all()) == 1

    assert not kept.wait_for_writes(timeout=0.01)  # taken, not yet written
    writer = threading.Timer(0.05, kept.written)
    writer.start()
    assert kept.wait_for_writes(timeout=5)
    writer.join()


def test_an_empty_take_leaves_nothing_to_wait_for_and_the_invocations_end_forgets_a_failed_writer():
    kept = KeptRows()
    assert kept.take_all() == [] and kept.take_earlier("i2") == []
    assert kept.wait_for_writes(timeout=0)

    kept.keep(row(OFFSET, invocation="i1"))
    assert kept.take_earlier("i2")
    kept.forget_writes()
    assert kept.wait_for_writes(timeout=0)


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="offset"):
        KeptRows().keep(row("offsets"))


def test_the_last_mirror_to_finish_takes_every_row_of_the_invocation():
    state = InvocationState()
    state.kept.keep(row(OFFSET, target="m.a"))

    assert state.rows_to_write("i1", lambda: 2) == []
    state.kept.keep(row(OFFSET, target="m.b"))
    assert [r.target_table for r in state.rows_to_write("i1", lambda: 2)] == ["m.a", "m.b"]


class Offsets:
    """An offsets table: its rows, its Iceberg snapshot, and how often it was queried."""

    def __init__(self):
        self.rows = [{"target_table": "m.a", "offset_snapshot": "10", "offset_ordinal": 3}]
        self.version = "s1"
        self.queries = 0

    def query(self, sql):
        self.queries += 1
        return list(self.rows)


def test_offsets_are_read_once_per_invocation_while_the_table_is_unchanged():
    state, offsets = InvocationState(), Offsets()

    first = state.newest_offset("i1", "m.cdc_merge_offsets", "m.a", offsets.query, lambda: offsets.version)
    again = state.newest_offset("i1", "m.cdc_merge_offsets", "m.b", offsets.query, lambda: offsets.version)

    assert first == {"offset_snapshot": "10", "offset_ordinal": 3}
    assert again is None
    assert offsets.queries == 1


def test_an_offset_written_by_any_process_since_the_read_is_seen():
    """A full refresh elsewhere sets the offset back to the start of the log: a mirror must not
    resume from the offset it had when the invocation began."""
    state, offsets = InvocationState(), Offsets()
    state.newest_offset("i1", "m.cdc_merge_offsets", "m.a", offsets.query, lambda: offsets.version)

    offsets.rows = [{"target_table": "m.a", "offset_snapshot": None, "offset_ordinal": 4}]
    offsets.version = "s2"

    assert state.newest_offset("i1", "m.cdc_merge_offsets", "m.a", offsets.query, lambda: offsets.version) == {
        "offset_snapshot": None, "offset_ordinal": 4}
    assert offsets.queries == 2


def test_a_new_invocation_reads_the_offsets_again_only_when_the_table_moved():
    state, offsets = InvocationState(), Offsets()
    state.newest_offset("i1", "m.cdc_merge_offsets", "m.a", offsets.query, lambda: offsets.version)
    state.newest_offset("i2", "m.cdc_merge_offsets", "m.a", offsets.query, lambda: offsets.version)
    assert offsets.queries == 1

    offsets.version = "s2"
    state.newest_offset("i3", "m.cdc_merge_offsets", "m.a", offsets.query, lambda: offsets.version)
    assert offsets.queries == 2


def test_offsets_of_a_table_without_snapshot_ids_are_read_once_per_invocation():
    state, offsets = InvocationState(), Offsets()
    for invocation in ("i1", "i1", "i2"):
        state.newest_offset(invocation, "m.cdc_merge_offsets", "m.a", offsets.query, lambda: None)

    assert offsets.queries == 2


def test_the_process_own_append_is_followed_and_any_other_commit_read():
    state, offsets = InvocationState(), Offsets()
    state.newest_offset("i1", "m.cdc_merge_offsets", "m.a", offsets.query, lambda: offsets.version)

    state.offsets.appended("m.cdc_merge_offsets", ("s1", "s2"), [("m.a", {"offset_snapshot": "11", "offset_ordinal": 4}),
                                                                 ("m.b", {"offset_snapshot": "11", "offset_ordinal": 1})],
                           newest_offset)
    offsets.version = "s2"
    assert state.newest_offset("i2", "m.cdc_merge_offsets", "m.a", offsets.query, lambda: offsets.version) == {
        "offset_snapshot": "11", "offset_ordinal": 4}
    assert state.newest_offset("i2", "m.cdc_merge_offsets", "m.b", offsets.query, lambda: offsets.version) == {
        "offset_snapshot": "11", "offset_ordinal": 1}
    assert offsets.queries == 1

    # Another process's offset (a full refresh sets it back): the table is at a snapshot not followed.
    offsets.rows = [{"target_table": "m.a", "offset_snapshot": None, "offset_ordinal": 5}]
    offsets.version = "s3"
    assert state.newest_offset("i3", "m.cdc_merge_offsets", "m.a", offsets.query, lambda: offsets.version) == {
        "offset_snapshot": None, "offset_ordinal": 5}
    assert offsets.queries == 2
