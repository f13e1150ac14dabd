"""`--full-refresh` of a stored mirror builds aside and takes the mirror's place only once whole
(macros/materializations/cdc_merge/rebuild_aside.sql): a rebuild that fails leaves the mirror as it
was, and its runs go on from their own offset; one that succeeds leaves nothing of its own behind."""

from __future__ import annotations

import json
import shutil
import signal

import pytest

from conftest import FIXTURES
from harness.dbt_project import error_text
from harness.mirror_project import make_project
from test_crash_ranges import killed_run

PRODUCTS = {"inventory.products": ["id"]}
FLINK_MYSQL = FIXTURES / "flink" / "debezium-data-schema-exclude.txt"
# A chunk per raw snapshot: the rebuild applies the first landing, then stops at the second.
CONFIG = "unique_key='id', source_table='inventory.products', max_events_per_chunk=1"
COLUMNS = "{{ cdc_merge.cdc_column('id', 'int') }}, {{ cdc_merge.cdc_column('name', 'string') }}, {{ cdc_merge.cdc_metadata_columns() }}"
# A model that cannot read product 111: the query fails on either engine once it reaches that row.
FAILING_NAME = """
    {%- set id = cdc_merge.cdc_value('_cdc_row', 'id', 'int') -%}
    {%- set name = cdc_merge.cdc_value('_cdc_row', 'name', 'string') -%}
    {%- if target.type == 'cdc_databend' -%}
    case when {{ id }} = 111 then cast(cast({{ name }} as int) as string) else {{ name }} end as name
    {%- else -%}
    case when {{ id }} = 111 then cast(raise_error('product 111 is unreadable') as string) else {{ name }} end as name
    {%- endif -%}
"""
FAILING_COLUMNS = "{{ cdc_merge.cdc_column('id', 'int') }}, " + FAILING_NAME + ", {{ cdc_merge.cdc_metadata_columns() }}"


def products(project) -> list[tuple]:
    return [(row["id"], row["name"]) for row in project.query(f"select id, name from {project.schema}.products order by id")]


def tables(project) -> set[str]:
    if project.on_databend:
        rows = project.query(f"select name from system.tables where database = '{project.schema}'")
        return {row["name"] for row in rows}
    return {row["tableName"] for row in project.query(f"show tables in {project.schema}")}


def offset_targets(project) -> set[str]:
    rows = project.query(f"select distinct target_table from {project.schema}.cdc_merge_offsets")
    return {row["target_table"].split(".")[-1] for row in rows}


def a_new_product(first_line: str) -> dict:
    event = json.loads(first_line)
    event["after"].update({"id": 111, "name": "bicycle"})
    event["source"].update({"snapshot": "false", "file": "mysql-bin.000004", "pos": 154})
    event["ts_ms"] += 1000
    return event


def land(project, part: int) -> None:
    """The fixture's products (part 1), or product 111 added (part 2), landed: a raw snapshot each."""
    if part == 1:
        shutil.copy(FLINK_MYSQL, project.inbox / "part-1.json")
    else:
        (project.inbox / "part-2.json").write_text(json.dumps(a_new_product(FLINK_MYSQL.read_text().splitlines()[0])) + "\n")
    project.land(PRODUCTS)


def rebuild_leftovers(project) -> set[str]:
    return {name for name in tables(project) | offset_targets(project) if "__cdc_rebuild" in name}


def test_a_failed_rebuild_leaves_the_mirror_as_it_was_and_a_good_one_nothing_of_its_own(conformance_project):
    project = conformance_project
    project.write_model("products", CONFIG, COLUMNS)
    land(project, 1)
    land(project, 2)
    project.dbt("run", "--select", "products")
    mirrored = products(project)
    assert [product_id for product_id, _ in mirrored] == list(range(101, 112))

    project.write_model("products", CONFIG, FAILING_COLUMNS)
    failed = project.dbt("run", "--select", "products", "--full-refresh", expect_success=False)
    assert not failed.success
    # Rebuilt in place, the mirror was dropped first and stayed empty until a run succeeded.
    assert products(project) == mirrored
    assert "the mirror stays as it is until the rebuild takes its place" in project.dbt_log()

    assert "products__cdc_rebuild" in rebuild_leftovers(project)

    # The mirror's offset stayed where it was: with the model it was built with, the next run has nothing to
    # apply, and drops what the stopped rebuild left.
    project.write_model("products", CONFIG, COLUMNS)
    version = project.table_version(f"{project.schema}.products")
    project.dbt("run", "--select", "products")
    assert project.table_version(f"{project.schema}.products") == version
    assert products(project) == mirrored
    assert "left by a --full-refresh that stopped" in project.dbt_log()
    assert not rebuild_leftovers(project)

    project.dbt("run", "--select", "products", "--full-refresh")
    assert products(project) == mirrored
    assert project.table_version(f"{project.schema}.products") != version
    assert not rebuild_leftovers(project)
    assert "products" in offset_targets(project)
    # The rebuilt mirror is idle on its next run: its offset and model checksum are the mirror's.
    version = project.table_version(f"{project.schema}.products")
    project.dbt("run", "--select", "products")
    assert project.table_version(f"{project.schema}.products") == version


