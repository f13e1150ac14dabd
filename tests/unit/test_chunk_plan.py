"""The chunk plan of the cdc_merge materialization (python_jobs/apply/chunk_plan.py): which raw
snapshots a mirror has not applied and their chunks, from snapshot logs written out as tables."""

from __future__ import annotations

from decimal import Decimal

import pytest

from python_jobs.apply.chunk_plan import ExpiredOffset, chunks_of, pending_or_expired, pending_snapshots, plan_chunks


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
    assert pending_or_expired(CHAIN, "s3") == {"expired": False, "pending": [{"snapshot_id": "s4", "added_records": 40}]}


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
    assert all(list(chunk) == ["after", "through", "events", "buckets"] for chunk in chunks)


def test_plan_chunks_walks_then_chunks():
    assert plan_chunks(BRANCHED, "s1", 50) == [
        {"after": "s1", "through": "s3", "events": 50, "buckets": 1},
        {"after": "s3", "through": "s4", "events": 40, "buckets": 1},
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

    assert pending_snapshots({"current": "s2", "snapshots": table.rows}, "s1") == [{"snapshot_id": "s2", "added_records": 20}]
