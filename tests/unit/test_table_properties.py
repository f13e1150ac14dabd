"""Which properties maintenance sets on a table made before its DDL set them (table_properties.py),
and that a table which has them gets no commit."""

from __future__ import annotations

import pytest

from dbt.adapters.cdc_spark import loaded_tables, table_properties

WANTED = {"write.metadata.delete-after-commit.enabled": "true", "write.metadata.previous-versions-max": "10"}


@pytest.mark.parametrize("current, missing", [
    pytest.param({"format-version": "2"}, WANTED, id="made-before"),
    pytest.param(WANTED, {}, id="has-both"),
    pytest.param({"write.metadata.previous-versions-max": "50"}, {"write.metadata.delete-after-commit.enabled": "true"},
                 id="owner's-own-log-size-kept"),
    pytest.param({"write.metadata.delete-after-commit.enabled": "false", "write.metadata.previous-versions-max": "10"}, {},
                 id="owner-turned-deletion-off"),
])
def test_only_properties_the_table_does_not_set_are_missing(current, missing):
    assert table_properties.missing_properties(current, WANTED) == missing


class FakeJavaMap(dict):
    def keySet(self):
        return list(self)


class FakeTable:
    def __init__(self, properties):
        self.props = FakeJavaMap(properties)
        self.commits = []

    def properties(self):
        return self.props

    def updateProperties(self):
        table, pending = self, {}

        class Update:
            def set(self, name, value):
                pending[name] = value
                return self

            def commit(self):
                table.commits.append(dict(pending))
                table.props.update(pending)

        return Update()


@pytest.mark.parametrize("properties, commits", [
    pytest.param({"format-version": "2"}, [WANTED], id="made-before: one commit"),
    pytest.param({"format-version": "2", **WANTED}, [], id="has-them: no commit"),
])
def test_the_driver_commits_only_what_is_missing(monkeypatch, properties, commits):
    table = FakeTable(properties)
    monkeypatch.setattr(loaded_tables, "refreshed_table", lambda spark, name: table)

    assert table_properties.set_missing(None, "mirror_1.docs", WANTED) == (commits[0] if commits else {})
    assert table.commits == commits
    assert table_properties.set_missing(None, "mirror_1.docs", WANTED) == {}
    assert table.commits == commits


def test_a_table_that_is_not_iceberg_is_left_to_sql(monkeypatch):
    monkeypatch.setattr(loaded_tables, "refreshed_table", lambda spark, name: None)

    assert table_properties.set_missing(None, "mirror_1.docs", WANTED) is None
