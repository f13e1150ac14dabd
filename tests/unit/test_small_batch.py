"""Which landing batches are parsed whole in the driver (python_jobs/landing/small_batch.py)."""

from __future__ import annotations

import pytest

from python_jobs.landing.small_batch import JVM_COMMIT_SUFFIX, MAX_BATCH_BYTES_PARSED_IN_DRIVER, local_bytes, parse_in_driver

TAG = "query/7"


def committed_tags(*tags):
    asked = []

    def committed(tag):
        asked.append(tag)
        return tag in tags

    return committed, asked


@pytest.mark.parametrize(
    "batch_bytes, may_be_retry, tags, expected",
    [
        (1_000, False, (), True),
        (MAX_BATCH_BYTES_PARSED_IN_DRIVER, False, (), True),
        (MAX_BATCH_BYTES_PARSED_IN_DRIVER + 1, False, (), False),
        # A file gone or not on this machine: the JVM path, which notes what changed.
        (None, False, (), False),
        # A retry keeps the way of its first try, whatever the size says now.
        (1_000, True, (TAG + JVM_COMMIT_SUFFIX,), False),
        (1_000, True, (TAG + JVM_COMMIT_SUFFIX, TAG), False),
        (MAX_BATCH_BYTES_PARSED_IN_DRIVER + 1, True, (TAG,), True),
        (None, True, (TAG,), True),
        # A retry whose first try committed nothing: by size.
        (1_000, True, (), True),
        (MAX_BATCH_BYTES_PARSED_IN_DRIVER + 1, True, (), False),
        # Another batch's commit is not this one's.
        (MAX_BATCH_BYTES_PARSED_IN_DRIVER + 1, True, ("query/70",), False),
    ],
)
def test_parse_in_driver(batch_bytes, may_be_retry, tags, expected):
    committed, _ = committed_tags(*tags)
    assert parse_in_driver(batch_bytes, TAG, may_be_retry, committed) is expected


def test_a_batch_no_run_tried_asks_no_commit_of_the_table():
    committed, asked = committed_tags()
    parse_in_driver(10, TAG, False, committed)
    assert asked == []


def test_local_bytes(tmp_path):
    first, second = tmp_path / "a.json", tmp_path / "b c.json"
    first.write_bytes(b"x" * 10)
    second.write_bytes(b"y" * 5)
    assert local_bytes([str(first), "file:" + str(second).replace(" ", "%20")]) == 15
    assert local_bytes(["file://" + str(first)]) == 10
    assert local_bytes([str(first), str(tmp_path / "gone.json")]) is None
    assert local_bytes(["s3a://bucket/a.json"]) is None
    assert local_bytes([]) is None
