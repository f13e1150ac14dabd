"""Flink's Debezium JSON fixtures, landed and applied, give the final tables their tests expect."""

from __future__ import annotations

import shutil

import pytest

from conftest import FIXTURES

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


def mirrored_products(dbt_project) -> list[tuple[str, ...]]:
    rows = dbt_project.spark.sql(
        f"select cast(id as string), name, description, cast(weight as string) "
        f"from {dbt_project.schema}.inventory_products order by id"
    ).collect()
    return [tuple(row) for row in rows]


@pytest.mark.parametrize(
    "fixture",
    [
        "debezium-data-schema-exclude.txt",
        "debezium-data-schema-include.txt",
        "debezium-postgres-data-schema-exclude.txt",
        "debezium-postgres-data-schema-include.txt",
    ],
)
def test_fixture_gives_the_expected_products_table(dbt_project, fixture):
    shutil.copy(FIXTURES / "flink" / fixture, dbt_project.inbox / fixture)
    summary = dbt_project.land(PRODUCTS)
    assert (summary.counts["event"], summary.counts["rejected"]) == (16, 0)

    dbt_project.dbt("run", "--select", "inventory_products")

    assert mirrored_products(dbt_project) == expected_final_table(fixture)
    dbt_project.dbt("test", "--select", "inventory_products")


def test_replica_identity_default_delete_is_quarantined_not_guessed(dbt_project):
    """Flink refuses this file; updates by key still apply, the key-less delete goes to quarantine."""
    fixture = "debezium-postgres-data-replica-identity.txt"
    shutil.copy(FIXTURES / "flink" / fixture, dbt_project.inbox / fixture)
    summary = dbt_project.land(PRODUCTS)
    assert (summary.counts["event"], summary.counts["rejected"]) == (15, 1)
    (reason,) = [row.reason for row in dbt_project.rows(f"{dbt_project.raw_schema}.quarantine")]
    assert "no 'before' image" in reason and "REPLICA IDENTITY" in reason

    dbt_project.dbt("run", "--select", "inventory_products")

    # Everything but the delete of 111, whose key the source never sent.
    expected = expected_final_table("debezium-postgres-data-schema-exclude.txt") + [
        ("111", "scooter", "Big 2-wheel scooter ", "5.17")
    ]
    assert mirrored_products(dbt_project) == expected
