"""A captured MariaDB table replaced by CREATE OR REPLACE TABLE ... SELECT, or dropped and created
again by CREATE TABLE ... SELECT: with binlog_format ROW the server logs one group (BEGIN GTID ...
COMMIT) of a CREATE TABLE statement and the rows the SELECT wrote. The capture writes the table
emptied and those rows in one transaction, and the mirror equals the source table; a group that a
DDL statement opens does not end there. Captured by the least-privileged user the docs prescribe,
modelled by cdc-scaffold (tests/test_capture_types.py's way)."""

from __future__ import annotations

from harness.mariadb_server import start_mariadb
from python_jobs import scaffold
from python_jobs.capture import mysql as capture_mysql
from test_capture_mysql_generated_invisible_and_quoted_columns import (  # noqa: F401
    assert_mirror_equals_source,
    capture_config,
    server_directory,
    source_rows,
)
from test_capture_types import apply

NAMES = ["id", "n", "note"]


def test_tables_created_again_from_a_select_mirror_as_the_source(dbt_project, server_directory, tmp_path):  # noqa: F811
    server = start_mariadb(server_directory)
    try:
        connection = server.connect(autocommit=True)
        with connection.cursor() as cursor:
            cursor.execute("create database shop character set utf8mb4")
            cursor.execute("create table shop.staged (id int primary key, n int, note varchar(9))")
            cursor.execute("insert into shop.staged values (5, 50, 'five'), (6, 60, null), (7, 70, 'seven')")
            cursor.execute("create table shop.t (id int primary key, n int, note varchar(9))")
            cursor.execute("insert into shop.t values (1, 1, 'one'), (2, 2, 'two')")
        config = capture_config(server, dbt_project.inbox, tmp_path / "capture-state.json", "shop.t")
        capture_mysql.run(config)
        with connection.cursor() as cursor:
            cursor.execute("insert into shop.t values (3, 3, 'three')")
            cursor.execute("create or replace table shop.t (id int primary key, n int, note varchar(9)) "
                           "select id, n, note from shop.staged where id < 7")
            cursor.execute("update shop.t set n = 51 where id = 5")
        capture_mysql.run(config)
        (table,) = scaffold.mysql_tables("127.0.0.1", server.port, config.user, config.password, ["shop.t"])
        mirrored = apply(dbt_project, table)
        assert sorted(mirrored) == [5, 6]
        assert_mirror_equals_source(mirrored, source_rows(connection, "shop.t", NAMES), table)

        with connection.cursor() as cursor:
            cursor.execute("drop table shop.t")
            cursor.execute("create table shop.t (id int primary key, n int, note varchar(9)) "
                           "select id, n, note from shop.staged where id > 5")
            cursor.execute("delete from shop.t where id = 6")
        capture_mysql.run(config)
        mirrored = apply(dbt_project, table)
        assert sorted(mirrored) == [7]
        assert_mirror_equals_source(mirrored, source_rows(connection, "shop.t", NAMES), table)
        connection.close()
    finally:
        server.stop()
