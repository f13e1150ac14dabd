"""A captured table's primary key changes its columns while the pipeline runs, on a real PostgreSQL 15 and
MariaDB, the mirror's model and the landing config still on the old key (id): widened to (id, region),
then rows that share an id; moved to (code), then updates of id; dropped. The capture stops naming the
table, both keys and what to change, before it writes a change the old key would merge, so the mirror
holds the source as it was; cdc-verify says the same instead of comparing rows by a key the source no
longer has. Done as the message says (the key in the landing config and the model's unique_key, the
capture run once with --resnapshot, dbt run), the mirror equals the source table again, and follows it:
on Spark, and on Databend too for the key widened on MariaDB."""

from __future__ import annotations

import json
import time
from dataclasses import replace

import pytest

from harness.mariadb_server import create_mariadb_capture_user
from harness.postgres_server import create_capture_user
from python_jobs.capture import mysql as capture_mysql
from python_jobs.capture import postgres as capture_postgres
from python_jobs.capture.mysql_pages import SIGNAL_TABLE, SIGNAL_TABLE_DDL
from python_jobs.capture.output import CaptureError
from test_capture_faults import following_capture, mariadb, postgres, wait_for  # noqa: F401 - fixtures
from test_source_schema_changes import source_rows as table_rows

COLUMNS = ("{{ cdc_merge.cdc_columns({'id': 'int', 'region': 'string', 'code': 'string', 'n': 'int'}) }}, "
           "{{ cdc_merge.cdc_metadata_columns() }}")
CREATE = ("create table shop.t (id int primary key, region varchar(10) not null, code varchar(10) not null, n int)",
          "insert into shop.t values (1, 'eu', 'c1', 1), (2, 'eu', 'c2', 2), (3, 'eu', 'c3', 3)")
FIRST = [(1, "eu", "c1", 1), (2, "eu", "c2", 2), (3, "eu", "c3", 3)]
# Each change: its ALTER TABLE on PostgreSQL and on MariaDB, the changes after it, and the key the table has then.
CHANGES = {
    "widened": ("alter table shop.t drop constraint t_pkey, add primary key (id, region)",
                "alter table shop.t drop primary key, add primary key (id, region)",
                ("insert into shop.t values (1, 'us', 'c9', 9)",
                 "update shop.t set n = 20 where id = 2 and region = 'eu'",
                 "insert into shop.t values (2, 'us', 'c10', 10)"), ["id", "region"]),
    "moved": ("alter table shop.t drop constraint t_pkey, add primary key (code)",
              "alter table shop.t drop primary key, add primary key (code)",
              ("update shop.t set id = 7 where code = 'c1'", "update shop.t set id = 2 where code = 'c3'",
               "insert into shop.t values (2, 'us', 'c11', 11)"), ["code"]),
    "dropped": ("alter table shop.t drop constraint t_pkey", "alter table shop.t drop primary key",
                ("insert into shop.t values (1, 'us', 'c9', 9)", "update shop.t set n = 30 where code = 'c2'",
                 "delete from shop.t where code = 'c3'"), ["id", "region"]),
}
STOPS = {
    "widened": r"shop\.t is keyed on \(id, region\) since .*not on \(id\) as captured: change its mirror's unique_key "
               r"and its key under tables: in the landing config to \[id, region\], then run the capture once "
               r"with --resnapshot",
    "moved": r"shop\.t is keyed on \(code\) since .*not on \(id\) as captured: change its mirror's unique_key "
             r"and its key under tables: in the landing config to \[code\]",
    "dropped": r"table shop\.t has no primary key",
}


def run_sql(connection, statements) -> None:
    with connection.cursor() as cursor:
        for text in statements:
            cursor.execute(text)
    connection.commit()


def source_rows(connection) -> list[tuple]:
    return table_rows(connection, "select id, region, code, n from shop.t order by code")


