"""A session's temporary table under a captured table's name hides that table from the session's
statements. A session that still logs as MIXED or STATEMENT (one connected before the server's
binlog_format became ROW keeps its own) logs its statements on the temporary table: a TRUNCATE of
it, or an ALTER TABLE that renames it away, is no truncate of the captured table, whose mirror keeps
its rows, and an INSERT, UPDATE or DELETE of it naming no other table is no change of it; a TRUNCATE
of the table itself, once the temporary one is dropped, empties the mirror as before."""

from __future__ import annotations

from harness.mariadb_server import create_mariadb_capture_user
from python_jobs.capture import mysql as capture_mysql
from test_capture_mysql import mariadb  # noqa: F401 (a fixture)
from test_capture_mysql_statements import assert_mirrors_equal_sources, config_for, execute

TABLES = ["shop.t", "shop.u"]


def test_a_temporary_table_under_a_captured_name_truncated_leaves_the_mirror_its_rows(mariadb, dbt_project, tmp_path):
    connection = mariadb.connect(autocommit=True)
    execute(connection, "create database shop",
            *(f"create table {table} (id int primary key, n int)" for table in TABLES),
            *(f"insert into {table} values (1, 1), (2, 2)" for table in TABLES))
    user, password = create_mariadb_capture_user(mariadb, ["shop"])
    config = config_for(mariadb, user, password, TABLES, dbt_project.inbox, tmp_path / "state.json")
    capture_mysql.run(config)
    session = mariadb.connect(autocommit=True)
    execute(session, "set session binlog_format = 'MIXED'", "use shop",
            "create temporary table shop.t (id int primary key, n int)", "truncate table shop.t",
            "create temporary table u like shop.t", "truncate u", "drop temporary table shop.t",
            "create temporary table shop.t (id int primary key, n int)", "alter table shop.t rename to shop.t_old",
            "drop temporary table shop.t_old")
    execute(connection, "insert into shop.t values (3, 3)", "insert into shop.u values (3, 3)")
    execute(session, "drop table u", "truncate table shop.u")  # the temporary u, then the table
    capture_mysql.run(config)
    assert_mirrors_equal_sources(mariadb, connection, dbt_project, user, password, TABLES)
    assert [row["id"] for row in dbt_project.query(f"select id from {dbt_project.schema}.shop_t order by id")] == [1, 2, 3]
    assert dbt_project.query(f"select id from {dbt_project.schema}.shop_u") == []
    session.close()
    connection.close()


def test_row_statements_on_a_temporary_table_under_a_captured_name_leave_the_capture_going(mariadb, dbt_project, tmp_path):
    """An INSERT, UPDATE, DELETE into a temporary table named as a captured table, logged as a statement,
    changes nothing captured (its event is thread-specific, and it names no other table); an INSERT into the
    captured table that reads the temporary one is thread-specific too, and still stops the capture."""
    connection = mariadb.connect(autocommit=True)
    execute(connection, "create database shop", "create table shop.t (id int primary key, n int)",
            "insert into shop.t values (1, 1), (2, 2)")
    user, password = create_mariadb_capture_user(mariadb, ["shop"])
    config = config_for(mariadb, user, password, ["shop.t"], dbt_project.inbox, tmp_path / "state.json")
    capture_mysql.run(config)
    session = mariadb.connect(autocommit=True)
    execute(session, "set session binlog_format = 'MIXED'", "use shop",
            "create temporary table t (id int primary key, n int)", "insert into t values (7, 7), (8, 8)",
            "update shop.t set n = 9 where id = 7", "delete from t where id = 8", "replace into t values (1, 5)",
            "drop temporary table t")
    execute(connection, "insert into shop.t values (3, 3)")
    capture_mysql.run(config)
    assert_mirrors_equal_sources(mariadb, connection, dbt_project, user, password, ["shop.t"])
    assert [row["id"] for row in dbt_project.query(f"select id from {dbt_project.schema}.shop_t order by id")] == [1, 2, 3]
    execute(session, "create temporary table k (id int primary key)", "insert into k values (4)",
            "set session binlog_format = 'STATEMENT'", "insert into shop.t select id, id from k")
    try:
        capture_mysql.run(config)
    except capture_mysql.CaptureError as error:
        assert "logged as a statement" in str(error)
    else:
        raise AssertionError("an INSERT into the captured table logged as a statement did not stop the capture")
    session.close()
    connection.close()
