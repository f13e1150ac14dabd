"""truncate_plan.py: whether a chunk's truncate applies to its mirror, and what it writes."""

from __future__ import annotations

import pytest

from python_jobs.apply.truncate_plan import TruncateError, TruncateMark, truncate_marks, truncate_marks_dict, truncate_plan, truncate_plan_dict
from python_jobs.formats.records import format_seq

OLD, TRUNCATE, NEW = format_seq(5, 0, 0, 1), format_seq(9, 0, 0, 1), format_seq(12, 0, 0, 1)
TS = "2024-03-01 10:00:00"


@pytest.mark.parametrize("found, watermark", [
    ({"truncate_seq": "", "truncate_source_ts": ""}, None),  # no truncate in the chunk
    ({"truncate_seq": None, "truncate_source_ts": None}, OLD),
    ({"truncate_seq": "None", "truncate_source_ts": "None"}, None),  # as Jinja hands a NULL over
    ({"truncate_seq": TRUNCATE, "truncate_source_ts": TS}, TRUNCATE),  # replayed: the watermark has it
    ({"truncate_seq": TRUNCATE, "truncate_source_ts": TS}, NEW),  # older than the mirror's watermark
])
def test_no_truncate_newer_than_the_watermark_writes_nothing(found, watermark):
    assert truncate_plan(found, watermark, "hard", "m").seq is None


@pytest.mark.parametrize("watermark", [None, OLD])
def test_a_newer_truncate_removes_the_older_rows(watermark):
    plan = truncate_plan({"truncate_seq": TRUNCATE, "truncate_source_ts": TS}, watermark, "hard", "m")
    assert plan.seq == TRUNCATE and not plan.soft and not plan.after_events
    assert plan.older_rows == f"_cdc_seq < '{TRUNCATE}'"
    assert plan.source_ts_sql == f"timestamp'{TS}'"


def test_soft_deletes_mark_only_the_rows_not_yet_deleted():
    plan = truncate_plan({"truncate_seq": TRUNCATE, "truncate_source_ts": None}, None, "soft", "m")
    assert plan.soft and plan.older_rows == f"_cdc_seq < '{TRUNCATE}' and not _cdc_deleted"
    assert plan.after_events  # the chunk's older events are applied first, as in a chunk of their own
    assert plan.source_ts_sql == "cast(null as timestamp)"


def test_positions_compare_in_their_fixed_width_order():
    """format_seq's string order is the numeric order: 9 < 12 although '9' > '1'."""
    assert truncate_plan({"truncate_seq": NEW}, TRUNCATE, "hard", "m").seq == NEW


@pytest.mark.parametrize("seq", ["abc", "12' or '1'='1", "0001-02"])
def test_a_seq_that_is_not_a_position_is_refused_with_the_model(seq):
    with pytest.raises(TruncateError, match=r"cdc_merge model 'orders': a truncate's seq is .* not a position"):
        truncate_plan({"truncate_seq": seq}, None, "hard", "orders")
    assert truncate_plan_dict({"truncate_seq": seq}, None, "hard", "orders")["error"].startswith("cdc_merge model 'orders'")


def test_the_macros_dict_carries_the_plan_and_no_error():
    assert truncate_plan_dict({"truncate_seq": TRUNCATE}, None, "soft", "m") == {
        "seq": TRUNCATE, "source_ts_sql": "cast(null as timestamp)",
        "older_rows": f"_cdc_seq < '{TRUNCATE}' and not _cdc_deleted", "soft": True, "after_events": True, "error": None}


def test_each_soft_truncate_newer_than_the_watermark_marks_its_older_rows_oldest_first():
    found = [{"truncate_seq": NEW, "truncate_source_ts": None}, {"truncate_seq": OLD, "truncate_source_ts": TS},
             {"truncate_seq": TRUNCATE, "truncate_source_ts": TS}, {"truncate_seq": NEW, "truncate_source_ts": None}]
    assert truncate_marks(found, OLD, "m") == [
        TruncateMark(TRUNCATE, f"timestamp'{TS}'", f"_cdc_seq < '{TRUNCATE}' and not _cdc_deleted"),
        TruncateMark(NEW, "cast(null as timestamp)", f"_cdc_seq < '{NEW}' and not _cdc_deleted"),
    ]
    assert [mark.seq for mark in truncate_marks(found, None, "m")] == [OLD, TRUNCATE, NEW]
    assert truncate_marks(found, NEW, "m") == []


def test_a_marks_seq_that_is_not_a_position_is_refused_with_the_model():
    assert truncate_marks_dict([{"truncate_seq": "1' or '1'='1"}], None, "orders")["error"].startswith(
        "cdc_merge model 'orders': a truncate's seq")
    assert truncate_marks_dict([{"truncate_seq": TRUNCATE}], None, "m")["marks"][0]["seq"] == TRUNCATE