HISTORY_CONFIG = "materialized='cdc_history', " + CONFIG


def versions(project) -> list[tuple]:
    return [tuple(row.values()) for row in project.query(
        f"select id, name, valid_from, valid_to, is_current, is_deleted from {project.schema}.product_versions order by id, _cdc_seq")]


def live(rows: list[tuple]) -> list[tuple]:
    return [row[:2] for row in rows if row[4] and not row[5]]


def test_a_history_is_rebuilt_aside_too_and_takes_its_new_deletes_mode_with_it(conformance_project):
    project = conformance_project
    project.write_model("product_versions", HISTORY_CONFIG + ", deletes='hard'", COLUMNS)
    land(project, 1)
    land(project, 2)
    project.dbt("run", "--select", "product_versions")
    stored = versions(project)
    assert (111, "bicycle") in live(stored)

    project.write_model("product_versions", HISTORY_CONFIG + ", deletes='hard'", FAILING_COLUMNS)
    assert not project.dbt("run", "--select", "product_versions", "--full-refresh", expect_success=False).success
    # Rebuilt in place, the history was dropped first and held the first chunk's versions until a run succeeded.
    assert versions(project) == stored
    assert "the history stays as it is until the rebuild takes its place" in project.dbt_log()
    assert "product_versions__cdc_rebuild" in rebuild_leftovers(project)

    project.write_model("product_versions", HISTORY_CONFIG + ", deletes='hard'", COLUMNS)
    version = project.table_version(f"{project.schema}.product_versions")
    project.dbt("run", "--select", "product_versions")
    assert project.table_version(f"{project.schema}.product_versions") == version
    assert "left by a --full-refresh that stopped before it took the history's place" in project.dbt_log()
    assert not rebuild_leftovers(project)

    # A full refresh in the other deletes mode: the rebuilt history keeps the mode, and drops its deletes table.
    project.write_model("product_versions", HISTORY_CONFIG + ", deletes='soft'", COLUMNS)
    project.dbt("run", "--select", "product_versions", "--full-refresh")
    rebuilt = versions(project)
    assert live(rebuilt) == live(stored)
    # The source's delete is a version of its own now.
    assert len([row for row in rebuilt if row[5]]) == 1 and len(rebuilt) == len(stored) + 1
    assert not rebuild_leftovers(project)
    assert "product_versions__cdc_history_deletes" not in tables(project)
    version = project.table_version(f"{project.schema}.product_versions")
    project.dbt("run", "--select", "product_versions")
    assert project.table_version(f"{project.schema}.product_versions") == version
    project.write_model("product_versions", HISTORY_CONFIG + ", deletes='hard'", COLUMNS)
    refused = project.dbt("run", "--select", "product_versions", expect_success=False)
    assert "product_versions was built with deletes='soft'" in error_text(refused)


@pytest.mark.xdist_group("crashes")
@pytest.mark.parametrize("point", ["rebuild-before-swap", "rebuild-after-swap"])
def test_a_history_rebuild_killed_at_its_swap_is_healed_by_the_next_run(spark, tmp_path, point):
    """Killed (SIGKILL, python_jobs/crash_points.py) before the history takes the rebuilt rows, or once it holds
    them under its old offset, with events landed after that offset: one plain run then gives the versions a
    whole rebuild gives, and leaves nothing of the rebuild's."""
    project = make_project(spark, tmp_path, "local")
    project.write_model("product_versions", HISTORY_CONFIG + ", deletes='hard'", COLUMNS)
    land(project, 1)
    project.dbt("run", "--select", "product_versions")
    land(project, 2)

    crashed = killed_run(project, point, ["product_versions"], "--full-refresh")
    assert crashed.returncode == -signal.SIGKILL, f"the run was not killed at {point}:\n{crashed.stdout[-3000:]}"
    project.dbt("run", "--select", "product_versions")
    healed = versions(project)
    assert not rebuild_leftovers(project)

    project.dbt("run", "--select", "product_versions", "--full-refresh")
    assert healed == versions(project)
    assert (111, "bicycle") in live(healed)
