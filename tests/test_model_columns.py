"""A mirror model's output columns kept between runs of a process (adapter/dbt/adapters/cdc_spark/
model_columns.py): a second run with new events describes no model; a changed model, or a new
schema of the raw table, is described again; and what the columns are kept by."""

from __future__ import annotations

import pytest

from dbt.adapters.cdc_spark import model_columns
from python_jobs.demo.generate import KEYS, write_wave
from test_idle_runs import applied_once, own_statements
from test_materialization import record_statements
from test_oracle import SHOP_MODELS, assert_mirrors_equal_replay


class RawTable:
    """What keep_key reads of an Iceberg table: its UUID and its current schema's id."""

    def __init__(self, uuid: str, schema_id: int):
        self._uuid, self._schema_id = uuid, schema_id

    def uuid(self):
        return self._uuid

    def schema(self):
        return self

    def schemaId(self):  # noqa: N802 - Iceberg's Java name
        return self._schema_id


def test_the_columns_are_kept_by_the_sql_and_the_raw_tables_identity():
    raw = RawTable("u1", 0)
    key = model_columns.keep_key("select 1", raw)
    assert key == model_columns.keep_key("select 1", RawTable("u1", 0))
    assert len({key, model_columns.keep_key("select 2", raw), model_columns.keep_key("select 1", RawTable("u2", 0)),
                model_columns.keep_key("select 1", RawTable("u1", 1))}) == 4
    # No Iceberg table loaded here (a Thrift server's session): described each time.
    assert model_columns.keep_key("select 1", None) is None
    model_columns.keep(None, [("id", "int")])
    assert model_columns.kept(None) is None

    model_columns.keep(key, [["id", "int"], ["Name", "string"]])
    assert model_columns.kept(key) == [("id", "int"), ("Name", "string")]


def test_the_least_recently_used_columns_go_first(monkeypatch):
    monkeypatch.setattr(model_columns, "MAX_KEPT", 2)
    monkeypatch.setattr(model_columns, "_kept", type(model_columns._kept)())
    keys = [model_columns.keep_key(f"select {number}", RawTable("u", 0)) for number in range(3)]
    model_columns.keep(keys[0], [("a", "int")])
    model_columns.keep(keys[1], [("b", "int")])
    assert model_columns.kept(keys[0]) == [("a", "int")]  # now the more recently used
    model_columns.keep(keys[2], [("c", "int")])
    assert model_columns.kept(keys[1]) is None and model_columns.kept(keys[0]) and model_columns.kept(keys[2])


@pytest.fixture
def shop(dbt_project):
    return applied_once(dbt_project, waves=3)


def test_a_run_after_the_first_describes_no_model_until_one_changes(shop, monkeypatch):
    project = shop

    def described(*select):
        with monkeypatch.context() as patch:
            statements = record_statements(patch)
            project.dbt("run", "--select", *select)
        return [sql for sql in own_statements(statements) if sql.startswith("describe query")]

    write_wave(project.waves[1], project.inbox)
    project.land(KEYS)
    assert described(*SHOP_MODELS) == []
    assert_mirrors_equal_replay(project, project.waves[0].delivered + project.waves[1].delivered, "hard")

    # A changed model is described again (a new column reaching the mirror so: test_idle_runs.py).
    path = project.project_dir / "models" / "mirrors" / "shop_orders.sql"
    path.write_text(path.read_text().replace("select * from final", "select final.* from final"))
    write_wave(project.waves[2], project.inbox)
    project.land(KEYS)
    (describe,) = described(*SHOP_MODELS)
    assert "shop_orders__cdc_batch" in describe and "select final.* from final" in describe
    assert_mirrors_equal_replay(project, [event for wave in project.waves for event in wave.delivered], "hard")


def test_a_new_schema_of_the_raw_table_describes_the_models_again(shop, monkeypatch):
    project = shop
    raw = f"{project.raw_schema}.raw_events"
    column = project.spark.table(raw).columns[0]
    # Any change of the raw table's schema, even a column's comment, makes a schema of its own.
    project.spark.sql(f"alter table {raw} alter column {column} comment 'what the batch view reads'")
    write_wave(project.waves[1], project.inbox)
    project.land(KEYS)
    with monkeypatch.context() as patch:
        statements = record_statements(patch)
        project.dbt("run", "--select", *SHOP_MODELS)
    described = [sql for sql in own_statements(statements) if sql.startswith("describe query")]
    assert len(described) == len(SHOP_MODELS), described
    assert_mirrors_equal_replay(project, project.waves[0].delivered + project.waves[1].delivered, "hard")
