"""The dbt commands a user types, on a cdc_merge project, on Spark + Iceberg and on Databend:
what each must produce with our models, or the clear error it must give."""

from __future__ import annotations

import json
import shutil

from conftest import FIXTURES

PRODUCTS = {"inventory.products": ["id"]}
FLINK_MYSQL = FIXTURES / "flink" / "debezium-data-schema-exclude.txt"
CONFIG = "unique_key='id', source_table='inventory.products'"
COLUMNS = "{{ cdc_merge.cdc_columns({'id': 'int', 'name': 'string'}) }}, {{ cdc_merge.cdc_metadata_columns() }}"


def mysql_line(op: str, pos: int, row: dict) -> str:
    """A Debezium MySQL event of inventory.products at binlog position pos, after the fixture's."""
    return json.dumps({
        "before": row if op == "d" else None,
        "after": None if op == "d" else row,
        "source": {"connector": "mysql", "db": "inventory", "table": "products", "file": "mysql-bin.000004",
                   "pos": pos, "row": 0, "snapshot": "false", "ts_ms": 1_767_225_600_000 + pos},
        "op": op,
    })


def shown_rows(result) -> list[dict]:
    """The rows dbt show printed, as dicts."""
    assert result.success, result.exception
    table = result.result.results[0].agate_table
    return [dict(zip(table.column_names, row.values())) for row in table]


def applied_project(project):
    """The Flink fixture landed and applied, then two more events landed and not applied yet."""
    project.write_model("products", CONFIG, COLUMNS)
    shutil.copy(FLINK_MYSQL, project.inbox / "part-1.json")
    project.land(PRODUCTS)
    project.dbt("run", "--select", "products")
    (project.inbox / "part-2.json").write_text("\n".join([
        mysql_line("u", 10, {"id": 101, "name": "e-scooter"}),
        mysql_line("d", 20, {"id": 102, "name": "car battery"}),
    ]) + "\n")
    project.land(PRODUCTS)
    return project


def test_show_shows_the_mirror_and_previews_what_the_next_run_would_write(conformance_project):
    project = conformance_project
    project.write_model("products", CONFIG, COLUMNS)
    shutil.copy(FLINK_MYSQL, project.inbox / "part-1.json")
    project.land(PRODUCTS)

    # Before the first run every event is pending: the newest per key of the whole log.
    first = shown_rows(project.dbt("show", "--select", "products", "--limit", "100"))
    assert sorted(row["id"] for row in first) == list(range(101, 112))
    assert [row["id"] for row in first if row["_cdc_action"] == "delete"] == [111]

    project.dbt("run", "--select", "products")
    (project.inbox / "part-2.json").write_text("\n".join([
        mysql_line("u", 10, {"id": 101, "name": "e-scooter"}),
        mysql_line("d", 20, {"id": 102, "name": "car battery"}),
    ]) + "\n")
    project.land(PRODUCTS)

    # Once the mirror exists, dbt show shows its rows, as of its last run.
    stored = shown_rows(project.dbt("show", "--select", "products", "--limit", "100"))
    assert sorted((row["id"], row["name"]) for row in stored) == [
        (row["id"], row["name"]) for row in project.query(f"select id, name from {project.schema}.products order by id")]
    assert {row["_cdc_action"] for row in stored} == {"read"} and 101 in [row["id"] for row in stored]
    pending = shown_rows(project.dbt("show", "--select", "products", "--limit", "100",
                                     "--vars", "{cdc_merge_preview: pending}"))
    assert sorted((row["id"], row["name"], row["_cdc_action"]) for row in pending) == [
        (101, "e-scooter", "update"),
        (102, "car battery", "delete"),
    ]
    whole_log = shown_rows(project.dbt("show", "--select", "products", "--limit", "100",
                                       "--vars", "{cdc_merge_preview: all}"))
    assert sorted(row["id"] for row in whole_log) == list(range(101, 112))
    # A preview writes nothing: the next run still applies both events.
    project.dbt("run", "--select", "products")
    rows = project.query(f"select id, name from {project.schema}.products order by id")
    assert (rows[0]["id"], rows[0]["name"]) == (101, "e-scooter")
    assert 102 not in [row["id"] for row in rows]
    assert shown_rows(project.dbt("show", "--select", "products", "--vars", "{cdc_merge_preview: pending}")) == []


def test_compile_writes_a_query_that_runs_and_reads_the_pending_events(conformance_project):
    project = applied_project(conformance_project)
    project.dbt("compile", "--select", "products")
    compiled = next((project.project_dir / "target" / "compiled").rglob("products.sql")).read_text()
    assert "__cdc_batch" not in compiled
    rows = project.query(f"select id, _cdc_action from ({compiled}) as compiled order by id")
    assert [(row["id"], row["_cdc_action"]) for row in rows] == [(101, "update"), (102, "delete")]


def test_cdc_events_outside_a_cdc_merge_model_fails_at_compile_time(conformance_project):
    project = conformance_project
    (project.project_dir / "models" / "mirrors" / "as_table.sql").write_text(
        "{{ config(materialized='table') }}\nselect * from {{ cdc_merge.cdc_events(ref('raw_events')) }}\n"
    )
    for command in (["run"], ["compile"]):
        result = project.dbt(*command, "--select", "as_table", expect_success=False)
        assert not result.success
        message = str(result.exception) if result.exception else "\n".join(str(r.message) for r in result.result.results)
        assert "only in models materialized as 'cdc_merge' (this one is table)" in message, message
    assert not project.query(
        f"select * from information_schema.tables where table_schema = '{project.schema}' and table_name = 'as_table'"
    ) if project.on_databend else not project.spark.catalog.tableExists(f"{project.schema}.as_table")


