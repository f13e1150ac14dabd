"""A mirror's unique_key column cast to another type than cdc-scaffold writes: a bigint key as
'string' (an online snapshot's range of keys 10 to 20 taken in text order deleted the rows of keys
100 to 199 and 2, which the source has: 101 rows gone, cdc-verify found them missing), or a text key
as a decimal. The run now stops before any of the range's deletes, saying what to change."""

from __future__ import annotations

from harness.postgres_server import create_capture_user
from python_jobs.capture import postgres as capture_postgres
from python_jobs.capture.snapshot_requests import write_request
from test_capture_faults import postgres  # noqa: F401 - fixture
from test_config_before_sql import run_message
from test_online_snapshots import execute


def mirrored(postgres, dbt_project, tmp_path, table: str, key: str, source_type: str, model_type: str):  # noqa: F811
    """shop.<table> of 230 rows (key 1 to 230 as source_type), captured by the prescribed user and mirrored by
    a model that types its key as model_type; the capture's config."""
    execute(postgres, f"create schema shop; create table shop.{table} ({key} {source_type} primary key, name text);"
                      f"insert into shop.{table} select g::{source_type}, 'c' || g from generate_series(1, 230) g")
    dbt_project.write_model(table, f"unique_key='{key}', source_table='shop.{table}'",
                            f"{{{{ cdc_merge.cdc_columns({{'{key}': '{model_type}', 'name': 'string'}}) }}}}, "
                            "{{ cdc_merge.cdc_metadata_columns() }}")
    config = capture_postgres.CaptureConfig(dsn=create_capture_user(postgres, ["shop"]), tables=(f"shop.{table}",),
                                            slot=f"{table}_key_types", out=dbt_project.inbox, state=tmp_path / "capture-state.json")
    capture_postgres.run(config)
    dbt_project.land({f"shop.{table}": [key]})
    dbt_project.dbt("run", "--select", table)
    return config


def read_again_and_run(dbt_project, config, table: str, key: str, bounds: tuple[str, str]) -> tuple[int, str]:
    """The keys from bounds[0] through bounds[1] read again, landed and applied: the rows read, the run's message."""
    write_request(config.state, f"shop.{table}", [bounds[0]], [bounds[1]])
    read = capture_postgres.run(config).snapshot_rows
    dbt_project.land({f"shop.{table}": [key]})
    return read, run_message(dbt_project.dbt("run", "--select", table, expect_success=False))


def test_a_range_read_again_of_a_number_key_the_model_casts_to_text_stops_before_deleting(postgres, dbt_project, tmp_path):  # noqa: F811
    config = mirrored(postgres, dbt_project, tmp_path, "customers", "id", "bigint", "string")
    read, message = read_again_and_run(dbt_project, config, "customers", "id", ("10", "20"))
    assert read == 11
    assert ("cdc_merge model 'customers': unique_key column id is string in the model but a number at the source "
            "(an online snapshot read a range of its keys again, from 10 to 20)") in message, message
    assert "dbt run --full-refresh --select customers" in message
    assert dbt_project.query(f"select count(*) as n from {dbt_project.schema}.customers")[0]["n"] == 230


def test_a_range_read_again_of_a_text_key_the_model_casts_to_a_number_stops_before_deleting(postgres, dbt_project, tmp_path):  # noqa: F811
    """Codes '1' to '230' as text, cast to a decimal in the model: a range of '10' to '3' in the source's
    order holds '10' to '29', '100' to '230' and '3'; as numbers the mirror's range of 3 to 10 holds 3 to 10,
    so the rows of 4 to 9, which the source has and the range did not read, would be deleted."""
    config = mirrored(postgres, dbt_project, tmp_path, "codes", "code", "text", "decimal(10,0)")
    execute(postgres, "delete from shop.codes where code = '15'")  # so the range has a row to remove, beside those it must keep
    read, message = read_again_and_run(dbt_project, config, "codes", "code", ("10", "3"))
    assert read > 0
    assert ("cdc_merge model 'codes': unique_key column code is decimal(10,0) in the model but ordered by its text at the source "
            "(an online snapshot read a range of its keys again, from 10 to 3)") in message, message
    # Nothing the source has was deleted (the streamed delete of '15' applied before the range stopped the run).
    assert sorted(int(row["code"]) for row in dbt_project.query(f"select code from {dbt_project.schema}.codes")) == [
        code for code in range(1, 231) if code != 15]
