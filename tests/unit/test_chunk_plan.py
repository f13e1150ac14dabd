"""The chunk plan of the cdc_merge materialization (python_jobs/apply/chunk_plan.py): which raw
snapshots a mirror has not applied and their chunks, from snapshot logs written out as tables."""

from __future__ import annotations

from decimal import Decimal

import pytest

from python_jobs.apply.chunk_plan import (
    ExpiredOffset,
    chunks_of,
    needs_own_events,
    own_events,
    pending_or_expired,
    pending_snapshots,
    plan_chunks,
    quiet_snapshots,
    quiet_through,
)


def log(current, *snapshots):
    """A snapshot log from (snapshot_id, parent_id, added_records) triples."""
    return {"current": current, "snapshots": [
        {"snapshot_id": snapshot_id, "parent_id": parent_id, "operation": "append", "added_records": added}
        for snapshot_id, parent_id, added in snapshots
    ]}


# s1 <- s2 <- s3 <- s4 on main; b3 branches off s2 (another branch, or a rolled-back write).
CHAIN = log("s4", ("s1", None, 10), ("s2", "s1", 20), ("s3", "s2", 30), ("s4", "s3", 40))
BRANCHED = log("s4", ("s1", None, 10), ("s2", "s1", 20), ("b3", "s2", 999), ("s3", "s2", 30), ("s4", "s3", 40))
SHUFFLED = log("s4", ("s3", "s2", 30), ("s1", None, 10), ("s4", "s3", 40), ("s2", "s1", 20))
AS_TEXT = log("s3", ("s1", None, "10"), ("s2", "s1", "20"), ("s3", "s2", Decimal("30")))


@pytest.mark.parametrize("snapshot_log, offset, expected", [
    pytest.param(log(None), None, [], id="no-current-snapshot"),
    pytest.param(log(None, ("s1", None, 10)), "s1", [], id="no-current-snapshot-whatever-the-offset"),
    pytest.param(CHAIN, None, [("s1", 10), ("s2", 20), ("s3", 30), ("s4", 40)], id="start-of-log-takes-all"),
    pytest.param(CHAIN, "s2", [("s3", 30), ("s4", 40)], id="after-the-offset-oldest-first"),
    pytest.param(CHAIN, "s4", [], id="offset-at-current-nothing"),
    pytest.param(SHUFFLED, "s1", [("s2", 20), ("s3", 30), ("s4", 40)], id="listed-in-any-order"),
    pytest.param(BRANCHED, "s1", [("s2", 20), ("s3", 30), ("s4", 40)], id="branch-snapshot-ignored"),
    pytest.param(AS_TEXT, None, [("s1", 10), ("s2", 20), ("s3", 30)], id="added-records-as-text-and-decimal"),
    pytest.param(log("s2", ("s2", "s1", 5)), "s1", [("s2", 5)], id="offset-itself-expired-but-still-the-parent"),
])
def test_pending_snapshots(snapshot_log, offset, expected):
    pending = pending_snapshots(snapshot_log, offset)

    assert [(snapshot["snapshot_id"], snapshot["added_records"]) for snapshot in pending] == expected
    assert all(type(snapshot["added_records"]) is int for snapshot in pending)


@pytest.mark.parametrize("snapshot_log, offset", [
    pytest.param(CHAIN, "gone", id="expired-offset"),
    pytest.param(log("n2", ("n1", None, 5), ("n2", "n1", 5)), "s4", id="raw-table-recreated"),
    pytest.param(BRANCHED, "b3", id="offset-on-another-branch"),
    pytest.param(log("s4", ("s4", "s3", 40)), "s1", id="path-cut-by-expiry-before-the-offset"),
])
def test_an_offset_off_the_current_path_is_expired(snapshot_log, offset):
    with pytest.raises(ExpiredOffset, match=f"offset snapshot {offset} "):
        pending_snapshots(snapshot_log, offset)

    assert pending_or_expired(snapshot_log, offset) == {"expired": True, "pending": []}


def test_a_known_offset_is_not_expired_for_the_macro():
    assert pending_or_expired(CHAIN, "s3") == {"expired": False, "pending": [{"snapshot_id": "s4", "operation": "append", "added_records": 40}]}


def pending(*sizes):
    return [{"snapshot_id": f"s{number}", "added_records": size} for number, size in enumerate(sizes, start=1)]