def apply(project, key: list[str]) -> list[tuple]:
    """Land with key as the landing config's, apply the mirror; its rows, ordered as source_rows'."""
    assert "quarantined 0 lines" in project.land({"shop.t": key}).status()
    project.dbt("run", "--select", "t")
    return [tuple(row.values())
            for row in project.query(f"select id, region, code, n from {project.schema}.t order by code")]


def verify(project, source: dict) -> str:
    """cdc-verify of the mirror: its report line, or what it logged in stopping."""
    before = len(project.dbt_log())
    result = project.dbt("run-operation", "cdc_verify", "--args", json.dumps({"source": source, "select": ["t"]}),
                         expect_success=False)
    logged = project.dbt_log()[before:]
    reports = [line for line in logged.splitlines() if " vs shop.t: " in line]
    return reports[-1] if result.success and reports else " ".join(logged.split())


def rekey_as_the_message_says(project, connection, capture, change: str, source: dict) -> None:
    """The key in the landing config and the model (a dropped key added again as (id, region) first), the
    capture run once with --resnapshot, dbt run: the mirror equals the source, then follows its changes."""
    key = CHANGES[change][3]
    if change == "dropped":
        run_sql(connection, ["alter table shop.t add primary key (id, region)"])
    project.write_model("t", f"unique_key={key!r}, source_table='shop.t'", COLUMNS)
    capture(resnapshot=True)
    assert apply(project, key) == source_rows(connection)
    assert ": equal: " in verify(project, source)
    run_sql(connection, ["insert into shop.t values (3, 'us', 'c12', 12)",
                         "update shop.t set n = -1 where code = 'c1'"])
    capture()
    assert apply(project, key) == source_rows(connection)


def change_the_key(project, connection, capture, postgres_side: bool, change: str, source: dict) -> None:
    run_sql(connection, CREATE)
    project.write_model("t", "unique_key='id', source_table='shop.t'", COLUMNS)
    capture()
    assert apply(project, ["id"]) == FIRST
    alter_postgres, alter_mariadb, changes, key = CHANGES[change]
    run_sql(connection, [alter_postgres if postgres_side else alter_mariadb, *changes])
    with pytest.raises(CaptureError, match=STOPS[change]):
        capture()
    assert apply(project, ["id"]) == FIRST  # nothing written that the old key would merge or lose
    said = verify(project, source)
    assert ("table shop.t has no primary key" if change == "dropped" else
            f"shop.t is keyed on ({', '.join(key)}) at the source, not on (id) as mirror ") in said, said[-1500:]
    rekey_as_the_message_says(project, connection, capture, change, source)


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_postgres_primary_key_changed(postgres, dbt_project, tmp_path, change):  # noqa: F811
    connection = postgres.connect()
    run_sql(connection, ["create schema shop"])
    dsn = create_capture_user(postgres, ["shop"])
    config = capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.t",), slot="rekey", out=dbt_project.inbox,
                                            state=tmp_path / "state.json")
    change_the_key(dbt_project, connection, lambda **kw: capture_postgres.run(replace(config, **kw)), True, change,
                   {"postgres": dsn})
    connection.close()


def change_the_mariadb_key(server, project, tmp_path, change: str, monkeypatch) -> None:
    connection = server.connect()
    run_sql(connection, ["create database shop"])
    user, password = create_mariadb_capture_user(server, ["shop"])
    monkeypatch.setenv("MYSQL_PWD", password)  # cdc-verify's
    config = capture_mysql.CaptureConfig(host="127.0.0.1", port=server.port, user=user, password=password,
                                         tables=("shop.t",), out=project.inbox, state=tmp_path / "state.json")
    change_the_key(project, connection, lambda **kw: capture_mysql.run(replace(config, **kw)), False, change,
                   {"mysql": f"{user}@127.0.0.1:{server.port}"})
    connection.close()


@pytest.mark.parametrize("change", ["dropped", "moved"])
def test_mariadb_primary_key_changed(mariadb, dbt_project, tmp_path, change, monkeypatch):  # noqa: F811
    change_the_mariadb_key(mariadb, dbt_project, tmp_path, change, monkeypatch)


