"""Databend-only behaviour: stream mode up to the licence check, the bulk landing sink.

The conformance tests (test_fixtures.py, test_oracle.py, the offset tests in
test_materialization.py) run on both engines through the conformance_project fixture.
"""

from __future__ import annotations

import shutil

import pytest

from conftest import FIXTURES
from harness.mirror_project import make_project
from python_jobs.landing import io
from python_jobs.landing.schemas import RAW_EVENT_SCHEMA
from test_materialization import postgres_line, run_error, write_model

PRODUCTS = {"inventory.products": ["id"]}
FLINK_MYSQL = FIXTURES / "flink" / "debezium-data-schema-exclude.txt"


@pytest.fixture
def databend_project(spark, tmp_path, databend_url):
    return make_project(spark, tmp_path, "databend_local")


def test_stream_mode_catches_up_then_creates_its_stream_which_needs_a_licence_here(databend_project):
    project = databend_project
    write_model(project, "products", "unique_key='id', source_table='inventory.products', change_source='stream'")
    shutil.copy(FLINK_MYSQL, project.inbox / "part-1.json")
    project.land(PRODUCTS)

    error = run_error(project.dbt("run", "--select", "products", expect_success=False))

    # The generated CREATE STREAM parsed and bound; the embedded engine has no Enterprise licence.
    assert "Need Commercial License" in error
    # Until the stream exists the mirror catches up through the raw snapshots, so it is complete...
    assert [row["id"] for row in project.query(f"select id from {project.schema}.products order by id")] == list(
        range(101, 111))
    # ...and its offset is a snapshot, not 'stream': the next run tries the stream again.
    offsets = project.query(f"select offset_snapshot from {project.schema}.cdc_merge_offsets")
    assert offsets and all(row["offset_snapshot"] != "stream" for row in offsets)


def test_stream_mode_is_refused_on_spark_before_any_sql(dbt_project, spark):
    write_model(dbt_project, "products", "unique_key='id', source_table='inventory.products', change_source='stream'")

    error = run_error(dbt_project.dbt("run", "--select", "products", expect_success=False))

    assert "change_source='stream' is for Databend targets" in error
    assert not spark.catalog.tableExists(f"{dbt_project.schema}.cdc_merge_offsets")


def test_an_unknown_change_source_is_a_config_error(databend_project):
    write_model(databend_project, "products", "unique_key='id', source_table='inventory.products', change_source='cdc'")

    error = run_error(databend_project.dbt("run", "--select", "products", expect_success=False))

    assert "change_source must be 'changes'" in error


def test_the_sink_loads_a_batch_once_and_the_summary_reports_events_per_second(databend_project, spark):
    project = databend_project
    shutil.copy(FLINK_MYSQL, project.inbox / "part-1.json")
    summary = project.land(PRODUCTS)
    raw = f"{project.raw_schema}.raw_events"
    assert project.query(f"select count(*) as events from {raw}")[0]["events"] == summary.counts["event"] == 16
    assert "events/s" in summary.line()

    # A micro-batch retried after its COPY INTO committed: same input files, nothing loaded twice.
    config = project.landing_config(PRODUCTS)
    sink = io.DatabendSink(config.databend_dsn_env, config.databend_stage_dir)
    landed_file = project.query(f"select landed_file from {raw} limit 1")[0]["landed_file"]
    retried = spark.createDataFrame([], RAW_EVENT_SCHEMA)
    assert sink.append_once(retried, raw, "query/0", [landed_file]) is False
    assert project.query(f"select count(*) as events from {raw}")[0]["events"] == 16


