"""Canal flat messages (canal-json) after a full load taken again once changes were missed (a purged
binlog, lost state): its INIT rows are the table as it is, so they win over the older streamed rows of
their keys, and later streamed changes win over them."""

from __future__ import annotations

import json

COLUMNS = "{{ cdc_merge.cdc_column('id', 'int') }}, {{ cdc_merge.cdc_column('name', 'string') }}, " \
          "{{ cdc_merge.cdc_metadata_columns() }}"


def canal(kind: str, rows: list[dict], es: int, old: list[dict] | None = None) -> str:
    """A flat message as canal-data-with-init.txt writes them (values as strings, no position)."""
    return json.dumps({"data": rows, "database": "inventory", "es": es, "id": 3, "isDdl": False,
                       "mysqlType": {"id": "INTEGER", "name": "VARCHAR(255)"}, "old": old, "pkNames": ["id"],
                       "sql": "", "sqlType": {"id": 4, "name": 12}, "table": "products", "ts": es + 400,
                       "type": kind})


def test_a_full_load_taken_again_gives_the_table_as_it_is(dbt_project):
    project = dbt_project
    (project.inbox / "part-0.json").write_text("\n".join([
        canal("INIT", [{"id": "1", "name": "scooter"}, {"id": "2", "name": "car battery"}], 1589373515000),
        canal("UPDATE", [{"id": "1", "name": "red scooter"}], 1589373546000, [{"name": "scooter"}]),
    ]) + "\n")
    project.land({})
    project.write_model("products", "unique_key='id', source_table='inventory.products'", COLUMNS)
    project.dbt("run", "--select", "products")
    rows = project.query(f"select id, name from {project.schema}.products order by id")
    assert [(row["id"], row["name"]) for row in rows] == [(1, "red scooter"), (2, "car battery")]

    # Missed: id 1 renamed again, id 3 inserted. The job starts again from a new full load, then streams.
    (project.inbox / "part-1.json").write_text("\n".join([
        canal("INIT", [{"id": "1", "name": "blue scooter"}, {"id": "2", "name": "car battery"},
                       {"id": "3", "name": "hammer"}], 0),
        canal("UPDATE", [{"id": "2", "name": "12V car battery"}], 1589373600000, [{"name": "car battery"}]),
    ]) + "\n")
    project.land({})
    project.dbt("run", "--select", "products")

    rows = project.query(f"select id, name from {project.schema}.products order by id")
    assert [(row["id"], row["name"]) for row in rows] == [(1, "blue scooter"), (2, "12V car battery"), (3, "hammer")]
