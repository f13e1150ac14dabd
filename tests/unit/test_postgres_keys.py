"""Which tables' primary key or replica identity was made again since the written log (postgres_keys.py)."""

from __future__ import annotations

from python_jobs.capture.postgres_keys import rekeyed, resumed


def test_a_key_or_identity_made_again_is_found_and_a_table_new_to_the_state_is_not():
    known = resumed({"key_indexes": {"shop.a": "d:16390:", "shop.b": "f:16400:"}},
                    {"shop.a": "d:16500:", "shop.b": "f:16400:", "shop.c": "i:16600:16601"})
    assert known == {"shop.a": "d:16390:", "shop.b": "f:16400:", "shop.c": "i:16600:16601"}
    assert rekeyed(known, {"shop.a": "d:16500:", "shop.b": "n:16400:", "shop.c": "i:16600:16601", "shop.d": "d:1:"}) == [
        "shop.a", "shop.b"]
    assert resumed({}, {"shop.a": "d:1:"}) == {"shop.a": "d:1:"}
