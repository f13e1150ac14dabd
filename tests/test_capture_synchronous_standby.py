"""The PostgreSQL capture on a server whose synchronous standby does not answer
(docs/online_snapshots.md): the applications commit with synchronous_commit = local, and so do the
capture's own messages (a page's watermarks, heartbeats, the notice of a column added). Committed
with the server's default they waited for the standby for ever: the online snapshot never finished
and the stream stopped. Each capture here must end within a minute, and the mirror equal the source."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import PROJECT_DIR
from harness.postgres_server import create_capture_user
from python_jobs.capture.postgres_records import file_events
from python_jobs.capture.snapshot_requests import requests_folder, write_request
from test_capture_faults import following_capture, postgres, stopped, wait_for  # noqa: F401 - postgres is a fixture
from test_online_snapshots import execute, mirror_and_source_rows

# What a capture may take here; one waiting for the standby takes for ever.
BOUND_SECONDS = 60


def execute_locally(server, sql: str) -> None:
    """The application's session: its commits wait for no standby."""
    execute(server, f"set synchronous_commit = local; {sql}")


def position(server, of: str) -> int:
    """A position (pg_lsn) as a number; of: the SQL that reads it."""
    connection = server.connect()
    with connection.cursor() as cursor:
        cursor.execute(f"select {of} - '0/0'::pg_lsn")
        found = int(cursor.fetchone()[0])
    connection.close()
    return found


SLOT_CONFIRMED = "(select confirmed_flush_lsn from pg_replication_slots where slot_name = 'standby')"


def set_standby_names(server, names: str) -> None:
    connection = server.connect()
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute("alter system set synchronous_standby_names = %s", (names,))
        cursor.execute("select pg_reload_conf()")
    connection.close()


def test_the_capture_commits_its_own_messages_without_the_standby(postgres, dbt_project, tmp_path):  # noqa: F811
    execute(postgres, "create schema shop; create table shop.items (id int primary key, code text, qty int);"
                      "insert into shop.items select g, 'c' || g, g from generate_series(1, 30) g")
    dsn = create_capture_user(postgres, ["shop"])
    dbt_project.write_model("items", "unique_key='id', source_table='shop.items', on_schema_change='sync_all_columns'",
                            "{{ cdc_merge.cdc_columns({'id': 'int', 'code': 'string', 'qty': 'int'}) }}, "
                            "{{ cdc_merge.cdc_metadata_columns() }}")
    state = tmp_path / "capture-state.json"
    args = ["--dsn", dsn, "--tables", "shop.items", "--slot", "standby", "--out", str(dbt_project.inbox),
            "--state", str(state), "--snapshot", "online", "--snapshot-page-rows", "7"]
    set_standby_names(postgres, "absent_standby")
    try:
        # A run without --follow: its heartbeat, then the table in pages, each between two watermarks.
        first = subprocess.run([sys.executable, "-m", "python_jobs.capture.postgres", *args], cwd=PROJECT_DIR,
                               capture_output=True, text=True, timeout=BOUND_SECONDS)
        assert first.returncode == 0, first.stderr
        assert json.loads(state.read_text())["snapshots"] == []

        # Following: heartbeats every half second, a column added (its notice), a table read again on request.
        execute_locally(postgres, "update shop.items set qty = -qty where id % 3 = 0;"
                                  "delete from shop.items where id > 25; insert into shop.items values (100, 'new', 1)")
        follow = ["--max-wait-seconds", "0.3", "--heartbeat-seconds", "0.5"]
        with following_capture("postgres", *args, *follow) as following:
            execute_locally(postgres, "alter table shop.items add column note text")
            wait_for(lambda: any(event.get("tableChanges") for path in dbt_project.inbox.glob("*.json")
                                 for event in file_events(path)), timeout=BOUND_SECONDS)
            pages = len(list(dbt_project.inbox.glob("*pages*")))
            write_request(state, "shop.items", None, None)
            wait_for(lambda: not list(requests_folder(state).glob("*.json"))  # taken, then read
                     and not json.loads(state.read_text())["snapshots"]
                     and len(list(dbt_project.inbox.glob("*pages*"))) > pages, timeout=BOUND_SECONDS)
            execute_locally(postgres, "update shop.items set code = 'after' where id <= 5")
            # Past the last commit's own position: only a heartbeat after it takes the slot there.
            written_to = position(postgres, "pg_current_wal_lsn()")
            wait_for(lambda: position(postgres, SLOT_CONFIRMED) >= written_to, timeout=BOUND_SECONDS)
            stopped(following)
    finally:
        set_standby_names(postgres, "")  # a commit still waiting is let go, or the server would not stop

    landed = dbt_project.land({"shop.items": ["id"]})
    assert "quarantined 0 lines" in landed.status(), landed.status()
    dbt_project.dbt("run", "--select", "items")
    mirrored, source = mirror_and_source_rows(dbt_project, postgres, "items", "shop.items", "id, code, qty")
    assert ("5", "after", "5") in source and ("100", "new", "1") in source and ("26", "c26", "26") not in source
    assert mirrored == source
