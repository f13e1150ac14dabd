"""The idle decision (python_jobs/apply/idle_decision.py), case by case."""

from __future__ import annotations

import pytest

from python_jobs.apply.idle_decision import full_path_at_offsets, full_path_before_offsets


@pytest.mark.parametrize("kind, full_refresh, change_source, reason", [
    ("table", False, "changes", None),
    (None, False, "changes", "the mirror does not exist yet"),
    ("view", False, "changes", "a view stands where the mirror goes"),
    ("table", True, "changes", "full refresh"),
    ("table", False, "stream", "change_source 'stream' reads a stream, whose contents only the run sees"),
])
def test_before_the_offsets_are_read(kind, full_refresh, change_source, reason):
    assert full_path_before_offsets(kind, full_refresh, change_source) == reason


@pytest.mark.parametrize("offset, current, stored, model, reason", [
    ("7", "7", "abc", "abc", None),
    (7, "7", "abc", "abc", None),  # one side read as a number, the other as text
    (None, "7", "abc", "abc", "no offset yet"),
    ("6", "7", "abc", "abc", "new raw snapshots after offset 6"),
    ("6", None, "abc", "abc", "new raw snapshots after offset 6"),
    ("7", "7", None, "abc", "model SQL changed since the mirror's columns were checked"),
    ("7", "7", "abd", "abc", "model SQL changed since the mirror's columns were checked"),
])
def test_at_the_offsets(offset, current, stored, model, reason):
    assert full_path_at_offsets(offset, current, stored, model) == reason
