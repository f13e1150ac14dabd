"""records.key_columns_for: a table the landing has no key for is refused with what to do, including
reading it again, for its lines quarantined meanwhile do not land by themselves."""

import pytest

from python_jobs.formats.records import RejectedRecord, key_columns_for


def test_configured_key_wins_then_the_announced_one():
    assert key_columns_for("shop.a", {"shop.a": ["id"]}, ["other"]) == ["id"]
    assert key_columns_for("shop.b", {}, ["k1", "k2"]) == ["k1", "k2"]


def test_a_table_without_a_key_is_refused_saying_to_configure_it_and_read_it_again():
    with pytest.raises(RejectedRecord) as refused:
        key_columns_for("shop.returns", {"shop.orders": ["id"]}, None, "pkNames")
    said = str(refused.value)
    assert "no key columns configured for table 'shop.returns' and the record has no 'pkNames'" in said
    assert "add it under 'tables:' in the landing config" in said
    assert "cdc-snapshot --state <its state file> --table shop.returns" in said
