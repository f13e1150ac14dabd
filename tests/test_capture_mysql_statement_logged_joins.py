"""A session with binlog_format STATEMENT logs its changes as statements, without their rows: the
capture stops at one that may change a captured table, saying what to do, before it writes it
(tests/test_capture_mysql_statements.py has the single-table INSERT, UPDATE and DELETE). Here the
forms those do not match: a multi-table UPDATE (joined or listed), a multi-table DELETE (DELETE t
FROM t JOIN ...), LOAD DATA, which the binlog has as an Execute_load_query event of its own, and
CREATE OR REPLACE TABLE ... SELECT (which binlog_format ROW logs as a CREATE TABLE and its rows).
Written on without them, the mirror would keep the rows as they were (have none, after the CREATE).
Captured by the least-privileged user the docs prescribe."""

from __future__ import annotations

import pytest

from harness.mariadb_server import create_mariadb_capture_user
from python_jobs.capture import mysql as capture_mysql
from python_jobs.capture.mysql_statements import row_statement_tables
from python_jobs.capture.output import CaptureError
from test_capture_mysql import mariadb  # noqa: F401 (a fixture)
from test_capture_mysql_statements import config_for, execute

CHANGES = {
    "update-join": "update shop.other o join shop.t on o.id = shop.t.id set shop.t.n = o.id * 10",
    "update-listed": "update other, t set t.n = 5 where other.id = t.id",
    "delete-join": "delete t from t join shop.other o on o.id = t.id",
    "load-data": "load data local infile '{rows}' into table t",
    "create-select": "create or replace table t (id int primary key) select id, id * 10 as n from other",
}


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
def test_changes_logged_as_statements_that_name_a_captured_table_after_another_stop_the_capture(
        mariadb, tmp_path, change):  # noqa: F811
    rows = tmp_path / "rows.tsv"
    rows.write_text("7\t70\n8\t80\n")
    connection = mariadb.connect(autocommit=True, local_infile=True)
    execute(connection, "create database shop", "create table shop.t (id int primary key, n int)",
            "create table shop.other (id int primary key)", "insert into shop.t values (1, 1), (2, 2)",
            "insert into shop.other values (1), (2)")
    user, password = create_mariadb_capture_user(mariadb, ["shop"])
    config = config_for(mariadb, user, password, ["shop.t"], tmp_path / "out", tmp_path / "state.json")
    capture_mysql.run(config)
    files, state = sorted(config.out.iterdir()), config.state.read_text()
    execute(connection, "use shop", "set session binlog_format = 'STATEMENT'", change.format(rows=rows))
    with pytest.raises(CaptureError, match=r"a change of shop\.t at .* is logged as a statement"):
        capture_mysql.run(config)
    assert sorted(config.out.iterdir()) == files and config.state.read_text() == state
    connection.close()


@pytest.mark.parametrize("query, tables", [
    ("update a join b on a.id = b.id set a.n = 1", [("shop", "a"), ("shop", "b")]),
    ("UPDATE LOW_PRIORITY x.a AS p, (b) SET p.n = f(1, 2)", [("x", "a"), ("shop", "b")]),
    ("delete p from `x`.`a` p straight_join b using (id) where p.n = 1", [("shop", "p"), ("x", "a"), ("shop", "b")]),
    ("delete quick from a, b using a left join b on a.id = b.id", [("shop", "a"), ("shop", "b")]),
    ("with c as (select 1 as id) delete a from a join c using (id)", [("shop", "a"), ("shop", "c")]),
    ("LOAD DATA LOCAL INFILE 'x.tsv' REPLACE INTO TABLE `x`.`a` fields terminated by ','", [("x", "a")]),
    ("update other set n = (select max(n) from t)", [("shop", "other")]),
    ("insert into other select * from t", [("shop", "other")]),
    ("delete from other where id in (select id from t)", [("shop", "other")]),
    ("select * from t join other", []),
    ("create or replace table x.t (id int primary key) select id from other", [("x", "t")]),
    ("create table t as (select 1)", [("shop", "t")]),
    ("CREATE TABLE `t` (`select` int, note varchar(9) default 'select') comment \"select\"", []),
    ("create table if not exists t select 1", []),
    ("create temporary table t select 1", []),
])
def test_tables_a_change_logged_as_a_statement_may_write(query, tables):
    assert row_statement_tables(query, "shop") == tables
