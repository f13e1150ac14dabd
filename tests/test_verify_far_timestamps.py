"""cdc-verify of a PostgreSQL table whose timestamps and dates lie past the year 9999, up to PostgreSQL's
last (294276 for a timestamp, 5874897 for a date): a mirror on Spark holds the timestamps up to its own
last instant (294247-01-10) and null after it, and every such date; cdc-verify finds the mirror equal
by the checksums alone, then reports a value changed behind the pipeline's back."""

from __future__ import annotations

from harness.postgres_server import create_capture_user
from python_jobs import scaffold
from python_jobs.capture import postgres as capture_postgres
from test_capture_faults import postgres  # noqa: F401 - fixture
from test_online_snapshots import execute
from test_verify_types import land_and_apply, verify


def test_timestamps_past_spark_s_last_verify_equal(postgres, dbt_project, monkeypatch):  # noqa: F811
    execute(postgres, "create schema shop; create table shop.far (id int primary key, tz timestamptz, ts timestamp, d date); "
                      "insert into shop.far values (1, '294276-12-31 23:59:59+00', '294276-12-31 23:59:59', '5874897-12-31'), "
                      "(2, '10000-01-01 00:00:00+00', '294247-01-10 04:00:54.775806', '10000-01-01'), "
                      "(3, '2026-01-01 00:00:00+00', '294247-01-10 04:00:54.775808', '0099-06-01')")
    dsn = create_capture_user(postgres, ["shop"])
    config = capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.far",), slot="far", out=dbt_project.inbox,
                                            state=dbt_project.work_dir / "state.json")
    capture_postgres.run(config)
    (table,) = scaffold.postgres_tables(dsn, ["shop.far"])
    model = land_and_apply(dbt_project, table)
    mirrored = dbt_project.query(f"select id, cast(tz as string) as tz, cast(ts as string) as ts, cast(d as string) as d "
                                 f"from {dbt_project.schema}.{model} order by id")
    assert [(row["id"], row["tz"], row["ts"], row["d"]) for row in mirrored] == [
        (1, None, None, "+5874897-12-31"), (2, "+10000-01-01 00:00:00", "+294247-01-10 04:00:54.775806", "+10000-01-01"),
        (3, "2026-01-01 00:00:00", None, "0099-06-01")]
    assert verify(dbt_project, model, ["--postgres", dsn]) == 0, dbt_project.dbt_log()[-3000:]
    log = dbt_project.dbt_log()
    assert "vs shop.far: equal: 3 rows" in log and "key ranges, 0 rows compared one by one" in log, log[-3000:]
    dbt_project.execute(f"update {dbt_project.schema}.{model} set tz = cast('2026-01-02' as timestamp) where id = 3")
    dbt_project.execute(f"update {dbt_project.schema}.{model} set ts = cast('2026-01-02' as timestamp) where id = 2")
    assert verify(dbt_project, model, ["--postgres", dsn], "--leaf-rows", "1") == 1, dbt_project.dbt_log()[-3000:]
    log = dbt_project.dbt_log()
    assert 'key ["3"]: tz: source' in log and 'key ["2"]: ts: source' in log and 'key ["2"]: tz' not in log, log[-3000:]
