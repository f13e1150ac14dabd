"""When a chunk records unsent TOAST columns and when it looks for older events that fill them (unsent_columns.py)."""

from __future__ import annotations

import pytest

from python_jobs.apply import unsent_columns

OLD, MID, NEW = "00000000000000000010.0", "00000000000000000020.0", "00000000000000000030.0"


@pytest.mark.parametrize("placeholder_events, records", [(0, False), (None, False), ("0", False), (1, True), ("12", True)])
def test_only_a_chunk_with_placeholders_records(placeholder_events, records):
    assert unsent_columns.records(placeholder_events) is records


@pytest.mark.parametrize("oldest, stored, may_fill", [
    pytest.param(NEW, [MID, OLD], False, id="every-event-newer-than-stored"),
    pytest.param(OLD, [MID, None], True, id="an-event-older-than-the-mirror"),
    pytest.param(MID, [None, MID], True, id="as-old-as-a-tombstone"),
    pytest.param(OLD, [None, None], False, id="nothing-stored"),
    pytest.param("", [MID], False, id="no-event-of-the-table"),
    pytest.param(None, [MID], False, id="oldest-unknown-means-none"),
])
def test_only_an_event_at_or_below_the_newest_stored_seq_may_fill(oldest, stored, may_fill):
    assert unsent_columns.may_fill(oldest, stored) is may_fill


def test_the_rows_read_are_kept_in_the_driver_up_to_a_one_commit_batch():
    assert unsent_columns.rows_in_driver(unsent_columns.ONE_COMMIT_MAX_EVENTS)
    assert not unsent_columns.rows_in_driver(unsent_columns.ONE_COMMIT_MAX_EVENTS + 1)