@pytest.mark.parametrize("snapshots, max_events, offset, expected", [
    pytest.param([], 100, "s0", [], id="nothing-pending-no-chunk"),
    pytest.param(pending(10, 20, 30), 100, None, [(None, "s3", 60, 1)], id="small-snapshots-in-one-chunk-from-the-start"),
    pytest.param(pending(40, 40, 40, 40), 100, "s0",
                 [("s0", "s2", 80, 1), ("s2", "s4", 80, 1)], id="grouped-under-max-events"),
    pytest.param(pending(60, 40, 1), 100, "s0", [("s0", "s2", 100, 1), ("s2", "s3", 1, 1)], id="boundary-exactly-at-max-events"),
    pytest.param(pending(60, 41), 100, "s0", [("s0", "s1", 60, 1), ("s1", "s2", 41, 1)], id="one-over-max-events-splits"),
    pytest.param(pending(250), 100, "s0", [("s0", "s1", 250, 3)], id="one-large-snapshot-in-buckets"),
    pytest.param(pending(10, 300, 10), 100, "s0",
                 [("s0", "s1", 10, 1), ("s1", "s2", 300, 3), ("s2", "s3", 10, 1)], id="large-snapshot-alone-between-small"),
    pytest.param(pending(200), 100, "s0", [("s0", "s1", 200, 2)], id="buckets-exact-multiple"),
    pytest.param(pending(0, 0), 100, "s0", [("s0", "s2", 0, 1)], id="empty-snapshots-still-move-the-offset"),
])
def test_chunks_of(snapshots, max_events, offset, expected):
    chunks = chunks_of(snapshots, max_events, offset)

    assert [(chunk["after"], chunk["through"], chunk["events"], chunk["buckets"]) for chunk in chunks] == expected
    assert all(list(chunk) == ["after", "through", "events", "buckets", "range_events", "quiet"] for chunk in chunks)
    assert not any(chunk["quiet"] for chunk in chunks), "no snapshot is known to be quiet"
    assert all(chunk["range_events"] == chunk["events"] for chunk in chunks)


def test_plan_chunks_walks_then_chunks():
    assert plan_chunks(BRANCHED, "s1", 50) == [
        {"after": "s1", "through": "s3", "events": 50, "buckets": 1, "range_events": 50, "quiet": False},
        {"after": "s3", "through": "s4", "events": 40, "buckets": 1, "range_events": 40, "quiet": False},
    ]
    with pytest.raises(ExpiredOffset):
        plan_chunks(BRANCHED, "b3", 50)


def test_agate_rows_of_the_metadata_queries_are_read_as_dicts():
    import agate

    table = agate.Table(
        [("s1", None, "append", Decimal(10)), ("s2", "s1", "append", Decimal(20))],
        ["snapshot_id", "parent_id", "operation", "added_records"],
        [agate.Text(), agate.Text(), agate.Text(), agate.Number()],
    )

    assert pending_snapshots({"current": "s2", "snapshots": table.rows}, "s1") == [{"snapshot_id": "s2", "operation": "append", "added_records": 20}]


def test_own_events_are_counted_only_when_all_tables_overflow_a_chunk():
    assert not needs_own_events(pending(40, 60), 100)
    assert needs_own_events(pending(40, 61), 100)
    assert not needs_own_events([], 100)


SHARED = [
    {"snapshot_id": "s1", "operation": "append", "added_records": 100},
    {"snapshot_id": "s2", "operation": "append", "added_records": 100},
    {"snapshot_id": "s3", "operation": "replace", "added_records": 500},
    {"snapshot_id": "s4", "operation": "append", "added_records": 100},
    {"snapshot_id": "s5", "operation": "append", "added_records": 100},
]
BY_TABLE = {
    "s1": {"shop.orders": 10, "shop.lines": 90},
    "s2": {"shop.lines": 100},
    "s3": {"shop.orders": 250, "shop.lines": 250},
    "s4": {"shop.lines": 95, "*": 5},
}


def test_own_events_count_the_mirrors_table_in_append_snapshots_it_can_tell():
    counted = own_events(SHARED, BY_TABLE, "shop.orders")

    # s2 holds none of the table's events, s3 is a rewrite (counted whole), s4's unknown file counts,
    # s5 was not read (counted whole).
    assert [snapshot["added_records"] for snapshot in counted] == [10, 0, 500, 5, 100]
    assert [snapshot["added_records"] for snapshot in SHARED] == [100, 100, 500, 100, 100], "pending is not changed"