def test_mariadb_primary_key_widened_on_both_engines(mariadb, conformance_project, tmp_path, monkeypatch):  # noqa: F811
    change_the_mariadb_key(mariadb, conformance_project, tmp_path, "widened", monkeypatch)


def test_postgres_primary_key_dropped_under_a_following_capture(postgres, dbt_project, tmp_path):  # noqa: F811
    """The key dropped while the capture follows the slot: its check before each file stops it there, before
    the insert of a second row of id 1 (which the mirror, keyed on id, would take in place of the first) and
    with the update and delete wal2json drops for want of a key (which the mirror would never get), not
    at the online read of a table without a key those dropped changes ask for."""
    connection = postgres.connect()
    run_sql(connection, ["create schema shop", *CREATE])
    dsn = create_capture_user(postgres, ["shop"])
    state = tmp_path / "state.json"
    args = ["--dsn", dsn, "--tables", "shop.t", "--slot", "following", "--out", str(dbt_project.inbox),
            "--state", str(state)]
    dbt_project.write_model("t", "unique_key='id', source_table='shop.t'", COLUMNS)
    with following_capture("postgres", *args, "--max-wait-seconds", "0.3") as following:
        wait_for(lambda: state.exists() and json.loads(state.read_text()).get("snapshot_done"))
        time.sleep(1)  # following the slot
        alter, _, changes, _ = CHANGES["dropped"]
        run_sql(connection, [alter])
        for statement in changes:
            run_sql(connection, [statement])
        _, stderr = following.communicate(timeout=60)
    assert following.returncode != 0 and "table shop.t has no primary key since an ALTER TABLE" in stderr, stderr
    assert apply(dbt_project, ["id"]) == FIRST
    config = capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.t",), slot="following", out=dbt_project.inbox,
                                            state=state)
    rekey_as_the_message_says(dbt_project, connection, lambda **kw: capture_postgres.run(replace(config, **kw)),
                              "dropped", {"postgres": dsn})
    connection.close()


def test_mariadb_primary_key_dropped_and_added_again_behind_the_capture(mariadb, dbt_project, tmp_path):  # noqa: F811
    """The key dropped and added again on the same columns while the capture was stopped (or behind), so the
    catalog it reads at the DROP PRIMARY KEY has the key: the changes between are keyed on id as any others,
    and a second row of id 1, inserted and deleted meanwhile, deleted the first from the mirror. The table
    is read again online at the DROP PRIMARY KEY, as a PostgreSQL key made again is."""
    connection = mariadb.connect()
    run_sql(connection, ["create database shop", "create database cdc_merge",
                         SIGNAL_TABLE_DDL.format(table=SIGNAL_TABLE), *CREATE])
    user, password = create_mariadb_capture_user(mariadb, ["shop"])
    run_sql(connection, [f"grant insert on {SIGNAL_TABLE} to {user}@'%'"])
    config = capture_mysql.CaptureConfig(host="127.0.0.1", port=mariadb.port, user=user, password=password,
                                         tables=("shop.t",), out=dbt_project.inbox, state=tmp_path / "state.json")
    dbt_project.write_model("t", "unique_key='id', source_table='shop.t'", COLUMNS)
    capture_mysql.run(config)
    assert apply(dbt_project, ["id"]) == FIRST
    run_sql(connection, [CHANGES["dropped"][1], "insert into shop.t values (1, 'us', 'c9', 9)",
                         "update shop.t set n = 20 where code = 'c2'", "delete from shop.t where code = 'c9'",
                         "alter table shop.t add primary key (id)"])
    capture_mysql.run(config)
    assert apply(dbt_project, ["id"]) == source_rows(connection) == [(1, "eu", "c1", 1), (2, "eu", "c2", 20),
                                                                    (3, "eu", "c3", 3)]
    connection.close()

