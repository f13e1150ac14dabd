"""The cdc_merge materialization's contract beyond the happy path: config errors before
any SQL, rebuilds, expired offsets, and idle runs that change nothing."""

from __future__ import annotations

import shutil

import pytest

from conftest import FIXTURES

PRODUCTS = {"inventory.products": ["id"]}
FLINK_MYSQL = FIXTURES / "flink" / "debezium-data-schema-exclude.txt"

GOOD_CONFIG = "unique_key='id', source_table='inventory.products'"
GOOD_COLUMNS = "{{ cdc_merge.cdc_column('id', 'int') }}, {{ cdc_merge.cdc_column('name', 'string') }}, {{ cdc_merge.cdc_metadata_columns() }}"


def write_model(dbt_project, name: str, config: str = GOOD_CONFIG, columns: str = GOOD_COLUMNS) -> None:
    dbt_project.write_model(name, config, columns)


def run_error(result) -> str:
    assert not result.success
    if result.exception is not None:
        return str(result.exception)
    return "\n".join(str(node.message) for node in result.result.results)


def table_exists(spark, name: str) -> bool:
    return spark.catalog.tableExists(name)


@pytest.mark.parametrize(
    ("config", "columns", "message"),
    [
        ("source_table='inventory.products'", GOOD_COLUMNS, "set unique_key to the primary-key column"),
        ("unique_key=['id', 'id; drop table x'], source_table='inventory.products'", GOOD_COLUMNS, "is not a column name"),
        ("unique_key='id', source_table='products'", GOOD_COLUMNS, "set source_table to the schema-qualified source table"),
        ("unique_key='id'", GOOD_COLUMNS, "set source_table"),
        (GOOD_CONFIG + ", deletes='archive'", GOOD_COLUMNS, "deletes must be 'hard'"),
        (GOOD_CONFIG + ", max_events_per_chunk=0", GOOD_COLUMNS, "max_events_per_chunk must be a positive whole number"),
        (GOOD_CONFIG + ", max_events_per_chunk='lots'", GOOD_COLUMNS, "max_events_per_chunk must be a positive whole number"),
        (GOOD_CONFIG + ", table_properties='fast'", GOOD_COLUMNS, "table_properties must be a mapping"),
        (
            GOOD_CONFIG,
            GOOD_COLUMNS + " {% set second = source('cdc_raw', 'quarantine') %}",
            "reads exactly one raw table",
        ),
    ],
    ids=["no-key", "bad-key", "unqualified-table", "no-table", "bad-deletes", "zero-chunk", "text-chunk",
         "bad-properties", "two-sources"],
)
def test_config_errors_fail_before_any_sql(dbt_project, spark, config, columns, message):
    write_model(dbt_project, "bad_products", config, columns)
    result = dbt_project.dbt("run", "--select", "bad_products", expect_success=False)
    error = run_error(result)
    assert message in error and "bad_products" in error
    # The first statement of a run creates the offsets table: it never ran.
    assert not table_exists(spark, f"{dbt_project.schema}.cdc_merge_offsets")


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ("{{ cdc_merge.cdc_column('id', 'int') }}, _cdc_key, _cdc_seq", "must select _cdc_action"),
        ("{{ cdc_merge.cdc_column('name', 'string') }}, {{ cdc_merge.cdc_metadata_columns() }}", "unique_key column id is not selected"),
    ],
    ids=["no-metadata", "key-not-selected"],
)
def test_model_output_errors_fail_before_the_mirror_is_written(dbt_project, spark, columns, message):
    shutil.copy(FLINK_MYSQL, dbt_project.inbox / "part-1.json")
    dbt_project.land(PRODUCTS)
    write_model(dbt_project, "bad_products", columns=columns)
    error = run_error(dbt_project.dbt("run", "--select", "bad_products", expect_success=False))
    assert message in error
    assert not table_exists(spark, f"{dbt_project.schema}.bad_products")


def products(project) -> list[tuple]:
    return [tuple(row.values()) for row in project.query(f"select id, name from {project.schema}.products order by id")]


