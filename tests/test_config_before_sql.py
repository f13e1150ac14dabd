"""Bad configuration fails before any SQL writes anything, with a message that says what to change.
(Wrong Databend credentials: tests/test_secrets.py; wrong source passwords: tests/test_capture_faults.py;
cdc_events() outside a cdc_merge model: tests/test_dbt_commands.py.)"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PROJECT_DIR
from python_jobs.landing import io, land

KEYS = {"shop.items": ["id"]}
LINE = ('{"before":null,"after":{"id":1,"note":"a"},"source":{"connector":"mysql","db":"shop","table":"items",'
        '"file":"mysql-bin.000001","pos":10,"row":0},"op":"c","ts_ms":1}')
COLUMNS = "{{ cdc_merge.cdc_column('id', 'bigint') }}, {{ cdc_merge.cdc_column('note', 'string') }}, {{ cdc_merge.cdc_metadata_columns() }}"


def run_message(result) -> str:
    """What dbt says about a failed run: the node errors, or the exception."""
    messages = [str(node.message) for node in (result.result or []) if getattr(node, "message", None)]
    return " ".join(messages) + str(result.exception or "")


def tables_in(project, schema: str) -> list[str]:
    return [row["tableName"] for row in project.query(f"show tables in {schema}")] if project.spark.catalog.databaseExists(
        schema) else []


def test_a_unique_key_column_the_model_does_not_select_fails_before_the_mirror_is_created(dbt_project):
    dbt_project.write_model("items", "unique_key=['id', 'region'], source_table='shop.items'", COLUMNS)
    (dbt_project.inbox / "a.json").write_text(LINE + "\n")
    dbt_project.landing_config({"shop.items": ["id", "region"]})  # the captured key: only the model lacks a column

    result = dbt_project.dbt("run", "--select", "items", expect_success=False)

    message = run_message(result)
    assert "unique_key column region is not selected by the model" in message
    assert "items" not in tables_in(dbt_project, dbt_project.schema)


def test_a_source_table_the_debezium_landing_does_not_capture_fails_at_compile_time(dbt_project):
    dbt_project.write_model("orders", "unique_key='id', source_table='shop.orders'", COLUMNS)
    dbt_project.landing_config(KEYS, format="debezium")

    result = dbt_project.dbt("run", "--select", "orders", expect_success=False)

    message = run_message(result)
    assert "source_table shop.orders is not captured by the landing config" in message
    assert "lands only the tables under 'tables:': shop.items" in message and "add shop.orders there" in message
    assert "orders" not in tables_in(dbt_project, dbt_project.schema)
    # With a format whose records announce their keys, every table lands: no check.
    dbt_project.landing_config(KEYS, format="auto")
    assert dbt_project.dbt("compile", "--select", "orders").success



def test_a_unique_key_changed_to_columns_that_are_not_the_captured_key_is_refused(dbt_project):
    """The raw log keys the events by landing.yml's key whatever unique_key says; cdc-verify compared the
    mirror by unique_key (and crashed on it) and online snapshot ranges were left out for it."""
    dbt_project.write_model("items", "unique_key='id', source_table='shop.items'", COLUMNS)
    (dbt_project.inbox / "a.json").write_text(LINE + "\n")
    dbt_project.land(KEYS, format="debezium")
    dbt_project.dbt("run", "--select", "items")
    dbt_project.write_model("items", "unique_key='note', source_table='shop.items'", COLUMNS)

    result = dbt_project.dbt("run", "--select", "items", expect_success=False)

    message = run_message(result)
    assert "unique_key ['note'] is not the key" in message and "captures shop.items by (['id'])" in message, message
    assert "Set unique_key='id'" in message



def test_a_partition_by_added_to_a_mirror_is_refused_not_ignored(dbt_project):
    """dbt-spark's partition_by: the mirror is not created or changed with a layout, so it is refused by name."""
    dbt_project.write_model("items", "unique_key='id', source_table='shop.items'", COLUMNS)
    (dbt_project.inbox / "a.json").write_text(LINE + "\n")
    dbt_project.land(KEYS)
    dbt_project.dbt("run", "--select", "items")
    dbt_project.write_model("items", "unique_key='id', source_table='shop.items', partition_by=['note']", COLUMNS)

    result = dbt_project.dbt("run", "--select", "items", expect_success=False)

    message = run_message(result)
    assert "partition_by is not applied by cdc_merge" in message and "Remove it from the model's config" in message, message


def test_an_unknown_format_stops_the_landing_model_before_spark_reads_a_file(dbt_project, spark):
    (dbt_project.inbox / "a.json").write_text(LINE + "\n")
    dbt_project.landing_config(KEYS)
    config_file = dbt_project.work_dir / "landing.yml"
    config_file.write_text(config_file.read_text() + "format: avro\n")
    raw = f"{dbt_project.raw_schema}.raw_events"
    snapshots = spark.sql(f"select count(*) from {raw}.snapshots").first()[0]

    result = dbt_project.dbt("run", expect_success=False)

    message = run_message(result)
    assert "field 'format' must be one of auto, debezium, canal, maxwell, ogg, wal2json, captured_wal2json, got 'avro'" in message
    assert "Traceback" not in message
    assert spark.sql(f"select count(*) from {raw}.snapshots").first()[0] == snapshots
    assert not (dbt_project.work_dir / "checkpoint").exists()


