"""Flink's CDC JSON fixtures (Debezium, Canal, Maxwell, GoldenGate), landed and applied,
give the final tables their upstream tests expect, on Spark + Iceberg and on Databend."""

from __future__ import annotations

import shutil

import pytest
import yaml

from conftest import FIXTURES, PROJECT_DIR, plain_spark_output
from harness.mirror_project import make_project

PRODUCTS = {"inventory.products": ["id"]}


def expected_final_table(name: str) -> list[tuple[str, ...]]:
    """The 'final table state' section of <fixture>.expected.txt, as id|name|description|weight."""
    lines = (FIXTURES / "flink" / f"{name}.expected.txt").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("## final table state"))
    rows = []
    for line in lines[start + 1 :]:
        if line.startswith("#"):
            break
        rows.append(tuple(line.split("|")))
    return rows


def mirrored_products(project, model: str = "inventory_products") -> list[tuple[str, ...]]:
    rows = project.query(
        f"select cast(id as string) as id, name, description, cast(weight as string) as weight "
        f"from {project.schema}.{model} order by id"
    )
    # The engine writes the float: Databend's text of 1.0 is '1', Spark's '1.0'.
    return [(*list(row.values())[:3], None if row["weight"] is None else repr(float(row["weight"]))) for row in rows]


@pytest.mark.parametrize(
    "fixture",
    [
        "debezium-data-schema-exclude.txt",
        "debezium-data-schema-include.txt",
        "debezium-postgres-data-schema-exclude.txt",
        "debezium-postgres-data-schema-include.txt",
    ],
)
def test_fixture_gives_the_expected_products_table(conformance_project, fixture):
    shutil.copy(FIXTURES / "flink" / fixture, conformance_project.inbox / fixture)
    summary = conformance_project.land(PRODUCTS)
    assert (summary.counts["event"], summary.counts["rejected"]) == (16, 0)

    conformance_project.dbt("run", "--select", "inventory_products")

    assert mirrored_products(conformance_project) == expected_final_table(fixture)
    conformance_project.dbt("test", "--select", "inventory_products")


def test_replica_identity_default_delete_is_quarantined_not_guessed(conformance_project):
    """Flink refuses this file; updates by key still apply, the key-less delete goes to quarantine."""
    fixture = "debezium-postgres-data-replica-identity.txt"
    shutil.copy(FIXTURES / "flink" / fixture, conformance_project.inbox / fixture)
    summary = conformance_project.land(PRODUCTS)
    assert (summary.counts["event"], summary.counts["rejected"]) == (15, 1)
    (reason,) = [row.reason for row in conformance_project.rows(f"{conformance_project.raw_schema}.quarantine")]
    assert "no 'before' image" in reason and "REPLICA IDENTITY" in reason

    conformance_project.dbt("run", "--select", "inventory_products")

    # Everything but the delete of 111, whose key the source never sent.
    expected = expected_final_table("debezium-postgres-data-schema-exclude.txt") + [
        ("111", "scooter", "Big 2-wheel scooter ", "5.17")
    ]
    assert mirrored_products(conformance_project) == expected


PRODUCT_COLUMNS = (
    "{{ cdc_merge.cdc_column('id', 'int') }}, {{ cdc_merge.cdc_column('name', 'string') }}, "
    "{{ cdc_merge.cdc_column('description', 'string') }}, {{ cdc_merge.cdc_column('weight', 'float') }}, "
    "{{ cdc_merge.cdc_metadata_columns() }}"
)