def test_idle_run_changes_nothing_and_full_refresh_rebuilds_the_same_mirror(conformance_project):
    project = conformance_project
    write_model(project, "products")
    shutil.copy(FLINK_MYSQL, project.inbox / "part-1.json")
    project.land(PRODUCTS)
    project.dbt("run", "--select", "products")
    mirrored = products(project)
    assert len(mirrored) == 10  # ids 101..110, as in the fixture's .expected.txt
    before = project.table_version(f"{project.schema}.products")

    project.dbt("run", "--select", "products")
    assert project.table_version(f"{project.schema}.products") == before

    project.dbt("run", "--select", "products", "--full-refresh")
    assert products(project) == mirrored
    assert project.table_version(f"{project.schema}.products") != before


def test_an_expired_offset_fails_and_says_how_to_rebuild(conformance_project):
    project = conformance_project
    write_model(project, "products")
    raw = f"{project.raw_schema}.raw_events"
    shutil.copy(FLINK_MYSQL, project.inbox / "part-1.json")
    project.land(PRODUCTS)
    project.dbt("run", "--select", "products")
    shutil.copy(FLINK_MYSQL, project.inbox / "part-2.json")
    project.land(PRODUCTS)
    shutil.copy(FLINK_MYSQL, project.inbox / "part-3.json")
    project.land(PRODUCTS)
    # Keep only the newest raw snapshot: the mirror's offset (the first) is gone.
    assert project.history_length(raw) == 3
    newest = project.table_version(raw)
    project.expire_history(raw)
    assert (project.history_length(raw), project.table_version(raw)) == (1, newest)

    error = run_error(project.dbt("run", "--select", "products", expect_success=False))
    assert "is no longer in that table's history" in error
    assert "dbt run --full-refresh --select products" in error

    project.dbt("run", "--select", "products", "--full-refresh")
    assert [row[0] for row in products(project)] == list(range(101, 111))


def postgres_line(op: str, lsn: int, row: dict) -> str:
    import json

    return json.dumps({
        "before": row if op == "d" else None,
        "after": None if op == "d" else row,
        "source": {"connector": "postgresql", "schema": "public", "table": "docs", "lsn": lsn, "snapshot": "false",
                   "ts_ms": 1_767_225_600_000 + lsn},
        "op": op,
    })


def test_unavailable_toast_values_keep_what_the_source_last_sent(dbt_project, spark):
    unavailable = "__debezium_unavailable_value"
    dbt_project.write_model(
        "docs", "unique_key='id', source_table='public.docs'",
        "{{ cdc_merge.cdc_column('id', 'int') }}, {{ cdc_merge.cdc_column('title', 'string') }}, "
        "{{ cdc_merge.cdc_column('body', 'string') }}, {{ cdc_merge.cdc_metadata_columns() }}",
    )
    docs = {"public.docs": ["id"]}
    first = [
        postgres_line("c", 100, {"id": 1, "title": "a", "body": "A"}),
        postgres_line("c", 110, {"id": 2, "title": "p", "body": "X"}),
        # Key 3 is first seen in an update that did not send its body.
        postgres_line("u", 150, {"id": 3, "title": "q", "body": unavailable}),
        postgres_line("u", 200, {"id": 1, "title": "b", "body": unavailable}),
    ]
    (dbt_project.inbox / "1.json").write_text("\n".join(first) + "\n")
    second = [
        postgres_line("u", 300, {"id": 2, "title": "p", "body": "Y"}),
        postgres_line("u", 400, {"id": 2, "title": "z", "body": unavailable}),
    ]
    (dbt_project.inbox / "2.json").write_text("\n".join(second) + "\n")
    dbt_project.land(docs)
    dbt_project.dbt("run", "--select", "docs")

    def mirrored():
        return [tuple(row) for row in spark.sql(
            f"select id, title, body from {dbt_project.schema}.docs order by id").collect()]

    assert mirrored() == [(1, "b", "A"), (2, "z", "Y"), (3, "q", None)]

    (dbt_project.inbox / "3.json").write_text(postgres_line("u", 500, {"id": 1, "title": "c", "body": unavailable}) + "\n")
    dbt_project.land(docs)
    dbt_project.dbt("run", "--select", "docs")
    assert mirrored() == [(1, "c", "A"), (2, "z", "Y"), (3, "q", None)]
