"""dbt Python models in dbt's own SparkSession (adapter type cdc_spark): the landing
model lands new files and the mirrors merge them in one `dbt run`."""

from __future__ import annotations


import pytest
import yaml
from dbt.adapters.cdc_spark.connections import CdcSparkCredentials
from dbt.adapters.cdc_spark.python_session import SessionPythonJobHelper
from dbt.adapters.spark.connections import SparkConnectionMethod
from dbt_common.exceptions import DbtRuntimeError
from pyspark.testing import assertDataFrameEqual

from conftest import FIXTURES, PROJECT_DIR, plain_spark_output
from test_fixtures import expected_final_table, mirrored_products

PRODUCTS = {"inventory.products": ["id"]}
FLINK_MYSQL = FIXTURES / "flink" / "debezium-data-schema-exclude.txt"
LAND_AND_MERGE = ("run", "--select", "raw_events", "inventory_products")


def run_messages(result) -> dict[str, str]:
    return {node.node.name: str(node.message) for node in result.result.results}


def run_statuses(result) -> dict[str, str]:
    return {node.node.name: str(node.status) for node in result.result.results}


def raw_snapshots(dbt_project) -> list[int]:
    table = f"{dbt_project.raw_schema}.raw_events"
    return [row[0] for row in dbt_project.spark.sql(f"select snapshot_id from {table}.snapshots order by committed_at").collect()]


def test_each_dbt_run_lands_only_new_files_then_merges(dbt_project, spark):
    dbt_project.landing_config(PRODUCTS)
    lines = FLINK_MYSQL.read_text().splitlines(keepends=True)
    (dbt_project.inbox / "part-1.json").write_text("".join(lines[:10]))

    first = dbt_project.dbt(*LAND_AND_MERGE)
    assert run_messages(first)["raw_events"] == "landed 10 events, quarantined 0 lines"
    raw = f"{dbt_project.raw_schema}.raw_events"
    assert spark.table(raw).count() == 10

    (dbt_project.inbox / "part-2.json").write_text("".join(lines[10:]))
    second = dbt_project.dbt(*LAND_AND_MERGE)
    assert run_messages(second)["raw_events"] == f"landed {len(lines) - 10} events, quarantined 0 lines"
    landed = spark.sql(f"select landed_file, landed_line from {raw}").collect()
    assert len(landed) == len(lines) == len(set(landed))
    assert mirrored_products(dbt_project) == expected_final_table(FLINK_MYSQL.name)

    snapshots = raw_snapshots(dbt_project)
    third = dbt_project.dbt(*LAND_AND_MERGE)
    assert run_messages(third)["raw_events"] == "landed 0 events, quarantined 0 lines"
    assert raw_snapshots(dbt_project) == snapshots

    # A mirror still runs on its own, from the raw log as it is.
    dbt_project.dbt("run", "--select", "inventory_products", "--full-refresh")
    assert mirrored_products(dbt_project) == expected_final_table(FLINK_MYSQL.name)


def test_landing_and_mirrors_form_one_lineage(dbt_project):
    result = dbt_project.dbt("ls", "--select", "+inventory_products", "--resource-type", "model", "--output", "name")
    assert sorted(result.result) == ["inventory_products", "raw_events"]


def test_a_failing_python_model_names_itself_shows_the_traceback_and_lands_nothing(dbt_project, spark):
    dbt_project.landing_config(PRODUCTS)
    (dbt_project.inbox / "part-1.json").write_text(FLINK_MYSQL.read_text())
    model_file = dbt_project.project_dir / "models" / "landing" / "raw_events.py"
    model_code = model_file.read_text()
    model_file.write_text(model_code.replace(
        "    return land.run_for_dbt(", "    raise ValueError('no landing today')\n    return land.run_for_dbt("
    ))
    snapshots = raw_snapshots(dbt_project)

    failed = dbt_project.dbt(*LAND_AND_MERGE, expect_success=False)

    messages = run_messages(failed)
    assert "Python model raw_events" in messages["raw_events"]
    assert "Traceback (most recent call last)" in messages["raw_events"]
    raise_line = model_file.read_text().splitlines().index("    raise ValueError('no landing today')") + 1
    assert f'models/landing/raw_events.py", line {raise_line}, in model' in messages["raw_events"]
    assert "ValueError: no landing today" in messages["raw_events"]
    assert run_statuses(failed) == {"raw_events": "error", "inventory_products": "skipped"}
    assert raw_snapshots(dbt_project) == snapshots

    # Fixed, the next run lands the file that was waiting, once.
    model_file.write_text(model_code)
    assert run_messages(dbt_project.dbt(*LAND_AND_MERGE))["raw_events"] == "landed 16 events, quarantined 0 lines"
    assert mirrored_products(dbt_project) == expected_final_table(FLINK_MYSQL.name)


def test_a_landing_config_naming_other_tables_fails_before_landing(dbt_project, spark):
    dbt_project.landing_config(PRODUCTS, raw_table="elsewhere.raw_events")
    (dbt_project.inbox / "part-1.json").write_text(FLINK_MYSQL.read_text())
    snapshots = raw_snapshots(dbt_project)

    message = run_messages(dbt_project.dbt("run", "--select", "raw_events", expect_success=False))["raw_events"]

    assert "field 'raw_table' is elsewhere.raw_events but the dbt landing model writes" in message
    assert raw_snapshots(dbt_project) == snapshots


def test_on_a_plain_dbt_spark_target_the_landing_model_says_which_type_to_set(dbt_project, tmp_path):
    profiles = yaml.safe_load((PROJECT_DIR / "profiles" / "profiles.yml").read_text())
    plain_spark = plain_spark_output()
    profiles["cdc_merge"] = {"target": "plain_spark", "outputs": {"plain_spark": plain_spark}}
    (tmp_path / "profiles.yml").write_text(yaml.safe_dump(profiles))

    result = dbt_project.dbt("run", "--select", "raw_events", expect_success=False, profiles_dir=tmp_path)

    message = run_messages(result)["raw_events"]
    assert "target 'plain_spark' is type spark" in message
    assert "set type: cdc_spark" in message and "docs/your_project.md" in message


def test_the_session_method_refuses_a_thrift_target_before_running_anything():
    # Built as a session profile, then pointed at Thrift.
    credentials = CdcSparkCredentials(method="session", host="spark.example", schema="mirror")
    credentials.method = SparkConnectionMethod.THRIFT
    model = {"alias": "raw_events", "original_file_path": "models/landing/raw_events.py"}

    with pytest.raises(DbtRuntimeError, match="needs 'method: session'.*uses 'method: thrift'.*spark-submit"):
        SessionPythonJobHelper(model, credentials)


def test_a_plain_python_table_model_runs_in_the_session(dbt_project, spark):
    dbt_project.landing_config(PRODUCTS)
    (dbt_project.inbox / "part-1.json").write_text(FLINK_MYSQL.read_text())
    (dbt_project.project_dir / "models" / "landing" / "events_per_action.py").write_text(
        "def model(dbt, session):\n"
        "    dbt.config(materialized='table', file_format='iceberg')\n"
        "    return dbt.ref('raw_events').groupBy('action').count()\n"
    )

    dbt_project.dbt("run", "--select", "raw_events", "events_per_action")

    raw = spark.table(f"{dbt_project.raw_schema}.raw_events")
    assertDataFrameEqual(
        spark.table(f"{dbt_project.raw_schema}.events_per_action"), raw.groupBy("action").count()
    )