def test_docs_generate_catalogs_the_mirror_and_the_raw_tables(conformance_project):
    project = applied_project(conformance_project)
    project.dbt("docs", "generate", "--select", "products", "raw_events")
    catalog = json.loads((project.project_dir / "target" / "catalog.json").read_text())
    nodes = catalog["nodes"]
    mirror = nodes["model.cdc_merge.products"]
    assert list(mirror["columns"])[:2] == ["id", "name"]
    assert {"_cdc_key", "_cdc_seq"} <= set(mirror["columns"])
    raw = nodes["model.cdc_merge.raw_events"]
    assert {"table_name", "key", "seq", "raw_data"} <= set(raw["columns"])
    count = project.query(f"select count(*) as n from {project.schema}.products")[0]["n"]
    assert mirror["stats"]["row_count"]["value"] == count == 10
    raw_count = project.query(f"select count(*) as n from {project.raw_schema}.raw_events")[0]["n"]
    assert raw["stats"]["row_count"]["value"] == raw_count
    assert mirror["stats"]["bytes"]["value"] > 0
    if not project.on_databend:
        assert int(mirror["stats"]["data_files"]["value"]) >= 1
        assert str(mirror["stats"]["snapshot_id"]["value"]) == project.table_version(f"{project.schema}.products")


def test_empty_run_creates_the_mirror_without_rows_and_applies_nothing(conformance_project):
    project = conformance_project
    project.write_model("products", CONFIG, COLUMNS)
    shutil.copy(FLINK_MYSQL, project.inbox / "part-1.json")
    project.land(PRODUCTS)
    project.dbt("run", "--select", "products", "--empty")
    assert project.query(f"select count(*) as n from {project.schema}.products")[0]["n"] == 0
    # --empty writes no offset: the next run applies the whole log.
    project.dbt("run", "--select", "products")
    assert project.query(f"select count(*) as n from {project.schema}.products")[0]["n"] == 10


PRODUCTS_YML = """
version: 2
models:
  - name: products
    data_tests:
      - cdc_mirror_matches_log:
          arguments:
            source_table: inventory.products
            raw_relation: ref('raw_events')
    columns:
      - name: id
        data_tests: [unique, not_null]
"""


def node_statuses(result) -> dict[str, str]:
    return {r.node.name: str(r.status) for r in result.result.results}


def test_build_applies_the_mirror_then_runs_its_tests(conformance_project):
    project = conformance_project
    project.write_model("products", CONFIG, COLUMNS)
    (project.project_dir / "models" / "mirrors" / "_products.yml").write_text(PRODUCTS_YML)
    shutil.copy(FLINK_MYSQL, project.inbox / "part-1.json")
    project.land(PRODUCTS)
    statuses = node_statuses(project.dbt("build", "--select", "products"))
    assert statuses.pop("products") == "success"
    assert len(statuses) == 3 and set(statuses.values()) == {"pass"}, statuses
    assert project.query(f"select count(*) as n from {project.schema}.products")[0]["n"] == 10


def test_retry_runs_again_only_the_mirror_that_failed(dbt_project):
    project = dbt_project
    project.write_model("products", CONFIG, COLUMNS)
    project.write_model("broken", CONFIG + ", deletes='archive'", COLUMNS)
    shutil.copy(FLINK_MYSQL, project.inbox / "part-1.json")
    project.land(PRODUCTS)
    failed = project.dbt("run", "--select", "products", "broken", expect_success=False, artifacts=True)
    assert node_statuses(failed) == {"products": "success", "broken": "error"}
    project.write_model("broken", CONFIG, COLUMNS)
    retried = project.dbt("retry")
    assert node_statuses(retried) == {"broken": "success"}
    assert project.query(f"select count(*) as n from {project.schema}.broken")[0]["n"] == 10


def test_ls_and_state_selectors_list_the_models_that_changed(dbt_project, tmp_path):
    project = dbt_project
    listed = project.dbt("ls", "--resource-type", "model", "--output", "name", artifacts=True).result
    assert {"raw_events", "shop_customers", "shop_orders", "shop_order_lines", "inventory_products"} <= set(listed)
    state = tmp_path / "state"
    shutil.copytree(project.project_dir / "target", state)
    mirror = project.project_dir / "models" / "mirrors" / "shop_orders.sql"
    mirror.write_text(mirror.read_text().replace("'status': 'string',", "'status': 'varchar(20)',"))
    changed = project.dbt("ls", "--select", "state:modified", "--state", str(state), "--resource-type", "model",
                          "--output", "name").result
    assert changed == ["shop_orders"]


def test_the_log_test_of_a_soft_mirror_compares_its_live_rows_without_being_told(conformance_project):
    """cdc-init's YAML gives cdc_mirror_matches_log no deletes argument: a mirror made soft (its config or
    the var cdc_merge_deletes) kept its deleted rows and the test counted each as unexpected."""
    project = conformance_project
    project.write_model("products", CONFIG + ", deletes='soft'", COLUMNS)
    (project.project_dir / "models" / "mirrors" / "_products.yml").write_text(PRODUCTS_YML)
    shutil.copy(FLINK_MYSQL, project.inbox / "part-1.json")
    project.land(PRODUCTS)
    statuses = node_statuses(project.dbt("build", "--select", "products", expect_success=False))
    assert statuses.pop("products") == "success"
    assert set(statuses.values()) == {"pass"}, statuses
    # The fixture deletes 111: the mirror keeps it, marked deleted.
    assert project.query(f"select id from {project.schema}.products where _cdc_deleted")[0]["id"] == 111
