"""A captured PostgreSQL table set UNLOGGED, changed, and set LOGGED again: while it is unlogged its
changes write no WAL, so the log the capture decodes has none of them. The capture warns, naming the
table, while it is unlogged, and reads it again online once it is logged (its range records delete
the rows that left); also when SET UNLOGGED, the changes and SET LOGGED all fall between two of its
checks, in one transaction while it follows, or while it was stopped (a new relfilenode). Captured
by the least-privileged user, one-shot and --follow; after each, the mirror is compared with the
source table by the user's own check (cdc_verify)."""

from __future__ import annotations

import contextlib
import json
import logging

from harness.postgres_server import create_capture_user
from python_jobs.capture import postgres as capture_postgres
from python_jobs.capture.postgres_persistence import unlogged_warnings
from python_jobs.status.status_files import read_capture_status
from test_capture_faults import following_capture, postgres, stopped, wait_for  # noqa: F401 - postgres is a fixture
from test_online_snapshots import execute
from test_postgres_partitions import apply_and_verify
from test_postgres_table_replaced import COLUMNS, mirror_ids, written_ids

# Changes the log cannot carry while the table is unlogged: inserts, updates, deletes.
UNLOGGED_CHANGES = ("insert into shop.events select g, 'unlogged', g from generate_series({first}, {first} + 9) as g;"
                    "update shop.events set amount = amount + 100 where id % 7 = 0;"
                    "delete from shop.events where id in (select id from shop.events where id < {first} order by id limit 3)")


@contextlib.contextmanager
def warnings_logged():
    """The capture's warnings while in the block (the dbt project's logging leaves caplog none)."""
    warned: list[str] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: warned.append(record.getMessage())
    logger = logging.getLogger("cdc_merge.capture")
    logger.addHandler(handler)
    try:
        yield warned
    finally:
        logger.removeHandler(handler)


def test_changes_while_a_table_was_unlogged_reach_the_mirror(postgres, dbt_project, tmp_path):
    execute(postgres, "create schema shop; create table shop.events (id int primary key, region text, amount numeric(10,2));"
                      "insert into shop.events select g, 'r' || (g % 3), g * 1.5 from generate_series(1, 60) as g")
    dsn = create_capture_user(postgres, ["shop"])
    dbt_project.write_model("events", "unique_key='id', source_table='shop.events'", COLUMNS)
    config = capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.events",), slot="unlogged", out=dbt_project.inbox,
                                            state=tmp_path / "capture-state.json", page_rows=16)
    capture_postgres.run(config)

    # One-shot: the capture runs while the table is unlogged (it warns), and again once it is logged.
    execute(postgres, "alter table shop.events set unlogged")
    execute(postgres, UNLOGGED_CHANGES.format(first=100))
    with warnings_logged() as warned:
        capture_postgres.run(config)
    assert len(warned) == 1 and "shop.events" in warned[0] and "SET LOGGED" in warned[0], warned
    execute(postgres, UNLOGGED_CHANGES.format(first=110))
    execute(postgres, "alter table shop.events set logged; insert into shop.events values (120, 'logged', 1)")
    capture_postgres.run(config)
    apply_and_verify(dbt_project, dsn)
    assert {100, 119, 120} <= mirror_ids(dbt_project) and 1 not in mirror_ids(dbt_project)

    # Unlogged, changed and logged again while the capture was down: a new relfilenode, read again.
    execute(postgres, "alter table shop.events set unlogged")
    execute(postgres, UNLOGGED_CHANGES.format(first=200))
    execute(postgres, "alter table shop.events set logged")
    capture_postgres.run(config)

    # Following: unlogged (it warns), changed, logged; then all three in one transaction, between two checks.
    args = ["--dsn", dsn, "--tables", "shop.events", "--slot", "unlogged", "--out", str(dbt_project.inbox),
            "--state", str(config.state), "--max-wait-seconds", "0.2", "--progress-seconds", "0.5"]
    with following_capture("postgres", *args) as following:
        execute(postgres, "alter table shop.events set unlogged")
        wait_for(lambda: "\"u\"" in json.dumps(json.loads(config.state.read_text()).get("persistence")))
        # The status file cdc-run's page, metrics and cdc-status read says so while it lasts.
        wait_for(lambda: read_capture_status("c", config.state).warnings == unlogged_warnings(["shop.events"]))
        execute(postgres, UNLOGGED_CHANGES.format(first=300))
        execute(postgres, "alter table shop.events set logged")
        wait_for(lambda: {300, 309} <= written_ids(dbt_project.inbox))
        wait_for(lambda: read_capture_status("c", config.state).warnings == [])
        execute(postgres, "begin; alter table shop.events set unlogged;" + UNLOGGED_CHANGES.format(first=400)
                          + "; alter table shop.events set logged; commit")
        wait_for(lambda: {400, 409} <= written_ids(dbt_project.inbox))
        stderr = stopped(following)
    assert stderr.count("is unlogged") == 1 and "SET LOGGED" in stderr, stderr
    apply_and_verify(dbt_project, dsn)
    assert {200, 300, 409} <= mirror_ids(dbt_project)
