"""current_views.py: when the view materialization may leave a view as it stands."""

from __future__ import annotations

import pytest

from dbt.adapters.cdc_spark.current_views import ViewDefinition, may_keep_view, same_view

STORED = ViewDefinition(query="select id from s.t", catalog="lake", namespace=("s",), columns=(("id", "int"),))


def test_a_view_is_the_same_when_its_query_differs_only_by_the_whitespace_around_it():
    assert same_view(STORED, ViewDefinition("\n  select id from s.t\n", "lake", ("s",), (("id", "int"),)))


@pytest.mark.parametrize("wanted", [
    ViewDefinition("select id from s.t where id > 1", "lake", ("s",), (("id", "int"),)),
    ViewDefinition("select id from s.t", "other", ("s",), (("id", "int"),)),
    ViewDefinition("select id from s.t", "lake", ("x",), (("id", "int"),)),
    ViewDefinition("select id from s.t", "lake", ("s",), (("id", "bigint"),)),
    ViewDefinition("select id from s.t", "lake", ("s",), (("ID", "int"),)),
])
def test_a_view_differs_by_its_query_its_catalog_its_namespace_or_its_columns(wanted):
    assert not same_view(STORED, wanted)


def test_a_view_may_be_kept_only_with_no_hooks_grants_docs_contract_or_full_refresh():
    plain = {"hooks": 0, "grants": {}, "persist_docs": {}, "contract": False, "full_refresh": False}
    assert may_keep_view(plain)
    assert may_keep_view({**plain, "persist_docs": {"relation": False, "columns": False}})
    for change in ({"hooks": 1}, {"grants": {"select": ["analyst"]}}, {"persist_docs": {"relation": True}},
                   {"persist_docs": {"columns": True}}, {"contract": True}, {"full_refresh": True}):
        assert not may_keep_view({**plain, **change}), change
