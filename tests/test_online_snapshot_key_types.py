"""A mirror's unique_key column cast to another type than cdc-scaffold writes (a bigint key as
'string'): an online snapshot's range of keys 10 to 20 taken in text order deleted the rows of keys
100 to 199 and 2, which the source has (101 rows gone; cdc-verify found them missing). The run now
stops before any of the range's deletes, saying what to change."""

from __future__ import annotations

from harness.postgres_server import create_capture_user
from python_jobs.capture import postgres as capture_postgres
from python_jobs.capture.snapshot_requests import write_request
from test_capture_faults import postgres  # noqa: F401 - fixture
from test_config_before_sql import run_message
from test_online_snapshots import execute


def test_a_range_read_again_of_a_number_key_the_model_casts_to_text_stops_before_deleting(postgres, dbt_project, tmp_path):  # noqa: F811
    execute(postgres, "create schema shop; create table shop.customers (id bigint primary key, name text);"
                      "insert into shop.customers select g, 'c' || g from generate_series(1, 230) g")
    dsn = create_capture_user(postgres, ["shop"])
    dbt_project.write_model("customers", "unique_key='id', source_table='shop.customers'",
                            "{{ cdc_merge.cdc_columns({'id': 'string', 'name': 'string'}) }}, {{ cdc_merge.cdc_metadata_columns() }}")
    config = capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.customers",), slot="key_types", out=dbt_project.inbox,
                                            state=tmp_path / "capture-state.json")
    capture_postgres.run(config)
    dbt_project.land({"shop.customers": ["id"]})
    dbt_project.dbt("run", "--select", "customers")

    write_request(config.state, "shop.customers", ["10"], ["20"])
    assert capture_postgres.run(config).snapshot_rows == 11
    dbt_project.land({"shop.customers": ["id"]})
    result = dbt_project.dbt("run", "--select", "customers", expect_success=False)

    message = run_message(result)
    assert ("cdc_merge model 'customers': unique_key column id is string in the model but a number at the source "
            "(an online snapshot read a range of its keys again, from 10 to 20)") in message, message
    assert "dbt run --full-refresh --select customers" in message
    assert dbt_project.query(f"select count(*) as n from {dbt_project.schema}.customers")[0]["n"] == 230


def test_a_range_read_again_of_a_text_key_the_model_casts_to_a_number_stops_before_deleting(postgres, dbt_project, tmp_path):  # noqa: F811
    """Codes '1' to '230' as text, cast to a decimal in the model: a range of '10' to '3' in the source's
    order holds '10' to '29', '100' to '230' and '3'; as numbers the mirror's range of 3 to 10 holds 3 to 10,
    so the rows of 4 to 9, which the source has and the range did not read, would be deleted."""
    execute(postgres, "create schema shop; create table shop.codes (code text primary key, name text);"
                      "insert into shop.codes select g::text, 'c' || g from generate_series(1, 230) g")
    dsn = create_capture_user(postgres, ["shop"])
    dbt_project.write_model("codes", "unique_key='code', source_table='shop.codes'",
                            "{{ cdc_merge.cdc_columns({'code': 'decimal(10,0)', 'name': 'string'}) }}, {{ cdc_merge.cdc_metadata_columns() }}")
    config = capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.codes",), slot="text_key_types", out=dbt_project.inbox,
                                            state=tmp_path / "capture-state.json")
    capture_postgres.run(config)
    dbt_project.land({"shop.codes": ["code"]})
    dbt_project.dbt("run", "--select", "codes")
    execute(postgres, "delete from shop.codes where code = '15'")  # so the range has a row to remove, beside those it must keep

    write_request(config.state, "shop.codes", ["10"], ["3"])
    assert capture_postgres.run(config).snapshot_rows > 0
    dbt_project.land({"shop.codes": ["code"]})
    result = dbt_project.dbt("run", "--select", "codes", expect_success=False)

    message = run_message(result)
    assert ("cdc_merge model 'codes': unique_key column code is decimal(10,0) in the model but ordered by its text at the source "
            "(an online snapshot read a range of its keys again, from 10 to 3)") in message, message
    # Nothing the source has was deleted (the streamed delete of '15' applied before the range stopped the run).
    assert sorted(int(row["code"]) for row in dbt_project.query(f"select code from {dbt_project.schema}.codes")) == [
        code for code in range(1, 231) if code != 15]
