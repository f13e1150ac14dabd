"""Which batches go to their mirror in one commit on main (python_jobs/apply/one_commit.py)."""

from __future__ import annotations

import pytest

from python_jobs.apply.one_commit import ONE_COMMIT_MAX_EVENTS, applies


def plan(events=30, placeholder_events=0):
    return {"events": events, "placeholder_events": placeholder_events}


@pytest.mark.parametrize(
    "by_position, chunk_plan, buckets, expected",
    [
        (True, plan(), 1, True),
        (True, plan(events=ONE_COMMIT_MAX_EVENTS), 1, True),
        # Its new rows would be too many for the driver to write.
        (True, plan(events=ONE_COMMIT_MAX_EVENTS + 1), 1, False),
        # Partial updates take the stored values of the rows the commit deletes (write.sql).
        (True, plan(placeholder_events=1), 1, True),
        # No deletes by position (soft deletes, Databend, a Thrift server, a partitioned mirror).
        (False, plan(), 1, False),
        # The range was not planned in one pass (a large range, not kept).
        (True, None, 1, False),
        (True, plan(), 2, False),
        # Counts as the agate rows of a query give them.
        (True, {"events": "12", "placeholder_events": "0"}, 1, True),
    ],
)
def test_one_commit_only_for_small_batches_deleted_by_position(by_position, chunk_plan, buckets, expected):
    assert applies(by_position, chunk_plan, buckets) is expected
