"""Statements that change a captured MariaDB table's rows outside its rows events
(python_jobs/capture/mysql_statements.py): those the capture can say (a TRUNCATE however written,
DROP TABLE, CREATE OR REPLACE TABLE, a ROLLBACK TO SAVEPOINT of rows the binlog kept) reach the
mirror, which then equals the source table; those it cannot (a two-phase XA transaction, a change
logged as a statement, a system-versioned table, a compressed binlog) stop it with what to do,
before it writes them. Partitions truncated, dropped or exchanged have their tables read again
online."""

from __future__ import annotations

import pytest

from harness.mariadb_server import create_mariadb_capture_user
from python_jobs import scaffold
from python_jobs.capture import mysql as capture_mysql
from python_jobs.capture.output import CaptureError
from test_capture_mysql import mariadb  # noqa: F401 (a fixture)
from test_online_snapshots_mariadb import SIGNAL_TABLE, SIGNAL_TABLE_DDL

TABLES = ("shop.t", "shop.d", "shop.r")


def execute(connection, *statements: str) -> None:
    with connection.cursor() as cursor:
        for text in statements:
            cursor.execute(text)


def config_for(server, user: str, password: str, tables, out, state) -> capture_mysql.CaptureConfig:
    return capture_mysql.CaptureConfig(host="127.0.0.1", port=server.port, user=user, password=password,
                                       tables=tuple(tables), out=out, state=state)


def assert_mirrors_equal_sources(server, connection, project, user: str, password: str, names) -> None:
    """Land, apply the scaffolded models, and each mirror's rows against its source table's."""
    tables = scaffold.mysql_tables("127.0.0.1", server.port, user, password, list(names))
    for table in tables:
        (project.project_dir / "models" / "mirrors" / f"{table.model_name}.sql").write_text(scaffold.model_sql(table))
    summary = project.land({table.qualified: list(table.primary_key) for table in tables})
    assert summary.counts["rejected"] == 0, summary.counts
    project.dbt("run", "--select", *(table.model_name for table in tables))
    for table in tables:
        names = ", ".join(column.name for column in table.columns)
        mirrored = sorted(tuple(row.values()) for row in project.query(
            f"select {names} from {project.schema}.{table.model_name}"))
        with connection.cursor() as cursor:
            cursor.execute(f"select {names} from {table.qualified} order by id")
            assert mirrored == [tuple(row) for row in cursor.fetchall()], table.qualified


def test_partitions_changed_and_tables_swapped_in_are_read_again_online(mariadb, dbt_project, tmp_path):
    connection = mariadb.connect(autocommit=True)
    execute(connection, "create database shop", "use shop",
            "create table shop.p (id int primary key, n int) partition by range (id) (partition p0 values less than "
            "(100), partition p1 values less than (200), partition p2 values less than maxvalue)",
            "insert into shop.p select seq, seq from seq_1_to_260_step_3",
            "create table shop.swap (id int primary key, n int)", "insert into shop.swap values (50, -50), (60, -60)",
            "create table shop.o (id int primary key, n int)", "insert into shop.o values (1, 1), (2, 2), (3, 3)",
            "create table shop.a (id int primary key, n int)", "insert into shop.a values (1, 1), (2, 2)",
            "create database cdc_merge", SIGNAL_TABLE_DDL.format(table=SIGNAL_TABLE))
    user, password = create_mariadb_capture_user(mariadb, ["shop"])
    execute(connection, f"grant insert on {SIGNAL_TABLE} to {user}@'%'")
    tables = ["shop.p", "shop.swap", "shop.o", "shop.a"]
    config = config_for(mariadb, user, password, tables, dbt_project.inbox, tmp_path / "state.json")
    capture_mysql.run(config)
    execute(connection, "alter table shop.p truncate partition p1",
            "alter table shop.p exchange partition p0 with table shop.swap",
            "update shop.p set n = 0 where id = 50", "alter table shop.p drop partition p2",
            "insert into shop.p values (150, 1)",
            # An online schema change's swap (gh-ost, pt-online-schema-change): a copy with a column more.
            "create table shop._o_new (id int primary key, n int, note varchar(10) default 'new')",
            "insert into shop._o_new (id, n) select id, n from shop.o where id <> 2",
            "rename table shop.o to shop._o_old, shop._o_new to shop.o", "insert into shop.o values (4, 4, 'after')",
            # The same swap by ALTER TABLE ... RENAME, the old table renamed away first.
            "create table shop._a_new like shop.a", "insert into shop._a_new values (2, 20), (5, 5)",
            "alter table shop.a rename to shop._a_old", "alter table shop._a_new rename to shop.a",
            "update shop.a set n = 50 where id = 5")
    assert capture_mysql.run(config).snapshot_rows > 0
    assert_mirrors_equal_sources(mariadb, connection, dbt_project, user, password, tables)
    connection.close()