@pytest.mark.parametrize(
    ("fixture", "source_table", "landed"),
    [
        # Canal: multi-row messages, all values strings, a DDL message that is not applied.
        ("canal-data.txt", "inventory.products2", {"event": 20, "ignored": 1, "blank": 1}),
        # Flink's table filter: only mydb.product; orders and project rows land but feed other mirrors.
        ("canal-data-filter-table.txt", "mydb.product", {"event": 35, "ignored": 2}),
        # Maxwell: 20 rows, 10 of them ending their transaction ("commit": true), which lands a marker too (counted apart).
        ("maxwell-data.txt", "test.product", {"event": 30, "tx_ends": 10, "blank": 1}),
        ("ogg-data.txt", "OGG.TBL_TEST", {"event": 16, "blank": 1}),
    ],
)
def test_other_formats_give_the_expected_products_table(conformance_project, fixture, source_table, landed):
    shutil.copy(FIXTURES / "flink" / fixture, conformance_project.inbox / fixture)
    # No key columns configured: these formats announce them (pkNames, primary_key_columns, primary_keys).
    summary = conformance_project.land({}, format="auto")
    assert {status: count for status, count in summary.counts.items() if count} == landed
    reasons = [row.reason for row in conformance_project.rows(f"{conformance_project.raw_schema}.quarantine")]
    assert len(reasons) == landed.get("ignored", 0)
    assert all(reason.startswith("not a row change: Canal DDL") for reason in reasons)

    conformance_project.write_model("products", f"unique_key='id', source_table='{source_table}'", PRODUCT_COLUMNS)
    conformance_project.dbt("run", "--select", "products")

    assert mirrored_products(conformance_project, "products") == expected_final_table(fixture)


def test_a_plain_dbt_spark_target_is_refused_before_any_sql_and_the_plugin_reads_appended_rows(spark, tmp_path):
    """A plain `type: spark` target cannot ask the apply's decisions of the plugin (docs/architecture.md,
    "One engine switch"): the mirror fails before any statement, saying what to change. With
    `type: cdc_spark` new raw snapshots are read with an incremental append scan (no changelog view)
    and the relations listed with SHOW TABLES."""
    project = make_project(spark, tmp_path, "local")
    profiles = yaml.safe_load((PROJECT_DIR / "profiles" / "profiles.yml").read_text())
    profiles["cdc_merge"] = {"target": "plain", "outputs": {"plain": plain_spark_output()}}
    plain_profiles = tmp_path / "plain_profiles"
    plain_profiles.mkdir()
    (plain_profiles / "profiles.yml").write_text(yaml.safe_dump(profiles))
    fixture = "debezium-data-schema-include.txt"
    lines = (FIXTURES / "flink" / fixture).read_text().splitlines(keepends=True)

    (project.inbox / "part-0.txt").write_text("".join(lines[:7]))
    project.land(PRODUCTS)
    logged = len(project.dbt_log())
    result = project.dbt("run", "--select", "inventory_products", profiles_dir=plain_profiles, expect_success=False)
    (message,) = [str(node.message) for node in result.result.results]
    assert "target 'plain' is type spark. In profiles.yml set type: cdc_spark" in message, message
    assert "create table" not in project.dbt_log()[logged:].lower()

    (project.inbox / "part-1.txt").write_text("".join(lines[7:]))
    project.land(PRODUCTS)
    project.dbt("run", "--select", "inventory_products")
    assert mirrored_products(project) == expected_final_table(fixture)

    (project.inbox / "part-2.txt").write_text(lines[0])  # an older event again: changes nothing
    project.land(PRODUCTS)
    log_start = len(project.dbt_log())
    project.dbt("run", "--select", "inventory_products")

    log = project.dbt_log()[log_start:]
    assert mirrored_products(project) == expected_final_table(fixture)
    assert "create_changelog_view" not in log and "show table extended" not in log
    # Only the new snapshot was read: one event, its key skipped as not newer.
    (offset,) = project.query(
        f"select events_read, events_skipped from {project.schema}.cdc_merge_offsets order by offset_ordinal desc limit 1"
    )
    assert (offset["events_read"], offset["events_skipped"]) == (1, 1)
    # No DESCRIBE of the tables in the schema (mirror, tombstones, offsets): the mirror's column
    # check reads its Iceberg schema in the adapter.
    assert log.count("describe extended") == 0