def test_an_input_that_is_missing_or_not_a_folder_fails_before_spark_starts(dbt_project, tmp_path):
    config = dbt_project.landing_config(KEYS, input=str(tmp_path / "nowhere"))
    with pytest.raises(io.LandingError, match="does not exist: create it, or fix 'input' in the landing config"):
        land.run(config)
    (tmp_path / "a-file").write_text("x")
    config = dbt_project.landing_config(KEYS, input=str(tmp_path / "a-file"))
    with pytest.raises(io.LandingError, match="is not a folder: set 'input' in the landing config"):
        land.run(config)
    # Through dbt: the message, without the traceback before it.
    result = dbt_project.dbt("run", "--select", "raw_events", expect_success=False)
    message = run_message(result)
    assert "is not a folder: set 'input' in the landing config" in message and "Traceback" not in message, message
    assert not (dbt_project.work_dir / "checkpoint").exists()


def test_an_unreadable_input_folder_says_whose_permissions_to_fix(tmp_path):
    """As a user who may not read it (root reads everything, so there the check runs without the
    capabilities that allow that, on a folder of another user)."""
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "a.json").write_text(LINE + "\n")
    tmp_path.chmod(0o755)
    folder.chmod(0o700)
    check = f"from pathlib import Path; from python_jobs.landing import io; io.require_readable_folder(Path({str(folder)!r}))"
    command = [sys.executable, "-c", check]
    if os.geteuid() == 0:  # root without the capabilities that let it read any file
        os.chown(folder, 65534, 65534)
        drop = "-dac_override,-dac_read_search"
        command = ["setpriv", "--bounding-set", drop, "--inh-caps", drop, *command]
    else:
        folder.chmod(0o000)
    try:
        result = subprocess.run(command, cwd=PROJECT_DIR, capture_output=True, text=True, timeout=300)
    finally:
        folder.chmod(0o700)
    assert result.returncode != 0
    assert f"LandingError: input folder {folder} cannot be read by this user" in result.stderr
    assert "Permission denied; fix its permissions" in result.stderr


@contextlib.contextmanager
def unwritable_folder(path: Path):
    """A read-only tmpfs as root (who writes anywhere else), else a folder without write permission."""
    path.mkdir(parents=True)
    if os.geteuid() == 0:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(path)], check=True)
        try:
            yield "Read-only file system"
        finally:
            subprocess.run(["umount", str(path)], check=True)
    else:
        path.chmod(0o555)
        try:
            yield "Permission denied"
        finally:
            path.chmod(0o755)


def test_a_warehouse_that_cannot_be_written_fails_before_any_sql(dbt_project, tmp_path, monkeypatch):
    dbt_project.write_model("items", "unique_key='id', source_table='shop.items'", COLUMNS)
    with unwritable_folder(tmp_path / "readonly") as refusal:
        monkeypatch.setenv("CDC_MERGE_WAREHOUSE", str(tmp_path / "readonly" / "warehouse"))
        result = dbt_project.dbt("run", "--select", "items", expect_success=False)
    monkeypatch.undo()

    message = run_message(result)
    assert f"the Iceberg warehouse folder {tmp_path / 'readonly' / 'warehouse'} (spark.sql.catalog.lake.warehouse) " \
           f"cannot be written: {refusal}" in message
    assert "CDC_MERGE_WAREHOUSE" in message
    log = dbt_project.dbt_log()
    assert "create " not in log.split("Command `cli run`")[-2 if log.count("Command `cli run`") > 1 else -1].lower() \
        or "items" not in tables_in(dbt_project, dbt_project.schema)
    assert "items" not in tables_in(dbt_project, dbt_project.schema)


def test_a_column_named_as_a_keyword_is_refused_by_name_on_databend_and_mirrored_on_spark(conformance_project):
    """Databend reads `order` as SQL where the mirror's statements name a column: the run stops before
    any SQL writes, saying what to name it; Spark reads it as a name and mirrors it."""
    line = LINE.replace('"note":"a"', '"note":"a","order":7')
    (conformance_project.inbox / "a.json").write_text(line + "\n")
    conformance_project.land(KEYS)
    conformance_project.write_model(
        "items", "unique_key='id', source_table='shop.items'",
        "{{ cdc_merge.cdc_columns({'id': 'bigint', 'order': 'int', 'note': 'string'}) }}, {{ cdc_merge.cdc_metadata_columns() }}")

    result = conformance_project.dbt("run", "--select", "items", expect_success=not conformance_project.on_databend)

    if conformance_project.on_databend:
        assert "column order is a word Databend reads as SQL" in run_message(result)
        assert "json_fields={'order_': 'order'}" in run_message(result)
        assert not conformance_project.query(f"show tables from {conformance_project.schema} like 'items'")
    else:
        assert [tuple(row.values()) for row in conformance_project.query(
            f"select id, `order`, note from {conformance_project.schema}.items")] == [(1, 7, "a")]


def test_a_profile_without_its_warehouse_fails_before_any_sql_saying_what_to_set(dbt_project, monkeypatch):
    """The warehouse left out of the profile (here its variable set empty): the run's first statement
    failed with 150 lines of Java traceback, warehousePath must not be null or empty."""
    dbt_project.write_model("items", "unique_key='id', source_table='shop.items'", COLUMNS)
    monkeypatch.setenv("CDC_MERGE_WAREHOUSE", "")
    result = dbt_project.dbt("run", "--select", "items", expect_success=False)
    monkeypatch.undo()

    message = run_message(result)
    assert "the Iceberg catalog spark.sql.catalog.lake (spark.sql.catalog.lake." in message
    assert "has no warehouse: set spark.sql.catalog.lake.warehouse in the target's server_side_parameters" in message
