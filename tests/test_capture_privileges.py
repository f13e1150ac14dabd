"""A PostgreSQL capture user short of a privilege the docs prescribe (docs/your_project.md), on a real
PostgreSQL 15: the capture and cdc-init say what to grant before anything is written, and the
capture runs once it is granted."""

from __future__ import annotations

import sys

from conftest import PROJECT_DIR
from test_capture_faults import capture, captured_ids, pg_setup, postgres, run_init  # noqa: F401 - postgres is a fixture


def test_postgres_user_short_of_a_privilege_is_told_what_to_grant_before_anything_is_written(postgres, tmp_path):  # noqa: F811
    # The server refuses it only as the slot's stream starts, with a FATAL that read as a lost connection.
    pg_setup(postgres, 2)
    with postgres.connect() as connection, connection.cursor() as cursor:
        cursor.execute("create role reader login")
        cursor.execute("grant usage on schema shop to reader; grant select on shop.items to reader")
    args = ["--dsn", postgres.dsn.replace("user=postgres", "user=reader"), "--tables", "shop.items", "--slot", "reader",
            "--out", str(tmp_path / "out"), "--state", str(tmp_path / "state.json")]

    refused = capture("postgres", *args)

    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
    assert "has no REPLICATION attribute" in refused.stderr and "alter role reader replication" in refused.stderr
    assert "lost the connection" not in refused.stderr
    assert not (tmp_path / "state.json").exists() and not list((tmp_path / "out").glob("*.json"))
    with postgres.connect() as connection, connection.cursor() as cursor:
        cursor.execute("alter role reader replication")
    assert capture("postgres", *args).returncode == 0
    assert sorted(captured_ids(tmp_path / "out")) == [1, 2]
    # cdc-init tells a table the user may not read from one that is not there.
    with postgres.connect() as connection, connection.cursor() as cursor:
        cursor.execute("create table shop.hidden (id int primary key)")
    init = [sys.executable, "-m", "python_jobs.starter.init", "--package-local", str(PROJECT_DIR),
            "--postgres", args[1]]
    hidden = run_init([*init, "--tables", "shop.hidden", str(tmp_path / "p1")], {})
    missing = run_init([*init, "--tables", "shop.gone", str(tmp_path / "p2")], {})
    assert hidden.returncode == 2 and "Traceback" not in hidden.stderr, hidden.stderr
    assert "table shop.hidden exists, but user reader may not read it: grant select on shop.hidden to reader" in hidden.stderr
    assert missing.returncode == 2 and "table shop.gone does not exist" in missing.stderr, missing.stderr
