"""A partitioned PostgreSQL table mirrored as one table (python_jobs/capture/postgres_partitions.py),
captured by the least-privileged user the docs prescribe, while its partitions change the way
operators change them: rows moved between partitions, a partition created and written to while the
capture runs (one-shot and --follow), a table with rows attached, a partition detached, one
partition truncated and then all. After each, the mirror is compared with the source table by the
user's own check (cdc_verify)."""

from __future__ import annotations

import json
import time

import pytest

from harness.postgres_server import create_capture_user
from python_jobs.capture import postgres as capture_postgres
from python_jobs.capture.output import CaptureError
from python_jobs.capture.postgres_records import file_events
from test_capture_faults import following_capture, postgres, stopped  # noqa: F401 - postgres is a fixture
from test_online_snapshots import execute

COLUMNS = "{{ cdc_merge.cdc_columns({'id': 'int', 'region': 'string', 'amount': 'decimal(10,2)'}) }}, " \
          "{{ cdc_merge.cdc_metadata_columns() }}"
SETUP = """
create schema shop;
create table shop.events (id int primary key, region text, amount numeric(10,2)) partition by range (id);
create table shop.events_low partition of shop.events for values from (0) to (100);
create table shop.events_mid partition of shop.events for values from (100) to (200);
create table shop.events_high partition of shop.events for values from (200) to (300) partition by range (id);
create table shop.events_high_a partition of shop.events_high for values from (200) to (250);
create table shop.events_high_b partition of shop.events_high for values from (250) to (300);
insert into shop.events select g, 'r' || (g % 3), g * 1.5 from generate_series(1, 299, 7) as g;
"""


def apply_and_verify(project, dsn: str) -> None:
    landed = project.land({"shop.events": ["id"]})
    assert "quarantined 0 lines" in landed.status(), landed.status()
    project.dbt("run", "--select", "events")
    project.dbt("run-operation", "cdc_verify", "--args", json.dumps({"source": {"postgres": dsn}, "select": ["events"]}))
    report = [line for line in project.dbt_log().splitlines() if " vs shop.events" in line][-1]
    assert ": equal: " in report, report


def streamed_ids(out) -> set[int]:
    """The ids of the inserts the stream wrote (not an online snapshot's reads)."""
    return {int(event["after"]["id"]) for path in out.glob("*.json") if "pages" not in path.name
            for event in file_events(path) if event.get("op") == "c"}


def test_a_partitioned_table_is_one_mirror_while_its_partitions_change(postgres, dbt_project, tmp_path, caplog):
    execute(postgres, SETUP)
    dsn = create_capture_user(postgres, ["shop"])
    dbt_project.write_model("events", "unique_key='id', source_table='shop.events'", COLUMNS)
    config = capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.events",), slot="parted", out=dbt_project.inbox,
                                            state=tmp_path / "capture-state.json", page_rows=7)
    capture_postgres.run(config)
    apply_and_verify(dbt_project, dsn)

    # Changes in every leaf, a row moved to another partition by a key change; a partition created
    # and written to before the capture reads on: its inserts come from the stream.
    execute(postgres, "insert into shop.events values (2, 'new', 1), (102, 'new', 2), (202, 'new', 3), (262, 'new', 4);"
                      "update shop.events set id = 150 where id = 43; update shop.events set amount = 0 where id < 300;"
                      "delete from shop.events where id = 253;"
                      "create table shop.events_more partition of shop.events for values from (300) to (400);"
                      "insert into shop.events select g, 'more', g from generate_series(300, 310) as g")
    capture_postgres.run(config)
    assert set(range(300, 311)) | {2, 102, 202, 262, 150} <= streamed_ids(dbt_project.inbox)
    apply_and_verify(dbt_project, dsn)

    # A table with rows attached as a partition: they enter the table without a change in the log.
    execute(postgres, "create table shop.events_old (like shop.events including all);"
                      "insert into shop.events_old select g, 'old', g from generate_series(400, 420) as g;"
                      "alter table shop.events attach partition shop.events_old for values from (400) to (500)")
    assert capture_postgres.run(config).snapshot_rows == 21
    apply_and_verify(dbt_project, dsn)

    # A partition detached: its rows leave the table (read again, whose range records delete them).
    execute(postgres, "alter table shop.events detach partition shop.events_low")
    capture_postgres.run(config)
    apply_and_verify(dbt_project, dsn)
    assert not dbt_project.query(f"select id from {dbt_project.schema}.events where id < 100")

    # One partition truncated (read again), then every one (the mirror emptied), a row after it.
    execute(postgres, "truncate shop.events_mid")
    capture_postgres.run(config)
    apply_and_verify(dbt_project, dsn)
    execute(postgres, "truncate shop.events; insert into shop.events values (107, 'after', 7)")
    capture_postgres.run(config)
    apply_and_verify(dbt_project, dsn)
    assert [row["id"] for row in dbt_project.query(f"select id from {dbt_project.schema}.events")] == [107]

    # Following: a partition created and written to while the stream runs; and one attached while
    # the capture was stopped, noticed when it starts.
    args = ["--dsn", dsn, "--tables", "shop.events", "--slot", "parted", "--out", str(dbt_project.inbox),
            "--state", str(config.state), "--max-wait-seconds", "0.2"]
    with following_capture("postgres", *args) as following:
        time.sleep(2)
        execute(postgres, "create table shop.events_next partition of shop.events for values from (500) to (600);"
                          "insert into shop.events select g, 'next', g from generate_series(500, 505) as g;"
                          "update shop.events set amount = 1 where id = 107")
        deadline = time.monotonic() + 30
        while not set(range(500, 506)) <= streamed_ids(dbt_project.inbox) and time.monotonic() < deadline:
            time.sleep(0.2)
        stderr = stopped(following)
    assert "the partitions of shop.events changed" in stderr, stderr
    execute(postgres, "create table shop.events_late (like shop.events including all);"
                      "insert into shop.events_late values (650, 'late', 1);"
                      "alter table shop.events attach partition shop.events_late for values from (600) to (700)")
    capture_postgres.run(config)
    apply_and_verify(dbt_project, dsn)
    assert json.loads(config.state.read_text())["partitions"] == {"shop.events": [
        "shop.events_high_a", "shop.events_high_b", "shop.events_late", "shop.events_mid", "shop.events_more",
        "shop.events_next", "shop.events_old"]}


def test_a_partition_attached_from_a_schema_the_capture_may_not_read_says_what_to_grant(postgres, tmp_path):  # noqa: F811
    execute(postgres, SETUP)
    dsn = create_capture_user(postgres, ["shop"])
    config = capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.events",), slot="attached_elsewhere",
                                            out=tmp_path / "out", state=tmp_path / "capture-state.json")
    capture_postgres.run(config)
    execute(postgres, "create schema archive; create table archive.events_old (id int primary key, region text, amount numeric(10,2));"
                      "insert into archive.events_old values (301, 'r1', 1.5);"
                      "alter table shop.events attach partition archive.events_old for values from (300) to (400)")
    with pytest.raises(CaptureError) as refused:
        capture_postgres.run(config)
    user = dict(part.split("=", 1) for part in dsn.split())["user"]
    # Was only "... refused: permission denied for schema archive".
    assert "permission denied for schema archive" in str(refused.value), refused.value
    assert f"grant usage on schema archive to {user}; grant select on all tables in schema archive to {user}" in str(refused.value)