def test_snapshots_without_the_mirrors_events_join_a_chunk_instead_of_making_their_own():
    orders = [{"snapshot_id": f"s{n}", "operation": "append", "added_records": 50} for n in range(1, 11)]
    by_table = {f"s{n}": ({"shop.orders": 50} if n in (3, 8) else {"shop.lines": 50}) for n in range(1, 11)}

    assert len(chunks_of(orders, 60, "s0")) == 10
    own_chunks = chunks_of(own_events(orders, by_table, "shop.orders"), 60, "s0")

    assert [(chunk["after"], chunk["through"], chunk["events"], chunk["range_events"]) for chunk in own_chunks] == [
        ("s0", "s7", 50, 350),
        ("s7", "s10", 50, 150),
    ]


def test_quiet_snapshots_are_appends_counted_whole_without_the_mirrors_table():
    pending = SHARED + [
        {"snapshot_id": "s6", "operation": "append", "added_records": 0},
        {"snapshot_id": "s7", "operation": "append", "added_records": 100},
        {"snapshot_id": "s8", "operation": "append", "added_records": "100"},
        {"snapshot_id": "s9", "operation": "overwrite", "added_records": 0},
    ]
    by_table = {**BY_TABLE, "s7": {"shop.lines": 60, "shop.items": 30}, "s8": {"shop.lines": 60, "shop.items": 40}}

    # s2: only another table's events, all counted. s6: added nothing. s8: every record counted.
    # Not s1 (the table's events), s3 (a rewrite), s4 (a file of no table), s5 (not read), s7 (10
    # records uncounted: they could be the table's), s9 (not an append).
    assert quiet_snapshots(pending, by_table, "shop.orders") == {"s2", "s6", "s8"}
    assert quiet_snapshots(pending, by_table, "shop.lines") == {"s6"}
    assert quiet_snapshots(pending, {}, "shop.orders") == {"s6"}


def test_table_names_are_matched_exactly_as_the_batchs_filter_does():
    pending = [{"snapshot_id": "s1", "operation": "append", "added_records": 5}]

    assert quiet_snapshots(pending, {"s1": {"Shop.Orders": 5}}, "shop.orders") == {"s1"}
    assert quiet_snapshots(pending, {"s1": {"shop.orders": 5}}, "shop.orders") == set()


@pytest.mark.parametrize("quiet, max_events, expected", [
    pytest.param({"s1", "s2", "s3"}, 120, [("s0", "s3", True)], id="all-quiet-one-chunk"),
    pytest.param({"s1", "s3"}, 120, [("s0", "s3", False)], id="one-snapshot-with-events-makes-the-chunk-not-quiet"),
    pytest.param({"s1"}, 50, [("s0", "s1", True), ("s1", "s2", False), ("s2", "s3", False)], id="each-chunk-on-its-own"),
    pytest.param({"s3"}, 50, [("s0", "s1", False), ("s1", "s2", False), ("s2", "s3", True)], id="the-last-chunk-quiet"),
    pytest.param(set(), 120, [("s0", "s3", False)], id="none-quiet"),
])
def test_a_chunk_is_quiet_when_every_snapshot_of_it_is(quiet, max_events, expected):
    chunks = chunks_of(pending(40, 40, 40), max_events, "s0", frozenset(quiet))

    assert [(chunk["after"], chunk["through"], chunk["quiet"]) for chunk in chunks] == expected


def test_quiet_through_is_the_newest_snapshot_only_when_every_pending_one_is_quiet():
    pending = [{"snapshot_id": f"s{n}", "operation": "append", "added_records": 10} for n in (1, 2, 3)]
    others = {"s1": {"shop.lines": 10}, "s2": {"shop.lines": 10}, "s3": {"shop.items": 10}}

    assert quiet_through(pending, others, "shop.orders") == "s3"
    assert quiet_through(pending, {**others, "s2": {"shop.orders": 1, "shop.lines": 9}}, "shop.orders") is None
    assert quiet_through(pending, {"s1": others["s1"], "s3": others["s3"]}, "shop.orders") is None, "s2 not read"
    assert quiet_through([], others, "shop.orders") is None
