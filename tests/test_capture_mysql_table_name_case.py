"""A MariaDB server with lower_case_table_names=1 (Windows' and macOS' default) takes a table's name
in any case: `ALTER TABLE Orders`, `TRUNCATE SHOP.Orders`, `REFERENCES Parent (id)` name the table
whose binlog rows and catalog entry say `shop.orders`. The capture compares names as the server does,
so such DDL changes the mirrors as it changes the tables, and the mirrors equal the source."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from harness.mariadb_server import start_mariadb
from python_jobs.capture import mysql as capture_mysql
from test_capture_mysql_statements import assert_mirrors_equal_sources, execute
from test_mariadb_first_day import captured_with_signal_table


@pytest.fixture
def mariadb_lower_case():
    """A server whose datadir is made and run with lower_case_table_names=1."""
    directory = Path(tempfile.mkdtemp(prefix="cdc-merge-mariadb-lctn-"))
    server = start_mariadb(directory, ("--lower-case-table-names=1",))
    yield server
    server.stop()
    shutil.rmtree(directory, ignore_errors=True)


def test_columns_added_and_tables_truncated_under_another_case_reach_the_mirrors(mariadb_lower_case, dbt_project,
                                                                                tmp_path):
    mariadb = mariadb_lower_case
    connection = mariadb.connect(autocommit=True)
    execute(connection, "create database shop", "create table shop.Orders (id int primary key, n int)",
            "insert into shop.orders values (1, 1), (2, 2)",
            "create table shop.Items (id int primary key, n int)", "insert into shop.items values (1, 1), (2, 2)")
    tables = ["shop.orders", "shop.items"]
    user, password, config = captured_with_signal_table(mariadb, connection, tables, dbt_project, tmp_path)
    capture_mysql.run(config)
    execute(connection, "use shop", "alter table Orders add column note varchar(5) not null default 'old'",
            "insert into shop.orders values (3, 3, 'new')",
            "alter table SHOP.ORDERS add column flag int not null default 7",
            "truncate table Items", "insert into shop.items values (5, 5)")
    capture_mysql.run(config)
    assert_mirrors_equal_sources(mariadb, connection, dbt_project, user, password, tables)
    connection.close()


def test_tables_renamed_or_dropped_under_another_case_start_again_empty(mariadb_lower_case, dbt_project, tmp_path):
    mariadb = mariadb_lower_case
    connection = mariadb.connect(autocommit=True)
    execute(connection, "create database shop",
            *(f"create table shop.{name} (id int primary key, n int)" for name in ("a", "b")),
            *(f"insert into shop.{name} values (1, 1), (2, 2)" for name in ("a", "b")))
    tables = ["shop.a", "shop.b"]
    user, password, config = captured_with_signal_table(mariadb, connection, tables, dbt_project, tmp_path)
    capture_mysql.run(config)
    execute(connection, "use shop", "rename table Shop.A to shop.a_old", "create table shop.a like shop.a_old",
            "insert into shop.a values (5, 5)", "drop table `B`", "create table shop.b (id int primary key, n int)",
            "insert into shop.b values (8, 8)")
    capture_mysql.run(config)
    assert_mirrors_equal_sources(mariadb, connection, dbt_project, user, password, tables)
    connection.close()


def test_a_foreign_key_to_a_parent_named_in_another_case_has_its_cascades_read_again(mariadb_lower_case, dbt_project,
                                                                                     tmp_path):
    """The key is added and dropped again before the capture reads the statements: only the ALTER's
    text tells it, with the tables named as the user typed them."""
    mariadb = mariadb_lower_case
    connection = mariadb.connect(autocommit=True)
    execute(connection, "create database shop", "create table shop.parent (id int primary key)",
            "create table shop.child (id int primary key, parent_id int)",
            "insert into shop.parent values (1), (2)", "insert into shop.child values (1, 1), (2, 1), (3, 2)")
    user, password, config = captured_with_signal_table(mariadb, connection, ["shop.child"], dbt_project, tmp_path)
    capture_mysql.run(config)
    execute(connection, "use shop",
            "alter table Child add constraint child_parent foreign key (parent_id) references Parent (id) "
            "on delete cascade",
            "delete from shop.parent where id = 1", "alter table CHILD drop foreign key child_parent")
    capture_mysql.run(config)
    assert_mirrors_equal_sources(mariadb, connection, dbt_project, user, password, ["shop.child"])
    connection.close()


def test_foreign_keys_added_without_a_name_and_dropped_again_have_their_cascades_read_again(mariadb_lower_case,
                                                                                           dbt_project, tmp_path):
    """A key added with no CONSTRAINT name gets the server's, <table>_ibfk_<n> (n one above the table's
    highest such key), or its index's name; dropped by it before the capture reads the statements, the
    catalog has it no more: only the statement tells the capture of its cascades."""
    mariadb = mariadb_lower_case
    connection = mariadb.connect(autocommit=True)
    execute(connection, "create database shop", "create table shop.parent (id int primary key)",
            "create table shop.other (id int primary key)", "insert into shop.other values (1)",
            "create table shop.child (id int primary key, parent_id int, other_id int, "
            "foreign key (other_id) references other (id))",  # child_ibfk_1, which cascades nothing
            "create table shop.kid (id int primary key, parent_id int)",
            "insert into shop.parent values (1), (2), (3)",
            "insert into shop.child values (1, 1, 1), (2, 1, 1), (3, 2, 1)", "insert into shop.kid values (1, 3), (2, 2)")
    tables = ["shop.child", "shop.kid"]
    user, password, config = captured_with_signal_table(mariadb, connection, tables, dbt_project, tmp_path)
    capture_mysql.run(config)
    execute(connection, "use shop",
            "alter table Child add foreign key (parent_id) references Parent (id) on delete cascade",  # child_ibfk_2
            "alter table kid add foreign key by_parent (parent_id) references parent (id) on delete cascade",
            "delete from shop.parent where id in (1, 3)",
            "alter table child drop foreign key child_ibfk_2", "alter table kid drop foreign key by_parent")
    capture_mysql.run(config)
    assert_mirrors_equal_sources(mariadb, connection, dbt_project, user, password, tables)
    connection.close()