def test_numbers_beyond_float64_stay_exact(databend_project):
    project = databend_project
    line = (
        '{"before":null,"after":{"id":1,"amount":140026108793032.65,"ratio":0.1},'
        '"source":{"connector":"mysql","db":"shop","table":"orders","file":"mysql-bin.000001","pos":4,"row":0,'
        '"snapshot":"false","ts_ms":1767225600000},"op":"c","ts_ms":1767225600000}\n'
    )
    (project.inbox / "orders.json").write_text(line)
    project.land({"shop.orders": ["id"]})
    project.write_model(
        "orders", "unique_key='id', source_table='shop.orders'",
        "{{ cdc_merge.cdc_column('id', 'bigint') }}, {{ cdc_merge.cdc_column('amount', 'decimal(17,2)') }}, "
        "{{ cdc_merge.cdc_column('ratio', 'double') }}, {{ cdc_merge.cdc_metadata_columns() }}",
    )
    project.dbt("run", "--select", "orders")

    (row,) = project.query(f"select cast(amount as string) as amount, ratio from {project.schema}.orders")
    assert row == {"amount": "140026108793032.65", "ratio": 0.1}


def test_a_null_and_the_text_null_read_apart_through_dbt(databend_project):
    """dbt's Databend connection hands a NULL over as None and the text 'NULL' as that text, so no
    check or test can take one for the other (adapter/dbt/adapters/cdc_databend/null_values.py)."""
    result = databend_project.dbt("show", "--inline", "select cast(null as string) as n, 'NULL' as s, "
                                  "cast(null as int) as i, cast(null as timestamp) as t", "--limit", "1")
    table = result.result.results[0].agate_table
    assert [dict(zip(table.column_names, row.values())) for row in table] == [{"n": None, "s": "NULL", "i": None, "t": None}]


def test_a_raw_table_made_again_is_not_landed_into_with_the_old_checkpoint(databend_project):
    """A Databend raw table dropped and made again (dbt run-operation create_raw_tables makes it
    empty): the checkpoint lists the files landed into the old table, so a landing with it would skip
    them and the mirrors rebuilt from the new table would miss their rows. Told apart by table_id."""
    project = databend_project
    (project.inbox / "part-1.json").write_text("\n".join(FLINK_MYSQL.read_text().splitlines()[:4]) + "\n")
    assert project.land(PRODUCTS).counts["event"] == 4
    raw = f"{project.raw_schema}.raw_events"
    project.execute(f"drop table {raw}")
    project.dbt("run-operation", "create_raw_tables")
    shutil.copy(FLINK_MYSQL, project.inbox / "part-2.json")

    with pytest.raises(io.LandingError, match=r"is not the table .* landed into.*skip.*remove the checkpoint"):
        project.land(PRODUCTS)
    assert project.query(f"select count(*) as events from {raw}")[0]["events"] == 0
    # As the message says: without the checkpoint every file lands again, into the new table.
    shutil.rmtree(project.work_dir / "checkpoint")
    assert project.land(PRODUCTS).counts["event"] == 20
    # The checkpoint now belongs to the new table: the next landing goes on as usual.
    shutil.copy(FLINK_MYSQL, project.inbox / "part-3.json")
    assert project.land(PRODUCTS).counts["event"] == 16
    assert project.query(f"select count(*) as events from {raw}")[0]["events"] == 36


def test_a_statement_the_server_refuses_says_its_message_not_the_whole_response(databend_project, caplog):
    """A value the model's type cannot hold fails the run on Databend (docs/schema_changes.md): the
    error says the server's message and code, not its HTTP response of 1,500 characters (session,
    settings, progress counters, URIs) with every quote escaped twice."""
    project = databend_project
    (project.inbox / "a.json").write_text(postgres_line("c", 100, {"id": 1, "title": "héllo", "flag": 2}) + "\n")
    project.land({"public.docs": ["id"]})
    project.write_model("docs", "unique_key='id', source_table='public.docs'",
                        "{{ cdc_merge.cdc_columns({'id': 'int', 'title': 'string', 'flag': 'boolean'}) }}, "
                        "{{ cdc_merge.cdc_metadata_columns() }}")

    error = run_error(project.dbt("run", "--select", "docs", expect_success=False))

    assert "Databend refused the statement: InvalidCast while evaluating function `to_boolean('2')`" in error
    assert "(error code 1006, BadArguments; query id " in error
    assert "session_id" not in error and "scan_progress" not in error and "failed to query" not in error
    # databend-py's own record of it (the whole statement and response) is not printed either.
    assert "failed to query" not in caplog.text
