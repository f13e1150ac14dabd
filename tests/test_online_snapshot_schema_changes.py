"""A source table's columns changed while an online snapshot reads it in pages (docs/online_snapshots.md),
on a real PostgreSQL 15 and MariaDB: columns added with a default, one dropped, columns widened (a 32-bit
float to a double), one renamed, with changes after the ALTER; on PostgreSQL also a column added by a
prepared transaction whose lock a page's SELECT waits for. The model has the source's columns after
the change, as a user's would; the mirror is compared row by row with the source table, and by cdc_verify.

A page was read in the columns the stream last saw (MariaDB) or the catalog had before its SELECT
(PostgreSQL): written at its high watermark, after the ALTER, its rows held null in the added columns
where the source has their defaults (on MariaDB a widened float kept its short digits, 12.1 for
12.100000381469727), and a column dropped or renamed stopped the capture at the page's SELECT."""

from __future__ import annotations

import json
import logging
import threading
import time

import pytest

from harness.mariadb_server import create_mariadb_capture_user
from harness.postgres_server import create_capture_user
from python_jobs.capture import mysql as capture_mysql
from python_jobs.capture import postgres as capture_postgres
from python_jobs.capture.mysql_pages import SIGNAL_TABLE, SIGNAL_TABLE_DDL
from test_capture_faults import mariadb, postgres  # noqa: F401 - fixtures

# The ALTERs of each case, on PostgreSQL and on MariaDB, and the model's columns after them.
CASES = {
    "added": (["alter table shop.items add column c int default 7",
               "alter table shop.items add column d int not null default 8"],
              ["alter table shop.items add column c int default 7",
               "alter table shop.items add column d int not null default 8"],
              {"id": "int", "name": "string", "qty": "int", "c": "int", "d": "int"}),
    "dropped and widened": (["alter table shop.items drop column x", "alter table shop.items alter column qty type bigint",
                             "alter table shop.items alter column name type varchar(100)",
                             "alter table shop.items alter column ratio type double precision"],
                            ["alter table shop.items drop column x", "alter table shop.items modify qty bigint",
                             "alter table shop.items modify name varchar(100)", "alter table shop.items modify ratio double"],
                            {"id": "int", "name": "string", "qty": "bigint", "ratio": "double"}),
    "renamed": (["alter table shop.items rename column name to title"],
                ["alter table shop.items rename column name to title"],
                {"id": "int", "title": "string", "qty": "int", "x": "int"}),
}
# Each case before the third page's low watermark (after its columns were read), and a column added inside its window.
MOMENTS = [pytest.param(case, False, id=f"{case}, before a low watermark") for case in CASES] + [
    pytest.param("added", True, id="added, inside a window")]
# After the ALTERs, before the page: a row of a page read, of the page to come, of a later one.
CHANGES = ["update shop.items set qty = qty + 100 where id in (4, 13, 27)", "delete from shop.items where id = 8",
           "insert into shop.items (id, qty) values (40, 1)"]


def run_statements(connect, statements) -> None:
    connection = connect()
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)
    connection.commit()
    connection.close()


def changed_at_the_third_page(monkeypatch, pages_module, connect, statements, inside_window: bool) -> None:
    """The statements run before the third page's low watermark (its columns read), or after its rows were read."""
    if inside_window:
        read_page, pages_read = pages_module.read_page, []

        def read(*args, **kwargs):
            page = read_page(*args, **kwargs)
            pages_read.append(page)
            if len(pages_read) == 3:
                run_statements(connect, statements)
            return page

        monkeypatch.setattr(pages_module, "read_page", read)
        return
    emit, lows = pages_module.emit_watermark, []

    def watermark(*args):
        if args[-1] == "low":
            lows.append(args)
            if len(lows) == 3:
                run_statements(connect, statements)
        emit(*args)

    monkeypatch.setattr(pages_module, "emit_watermark", watermark)


def mirror_equals_source(project, connect, columns: dict[str, str], verify_source: dict) -> None:
    project.write_model("items", "unique_key='id', source_table='shop.items', on_schema_change='append_new_columns'",
                        f"{{{{ cdc_merge.cdc_columns({columns!r}) }}}}, {{{{ cdc_merge.cdc_metadata_columns() }}}}")
    landed = project.land({"shop.items": ["id"]})
    assert "quarantined 0 lines" in landed.status(), landed.status()
    project.dbt("run", "--select", "items")
    names = ", ".join(columns)
    mirrored = [tuple(row.values()) for row in project.query(f"select {names} from {project.schema}.items order by id")]
    connection = connect()
    with connection.cursor() as cursor:
        cursor.execute(f"select {names} from shop.items order by id")
        source = [tuple(row) for row in cursor.fetchall()]
    connection.close()
    assert len(source) == 30 and mirrored == source
    project.dbt("run-operation", "cdc_verify", "--args", json.dumps({"source": verify_source, "select": ["items"]}))
    reports = [line for line in project.dbt_log().splitlines() if " vs shop.items" in line]
    assert reports and ": equal: " in reports[-1], reports[-1:]