def test_a_table_swapped_in_with_another_primary_key_stops_the_capture(mariadb, tmp_path):
    """An online schema change's swap (gh-ost's RENAME TABLE) that puts a copy keyed otherwise in the
    captured table's place: its rows are no longer one per mirror key, so the capture stops at the
    rename naming both keys (mysql_table_changes.tables_read_again), writes none of the copy's rows
    and keeps its position; run again, it stops there again."""
    connection = mariadb.connect(autocommit=True)
    execute(connection, "create database shop", "use shop",
            "create table shop.items (id int primary key, code varchar(10) not null, n int)",
            "insert into shop.items values (1, 'a', 1), (2, 'b', 2)",
            "create database cdc_merge", SIGNAL_TABLE_DDL.format(table=SIGNAL_TABLE))
    user, password = create_mariadb_capture_user(mariadb, ["shop"])
    execute(connection, f"grant insert on {SIGNAL_TABLE} to {user}@'%'")
    config = config_for(mariadb, user, password, ["shop.items"], tmp_path / "out", tmp_path / "state.json")
    capture_mysql.run(config)
    files = sorted(config.out.iterdir())
    state = config.state.read_text()
    execute(connection, "create table shop._items_gho (id int not null, code varchar(10) not null, n int, primary key (code))",
            "insert into shop._items_gho select * from shop.items",
            "rename table shop.items to shop._items_old, shop._items_gho to shop.items",
            "insert into shop.items values (1, 'c', 3)")
    for _ in range(2):
        with pytest.raises(CaptureError, match=r"puts a table keyed on \(code\) in the place of shop\.items, keyed on \(id\)"):
            capture_mysql.run(config)
        assert sorted(config.out.iterdir()) == files and config.state.read_text() == state
    connection.close()


def test_an_alter_table_that_changes_the_primary_key_stops_the_capture(mariadb, tmp_path):
    """ALTER TABLE ... DROP PRIMARY KEY, ADD PRIMARY KEY (id, region): the rows are no longer one per
    mirror key (two rows of id 1), so the capture stops at the statement naming both keys, writes
    none of the rows after it and keeps its position; run again, it stops there again."""
    connection = mariadb.connect(autocommit=True)
    execute(connection, "create database shop",
            "create table shop.items (id int primary key, region varchar(10) not null, n int)",
            "insert into shop.items values (1, 'eu', 1), (2, 'eu', 2)")
    user, password = create_mariadb_capture_user(mariadb, ["shop"])
    config = config_for(mariadb, user, password, ["shop.items"], tmp_path / "out", tmp_path / "state.json")
    capture_mysql.run(config)
    files = sorted(config.out.iterdir())
    state = config.state.read_text()
    execute(connection, "alter table shop.items drop primary key, add primary key (id, region)",
            "insert into shop.items values (1, 'us', 3)")
    for _ in range(2):
        with pytest.raises(CaptureError, match=r"shop\.items is keyed on \(id, region\) since 'alter table shop\.items drop "
                                               r"primary key.*not on \(id\) as captured: change its mirror's unique_key"):
            capture_mysql.run(config)
        assert sorted(config.out.iterdir()) == files and config.state.read_text() == state
    connection.close()


