"""A captured table's REPLICA IDENTITY set to NOTHING and back to DEFAULT between two of the capture's
checks, on a plain table and on one leaf partition of a partitioned table: wal2json drops the updates
and deletes made meanwhile (a WARNING to the decoding session), which the catalog no longer shows. The
capture reads such a table again online (python_jobs/capture/postgres_skipped.py), one-shot and with
--follow, so each mirror equals its source table."""

from __future__ import annotations

from harness.postgres_server import create_capture_user
from python_jobs.capture import postgres as capture_postgres
from test_capture_faults import following_capture, postgres, stopped, wait_for  # noqa: F401 - postgres is a fixture
from test_online_snapshots import execute
from test_postgres_key_recreated import assert_mirrors_equal_sources
from test_postgres_partitions import streamed_ids

TABLES = ("shop.plain", "shop.parted")
SETUP = """
create schema shop;
create table shop.plain (id int primary key, n int);
create table shop.parted (id int primary key, n int) partition by range (id);
create table shop.parted_low partition of shop.parted for values from (0) to (100);
create table shop.parted_high partition of shop.parted for values from (100) to (1000);
insert into shop.plain select g, g from generate_series(1, 20) as g;
insert into shop.parted select g, g from generate_series(1, 20) as g;
insert into shop.parted select g, g from generate_series(101, 120) as g;
"""


def changes_without_identity(server, first: int) -> None:
    """An update, a delete and a key change of each table while its (or a leaf's) identity logs no old key."""
    execute(server, "alter table shop.plain replica identity nothing; alter table shop.parted_low replica identity nothing")
    for table in TABLES:
        execute(server, f"update {table} set n = -n where id = {first}; delete from {table} where id = {first + 1}; "
                        f"update {table} set id = {first + 50} where id = {first + 2}")
    execute(server, "alter table shop.plain replica identity default; alter table shop.parted_low replica identity default")


def test_changes_while_the_identity_logged_no_key_reach_the_mirrors(postgres, dbt_project, tmp_path):  # noqa: F811
    execute(postgres, SETUP)
    dsn = create_capture_user(postgres, ["shop"])
    config = capture_postgres.CaptureConfig(dsn=dsn, tables=TABLES, slot="identity_set_back", out=dbt_project.inbox,
                                            state=tmp_path / "capture-state.json")
    capture_postgres.run(config)
    changes_without_identity(postgres, 1)
    assert capture_postgres.run(config).snapshot_rows == 19 + 39
    assert_mirrors_equal_sources(postgres, dbt_project, dsn, TABLES)

    # Following: the same between two of its files; a row inserted after them says they were decoded.
    args = ["--dsn", dsn, "--tables", ",".join(TABLES), "--slot", config.slot, "--out", str(dbt_project.inbox),
            "--state", str(config.state), "--max-wait-seconds", "0.2"]
    with following_capture("postgres", *args) as following:
        execute(postgres, "insert into shop.plain values (900, 0)")
        wait_for(lambda: 900 in streamed_ids(dbt_project.inbox))
        changes_without_identity(postgres, 11)
        execute(postgres, "insert into shop.plain values (901, 0)")
        wait_for(lambda: 901 in streamed_ids(dbt_project.inbox))
        stderr = stopped(following)
    assert "shop.plain: changes made while its replica identity" in stderr, stderr
    assert "shop.parted: changes made while its replica identity" in stderr, stderr
    capture_postgres.run(config)  # the reads the stopped capture asked for, if it did not finish them
    assert_mirrors_equal_sources(postgres, dbt_project, dsn, TABLES)
