"""Flink CDC's debezium-json (no source.connector, no position) after a job started again with a new
snapshot once changes were missed (a purged binlog, lost state): the snapshot rows are the table as
it is, so they win over the older streamed rows of their keys, in the JVM fast path and in Python."""

from __future__ import annotations

import json

import pytest

from python_jobs.landing import small_batch

COLUMNS = "{{ cdc_merge.cdc_column('id', 'int') }}, {{ cdc_merge.cdc_column('name', 'string') }}, " \
          "{{ cdc_merge.cdc_metadata_columns() }}"


def flink(op: str, row: dict) -> str:
    """A line as Flink's debezium-json writes it: source without connector or position."""
    return json.dumps({"before": row if op == "d" else None, "after": None if op == "d" else row,
                       "source": {"db": "inventory", "table": "products"}, "op": op})


@pytest.mark.parametrize("jar", ["jvm", "python"])
def test_a_snapshot_taken_again_gives_the_table_as_it_is(dbt_project, monkeypatch, jar):
    if jar == "python":
        monkeypatch.setenv("CDC_MERGE_PARSERS_JAR", "")
    else:
        # A batch this small is parsed in the driver, in Python: the JVM parses it only when told to.
        monkeypatch.setattr(small_batch, "MAX_BATCH_BYTES_PARSED_IN_DRIVER", -1)
    project = dbt_project
    (project.inbox / "part-0.json").write_text("\n".join([
        flink("r", {"id": 1, "name": "scooter"}), flink("r", {"id": 2, "name": "car battery"}),
        flink("u", {"id": 1, "name": "red scooter"}),
    ]) + "\n")
    project.land({"inventory.products": ["id"]})
    project.write_model("products", "unique_key='id', source_table='inventory.products'", COLUMNS)
    project.dbt("run", "--select", "products")

    # Missed: id 1 renamed again, id 3 inserted. The job starts again from a new snapshot.
    (project.inbox / "part-1.json").write_text("\n".join([
        flink("r", {"id": 1, "name": "blue scooter"}), flink("r", {"id": 2, "name": "car battery"}),
        flink("r", {"id": 3, "name": "hammer"}), flink("u", {"id": 2, "name": "12V car battery"}),
    ]) + "\n")
    project.land({"inventory.products": ["id"]})
    project.dbt("run", "--select", "products")

    rows = project.query(f"select id, name from {project.schema}.products order by id")
    assert [(row["id"], row["name"]) for row in rows] == [(1, "blue scooter"), (2, "12V car battery"), (3, "hammer")]