def test_tables_emptied_or_rolled_back_by_statements_equal_the_source(mariadb, dbt_project, tmp_path):
    connection = mariadb.connect(autocommit=True)
    execute(connection, "create database shop",
            *(f"create table {table} (id int primary key, n int)" for table in TABLES),
            "create table shop.log (id int primary key) engine = MyISAM",
            *(f"insert into {table} values (1, 1), (2, 2)" for table in TABLES))
    user, password = create_mariadb_capture_user(mariadb, ["shop"])
    config = config_for(mariadb, user, password, TABLES, dbt_project.inbox, tmp_path / "state.json")
    capture_mysql.run(config)
    execute(connection,
            "/* cleanup */ truncate table shop.t nowait", "insert into shop.t values (10, 10)",
            # Row 10 takes the added column's default from the schema change event, not from a rows event.
            "/* migration 7 */ alter table if exists shop.t add column c int not null default 5",
            # A transaction that wrote a MyISAM table keeps its rolled-back rows in the binlog.
            "begin", "update shop.t set n = 11 where id = 10", "insert into shop.log values (1)", "savepoint s2",
            "update shop.t set n = 999 where id = 10", "insert into shop.t values (11, 11, 11)",
            "rollback to savepoint s2", "commit",
            "drop table shop.d", "create table shop.d (id int primary key, n int)", "insert into shop.d values (5, 5)",
            "create or replace table shop.r (id int primary key, n int)", "insert into shop.r values (7, 7)")
    capture_mysql.run(config)
    assert_mirrors_equal_sources(mariadb, connection, dbt_project, user, password, TABLES)
    assert dbt_project.query(f"select id, n from {dbt_project.schema}.shop_r") == [{"id": 7, "n": 7}]
    assert dbt_project.query(f"select c from {dbt_project.schema}.shop_t") == [{"c": 5}]
    connection.close()


REFUSED = [
    ("create table shop.x (id int primary key, n int)",
     ["xa start 'x1'", "update shop.x set n = 5 where id = 1", "xa end 'x1'", "xa prepare 'x1'", "xa commit 'x1'"],
     "two-phase XA transaction"),
    ("create table shop.x (id int primary key, n int)",
     ["set session binlog_format = 'STATEMENT'", "insert into shop.x values (2, 2)"],
     "logged as a statement"),
    ("create table shop.x (id int primary key, n int) partition by range (id) "
     "(partition p0 values less than (100), partition p1 values less than maxvalue)",
     ["alter table shop.x truncate partition p0"],
     # Read again online, which needs the signal table.
     "no rows event in the binlog, which the capture reads again online; but online snapshots write watermarks"),
]


@pytest.mark.parametrize("create, statements, message", REFUSED, ids=["xa-prepare", "statement-format", "partition"])
def test_changes_the_binlog_cannot_say_stop_the_capture_before_they_are_written(mariadb, tmp_path, create,
                                                                                  statements, message):
    connection = mariadb.connect(autocommit=True)
    execute(connection, "create database shop", create, "insert into shop.x values (1, 1)")
    config = config_for(mariadb, "root", "", ["shop.x"], tmp_path / "out", tmp_path / "state.json")
    capture_mysql.run(config)
    files = sorted(config.out.iterdir())
    state = config.state.read_text()
    execute(connection, *statements)
    with pytest.raises(CaptureError, match=message):
        capture_mysql.run(config)
    assert sorted(config.out.iterdir()) == files and config.state.read_text() == state
    connection.close()


def test_tables_and_servers_the_binlog_cannot_follow_are_refused_at_the_start(mariadb, tmp_path):
    connection = mariadb.connect(autocommit=True)
    execute(connection, "create database shop",
            "create table shop.versioned (id int primary key, n int) with system versioning",
            "create table shop.squeezed (id int primary key, note varchar(500) compressed)",
            "create table shop.plain (id int primary key)")
    for table, message in (("shop.versioned", "system-versioned"), ("shop.squeezed", "column note of table shop.squeezed is COMPRESSED")):
        with pytest.raises(CaptureError, match=message):
            capture_mysql.run(config_for(mariadb, "root", "", [table], tmp_path / table, tmp_path / f"{table}.json"))
    execute(connection, "set global log_bin_compress = ON")
    with pytest.raises(CaptureError, match=r"log_bin_compress=ON \(needs OFF\)"):
        capture_mysql.run(config_for(mariadb, "root", "", ["shop.plain"], tmp_path / "plain", tmp_path / "plain.json"))
    connection.close()


def test_a_foreign_key_that_cascades_into_a_captured_table_is_named_at_the_start(mariadb, tmp_path, caplog):
    """The server writes no rows event for the child rows a cascade deletes or changes."""
    connection = mariadb.connect(autocommit=True)
    execute(connection, "create database shop", "create table shop.parent (id int primary key)",
            "create table shop.child (id int primary key, parent_id int, constraint child_parent foreign key "
            "(parent_id) references shop.parent (id) on delete cascade)")
    capture_mysql.run(config_for(mariadb, "root", "", ["shop.child"], tmp_path / "out", tmp_path / "state.json"))
    assert "foreign key child_parent of shop.child (ON DELETE CASCADE from parent)" in caplog.text
    connection.close()
