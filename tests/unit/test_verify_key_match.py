"""cdc-verify's check of a mirror's key against its source table's primary key now (python_jobs/verify/key_match.py)."""

from __future__ import annotations

import pytest

from python_jobs.verify.key_match import key_changed


@pytest.mark.parametrize("mirror_key, source_key", [
    (["id"], ["id"]),
    (["order_id", "line_no"], ["line_no", "order_id"]),  # the model may list the columns in any order
    (["ID"], ["id"]),
])
def test_a_mirror_keyed_on_the_source_key_is_compared(mirror_key, source_key):
    assert key_changed("shop.t", "mirrors.t", mirror_key, source_key) is None


@pytest.mark.parametrize("mirror_key, source_key, says", [
    (["id"], ["id", "region"], "shop.t is keyed on (id, region) at the source, not on (id) as mirror mirrors.t is"),
    (["id"], ["code"], "shop.t is keyed on (code) at the source, not on (id) as mirror mirrors.t is"),
    (["id", "region"], ["id"], "shop.t is keyed on (id) at the source, not on (id, region)"),
])
def test_a_mirror_keyed_otherwise_names_both_keys_and_what_to_change(mirror_key, source_key, says):
    error = key_changed("shop.t", "mirrors.t", mirror_key, source_key)
    assert error is not None and says in str(error)
    key = list(source_key)
    assert f"Set shop.t's key to {key} under tables: in the landing config" in str(error)
    assert f"unique_key={key if len(key) > 1 else repr(key[0])} in the model" in str(error)
    assert "--resnapshot" in str(error)
