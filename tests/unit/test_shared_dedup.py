"""When a mirror reads its range's newest events deduplicated once for all mirrors (shared_dedup.py)."""

import pytest

from python_jobs.apply import shared_dedup

PLAN = {"events": 40, "placeholder_events": 0}


@pytest.mark.parametrize(
    ("plan", "buckets", "whole_range", "expected"),
    [
        (PLAN, 1, True, True),
        (None, 1, True, False),  # a plan not known: the range is not kept
        (PLAN, 2, True, False),  # key buckets: each bucket dedups its own keys
        (PLAN, 1, False, False),  # a group's deferred transactions taken out: the mirror's own view
        ({"events": 40, "placeholder_events": 3}, 1, True, True),  # TOAST placeholders: if the driver fills them (below)
    ],
)
def test_the_shared_dedup_stands_in_only_where_the_mirror_needs_no_dedup_of_its_own(plan, buckets, whole_range, expected):
    assert shared_dedup.applies(plan, buckets, whole_range) is expected


@pytest.mark.parametrize(("placeholder_events", "expected"), [(0, False), (3, True), ("3", True)])
def test_placeholders_need_the_dedup_that_fills_them_from_older_events(placeholder_events, expected):
    assert shared_dedup.needs_placeholder_fold({"events": 40, "placeholder_events": placeholder_events}) is expected


@pytest.mark.parametrize(
    ("oldest_seq", "newest_stored", "expected"),
    [
        ("0005", None, True),  # the mirror holds nothing yet
        ("0005", "0004", True),
        ("0005", "0005", False),  # an event as old as a stored row: the rounds decide
        ("0003", "0004", False),  # a late event
        ("", "0004", False),  # events without a seq
    ],
)
def test_the_fill_stands_in_only_for_events_all_newer_than_the_mirror(oldest_seq, newest_stored, expected):
    plan = {"events": 4, "placeholder_events": 1, "oldest_seq": oldest_seq}
    assert shared_dedup.fold_is_newer_than_stored(plan, newest_stored) is expected
