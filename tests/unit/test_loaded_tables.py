"""Which kept Iceberg table a statement makes the adapter forget (loaded_tables.forget_dropped)."""

from __future__ import annotations

import pytest

from dbt.adapters.cdc_spark import loaded_tables


@pytest.fixture()
def kept(monkeypatch):
    tables = {("app-1", "mirror_1.docs"): "docs", ("app-1", "mirror_1.docs__cdc_tombstones"): "tombstones",
              ("app-2", "mirror_1.docs__cdc_tombstones"): "tombstones of another session"}
    monkeypatch.setattr(loaded_tables, "_loaded", tables)
    return tables


@pytest.mark.parametrize("sql, left", [
    pytest.param("drop table if exists mirror_1.docs__cdc_tombstones", ["mirror_1.docs"], id="drop-if-exists"),
    pytest.param('/* {"app": "dbt"} */\n  DROP TABLE `mirror_1`.`docs__cdc_tombstones`', ["mirror_1.docs"], id="comment-quotes-case"),
    pytest.param("create or replace table mirror_1.docs using iceberg as select 1", ["mirror_1.docs__cdc_tombstones"] * 2,
                 id="replaced"),
    pytest.param("drop table if exists mirror_1.docs__cdc_changes", ["mirror_1.docs", "mirror_1.docs__cdc_tombstones",
                                                                     "mirror_1.docs__cdc_tombstones"], id="another-table"),
    pytest.param("select * from mirror_1.docs", ["mirror_1.docs", "mirror_1.docs__cdc_tombstones",
                                                 "mirror_1.docs__cdc_tombstones"], id="not-a-drop"),
    pytest.param("drop view if exists mirror_1.docs", ["mirror_1.docs", "mirror_1.docs__cdc_tombstones",
                                                       "mirror_1.docs__cdc_tombstones"], id="a-view"),
])
def test_a_dropped_or_replaced_table_is_forgotten_in_every_session(kept, sql, left):
    loaded_tables.forget_dropped(sql)

    assert sorted(table for _, table in kept) == sorted(left)