@pytest.mark.parametrize("case, inside_window", MOMENTS)
def test_postgres_columns_changed_during_an_online_snapshot(postgres, dbt_project, tmp_path, monkeypatch, case,
                                                            inside_window):
    from python_jobs.capture import postgres_pages

    run_statements(postgres.connect, [
        "create schema shop", "create table shop.items (id int primary key, name varchar(10), qty int, ratio real, x int)",
        "insert into shop.items select g, 'n' || g, g, g * 1.1, -g from generate_series(1, 30) g"])
    dsn = create_capture_user(postgres, ["shop"])
    changed_at_the_third_page(monkeypatch, postgres_pages, postgres.connect, CASES[case][0] + CHANGES, inside_window)
    config = capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.items",), slot="altered", out=dbt_project.inbox,
                                            state=tmp_path / "capture-state.json", snapshot_mode="online", page_rows=5)
    capture_postgres.run(config)
    capture_postgres.run(config)  # and what was asked for after its last page
    assert json.loads(config.state.read_text())["snapshots"] == []
    mirror_equals_source(dbt_project, postgres.connect, CASES[case][2], {"postgres": dsn})


def test_postgres_column_added_by_a_prepared_transaction_a_pages_select_waits_for(postgres, dbt_project, tmp_path,  # noqa: F811
                                                                                    monkeypatch, caplog):
    """The ALTER TABLE of a transaction prepared (PREPARE TRANSACTION) before the third page's low
    watermark holds the table's lock while the page's SELECT waits; it commits (COMMIT PREPARED) from
    another connection meanwhile. The SELECT then runs in the snapshot it took before the commit, in
    the columns read before it: the page is read again, and the mirror holds the added column's
    default in the rows the transaction did not touch."""
    from python_jobs.capture import postgres_pages

    run_statements(postgres.connect, [
        "create schema shop", "create table shop.items (id int primary key, name varchar(10), qty int, ratio real, x int)",
        "insert into shop.items select g, 'n' || g, g, g * 1.1, -g from generate_series(1, 30) g"])
    dsn = create_capture_user(postgres, ["shop"])
    prepared = threading.Event()

    def prepare_then_commit() -> None:
        connection = postgres.connect()
        with connection.cursor() as cursor:
            cursor.execute("update shop.items set qty = qty + 100 where id = 4")
            cursor.execute("alter table shop.items add column c int default 7")
            cursor.execute("update shop.items set qty = qty + 100 where id = 27")
            cursor.execute("prepare transaction 'adds_c'")
        connection.commit()
        prepared.set()
        time.sleep(1.5)  # the page's SELECT waits for the lock meanwhile
        connection.autocommit = True
        with connection.cursor() as cursor:
            cursor.execute("commit prepared 'adds_c'")
        connection.close()

    emit, lows = postgres_pages.emit_watermark, []

    def watermark(*args):
        if args[-1] == "low":
            lows.append(args)
            if len(lows) == 3:
                threading.Thread(target=prepare_then_commit).start()
                prepared.wait(timeout=30)
        emit(*args)

    monkeypatch.setattr(postgres_pages, "emit_watermark", watermark)
    config = capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.items",), slot="prepared", out=dbt_project.inbox,
                                            state=tmp_path / "capture-state.json", snapshot_mode="online", page_rows=5)
    with caplog.at_level(logging.INFO, logger="cdc_merge.capture"):
        capture_postgres.run(config)
        time.sleep(2)  # the commit in the log, for the second run to stream
        capture_postgres.run(config)
    assert json.loads(config.state.read_text())["snapshots"] == []
    mirror_equals_source(dbt_project, postgres.connect, {"id": "int", "name": "string", "qty": "int", "x": "int", "c": "int"},
                         {"postgres": dsn})
    assert "an ALTER TABLE changed its columns while it was read" in caplog.text


@pytest.mark.parametrize("case, inside_window", MOMENTS)
def test_mariadb_columns_changed_during_an_online_snapshot(mariadb, dbt_project, tmp_path, monkeypatch, case,
                                                           inside_window):
    from python_jobs.capture import mysql_pages

    run_statements(lambda: mariadb.connect(autocommit=True), [
        "create database shop", "use shop",
        "create table shop.items (id int primary key, name varchar(10), qty int, ratio float, x int)",
        "insert into shop.items select seq, concat('n', seq), seq, seq * 1.1, -seq from seq_1_to_30",
        "create database cdc_merge", SIGNAL_TABLE_DDL.format(table=SIGNAL_TABLE)])
    user, password = create_mariadb_capture_user(mariadb, ["shop"])
    run_statements(lambda: mariadb.connect(autocommit=True), [f"grant insert on {SIGNAL_TABLE} to {user}@'%'"])
    monkeypatch.setenv("MYSQL_PWD", password)  # cdc_verify's
    changed_at_the_third_page(monkeypatch, mysql_pages, lambda: mariadb.connect(autocommit=True),
                              CASES[case][1] + CHANGES, inside_window)
    config = capture_mysql.CaptureConfig(host="127.0.0.1", port=mariadb.port, user=user, password=password,
                                         tables=("shop.items",), out=dbt_project.inbox, state=tmp_path / "state.json",
                                         snapshot_mode="online", page_rows=5)
    capture_mysql.run(config)
    capture_mysql.run(config)  # and what was asked for after its last page
    assert json.loads(config.state.read_text())["snapshots"] == []
    mirror_equals_source(dbt_project, lambda: mariadb.connect(autocommit=True), CASES[case][2],
                         {"mysql": f"{user}@127.0.0.1:{mariadb.port}"})
