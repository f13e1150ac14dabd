"""Which tables' primary key or replica identity was made again since the written log (postgres_keys.py), and a
primary key dropped (postgres_columns.identity_problem)."""

from __future__ import annotations

from python_jobs.capture.postgres_columns import identity_problem
from python_jobs.capture.postgres_keys import rekeyed, resumed


def test_a_key_or_identity_made_again_is_found_and_a_table_new_to_the_state_is_not():
    known = resumed({"key_indexes": {"shop.a": "d:16390:", "shop.b": "f:16400:"}},
                    {"shop.a": "d:16500:", "shop.b": "f:16400:", "shop.c": "i:16600:16601"})
    assert known == {"shop.a": "d:16390:", "shop.b": "f:16400:", "shop.c": "i:16600:16601"}
    assert rekeyed(known, {"shop.a": "d:16500:", "shop.b": "n:16400:", "shop.c": "i:16600:16601", "shop.d": "d:1:"}) == [
        "shop.a", "shop.b"]
    assert resumed({}, {"shop.a": "d:1:"}) == {"shop.a": "d:1:"}


def test_a_table_whose_primary_key_was_dropped_stops_the_capture_saying_what_to_change():
    for identity in ("d", "f"):  # FULL logs old rows, but two of them may now share the mirror's key
        problem = identity_problem("shop.t", "r", identity, True, False, None, None, True)
        assert problem is not None and problem.startswith("table shop.t has no primary key since an ALTER TABLE")
        assert "its key under tables: in the landing config" in problem and "--resnapshot" in problem
    assert identity_problem("shop.t", "r", "d", True, False, None, None, False) is None
    assert identity_problem("shop.t", "p", "d", True, False, None, None, True) is None  # its leaves are checked
