"""Which captured tables are unlogged, and which to read again for changes an unlogged time kept from
the log (python_jobs/capture/postgres_persistence.py)."""

from python_jobs.capture.postgres_events import Transaction
from python_jobs.capture.postgres_persistence import as_kept, reads, resumed, rewritten, truncates, unlogged

KNOWN = {"shop.a": {"shop.a": ["p", 100]}, "shop.b": {"shop.b": ["u", 200]},
         "shop.parted": {"shop.parted_1": ["p", 300], "shop.parted_2": ["p", 310]}}


def test_a_table_unlogged_now_is_named_with_its_unlogged_partitions():
    now = {"shop.a": {"shop.a": ("u", 101, 7)}, "shop.parted": {"shop.parted_1": ("p", 300, 1), "shop.parted_2": ("u", 311, 8)}}
    assert unlogged(now) == {"shop.a": ["shop.a"], "shop.parted": ["shop.parted_2"]}


def test_a_table_logged_again_or_rewritten_while_logged_is_read_again_and_one_still_unlogged_is_not():
    now = {"shop.a": {"shop.a": ("p", 101, 7)}, "shop.b": {"shop.b": ("p", 201, 8)},
           "shop.parted": {"shop.parted_1": ("p", 300, 1), "shop.parted_2": ("u", 311, 9)}}
    found = reads(KNOWN, now, {})
    assert sorted(found) == ["shop.a", "shop.b"]
    assert "rewritten" in found["shop.a"] and "logged again" in found["shop.b"]
    assert rewritten(KNOWN, now) == ["shop.a", "shop.b"]


def test_nothing_is_read_for_the_same_relfilenode_a_new_table_or_a_new_partition():
    now = {"shop.a": {"shop.a": ("p", 100, 7)}, "shop.new": {"shop.new": ("p", 5, 1)},
           "shop.parted": {"shop.parted_1": ("p", 300, 1), "shop.parted_2": ("p", 310, 1), "shop.parted_3": ("p", 9, 1)}}
    assert reads(KNOWN, now, {}) == {} and rewritten(KNOWN, now) == []


def test_a_truncate_in_the_log_explains_the_new_relfilenode_only_if_its_transaction_wrote_the_catalog_last():
    now = {"shop.a": {"shop.a": ("p", 101, 7)}}
    assert reads(KNOWN, now, {"shop.a": {7}}) == {}
    # A rewrite after the TRUNCATE (SET UNLOGGED, changes, SET LOGGED) wrote the catalog row since.
    assert list(reads(KNOWN, now, {"shop.a": {6}})) == ["shop.a"]
    # Logged again: the unlogged time's changes may precede the truncate's transaction; read again.
    assert list(reads(KNOWN, {"shop.b": {"shop.b": ("p", 201, 7)}}, {"shop.b": {7}})) == ["shop.b"]


def test_truncates_are_found_by_their_records_with_their_transactions():
    truncate = b'{"action":"T","xid":7,"schema":"shop","table":"a"}'
    insert = b'{"action":"I","xid":8,"schema":"shop","table":"b","columns":[]}'
    transactions = [Transaction(xid=7, records=[truncate]), Transaction(xid=8, records=[insert])]
    assert truncates(transactions) == {"shop.a": {7}}


def test_the_state_wins_over_the_current_and_is_kept_without_the_catalog_xid():
    current = as_kept({"shop.a": {"shop.a": ("p", 101, 7)}, "shop.c": {"shop.c": ("p", 5, 1)}})
    assert current == {"shop.a": {"shop.a": ["p", 101]}, "shop.c": {"shop.c": ["p", 5]}}
    assert resumed({"persistence": {"shop.a": {"shop.a": ["u", 100]}}}, current) == {
        "shop.a": {"shop.a": ["u", 100]}, "shop.c": {"shop.c": ["p", 5]}}
    assert resumed({}, current) == current
