"""key_range.py: a bucket's key range for the reads of stored keys, or none."""

from __future__ import annotations

import pytest

from python_jobs.apply.key_range import KEY_RANGE_MAX_EVENTS, KeyRangeError, key_range_dict, key_range_of


def test_a_bucket_gives_its_hex_bounds():
    assert key_range_of({"min_key_hex": "0a1F", "max_key_hex": "ff", "events": 10}, "m") == {"min_hex": "0a1F", "max_hex": "ff"}


@pytest.mark.parametrize("plan", [
    {"min_key_hex": "", "max_key_hex": "", "events": 0},  # an empty bucket
    {"min_key_hex": None, "max_key_hex": None, "events": None},  # NULLs, as an engine hands them over
    {"min_key_hex": "None", "max_key_hex": "None", "events": "0"},  # as Jinja renders them
    {"min_key_hex": "01", "max_key_hex": "02", "events": KEY_RANGE_MAX_EVENTS + 1},  # too many events to pay off
])
def test_no_range_where_it_cannot_skip_or_would_not_pay(plan):
    assert key_range_of(plan, "m") is None


def test_the_limit_itself_keeps_the_range():
    assert key_range_of({"min_key_hex": "01", "max_key_hex": "02", "events": str(KEY_RANGE_MAX_EVENTS)}, "m") is not None


@pytest.mark.parametrize("bound", ["0x1f", "12') or ('1", "zz"])
def test_a_bound_that_is_not_hex_is_refused_with_the_model(bound):
    """The bounds become SQL literals: nothing but hex digits."""
    with pytest.raises(KeyRangeError, match=r"cdc_merge model 'orders': the engine's hex\(\) gave"):
        key_range_of({"min_key_hex": "00", "max_key_hex": bound, "events": 3}, "orders")
    assert key_range_dict({"min_key_hex": bound, "max_key_hex": "00", "events": 3}, "orders")["error"].startswith(
        "cdc_merge model 'orders'")
    assert key_range_dict({"min_key_hex": "00", "max_key_hex": "01", "events": 3}, "orders") == {
        "range": {"min_hex": "00", "max_hex": "01"}, "error": None}
