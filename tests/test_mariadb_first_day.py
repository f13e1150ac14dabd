"""What a MariaDB user may do to captured tables on the first day that the binlog's rows do not say
plainly: the capture stops before it writes rows it would mirror wrongly, says what to do, and
after it is done the mirror equals the source table.
Why over 300 lines: fourteen short cases on one server set-up."""

from __future__ import annotations

import dataclasses

import pytest

from harness.mariadb_server import create_mariadb_capture_user
from python_jobs.capture import mysql as capture_mysql
from python_jobs.capture.output import CaptureError
from test_capture_faults import mariadb  # noqa: F401 - fixture
from test_capture_mysql_statements import assert_mirrors_equal_sources, config_for, execute
from test_online_snapshots_mariadb import SIGNAL_TABLE, SIGNAL_TABLE_DDL


def captured_with_signal_table(mariadb, connection, tables, dbt_project, tmp_path, schemas=("shop",)):
    """The capture's user, password and config for tables, with the signal table its online reads
    write their watermarks into (docs/online_snapshots.md), as an administrator makes it."""
    execute(connection, "create database cdc_merge", SIGNAL_TABLE_DDL.format(table=SIGNAL_TABLE))
    user, password = create_mariadb_capture_user(mariadb, list(schemas))
    execute(connection, f"grant insert on {SIGNAL_TABLE} to {user}@'%'")
    return user, password, config_for(mariadb, user, password, list(tables), dbt_project.inbox, tmp_path / "state.json")


def test_a_table_made_system_versioned_while_captured_stops_the_capture_at_that_statement(mariadb, dbt_project, tmp_path):
    """A system-versioned table's binlog has its history rows as inserts (an UPDATE is an update and an
    insert of the row as it was; a DELETE an update of its row_end): mirrored, deleted rows come back
    and changed rows get their old values. The table's being versioned now is refused at the start;
    once versioning is dropped, as that error says, the binlog still holds the versioned rows."""
    connection = mariadb.connect(autocommit=True)
    execute(connection, "create database shop", "create table shop.w (id int primary key, n int)",
            "insert into shop.w values (1, 1), (2, 2)")
    user, password = create_mariadb_capture_user(mariadb, ["shop"])
    config = config_for(mariadb, user, password, ["shop.w"], dbt_project.inbox, tmp_path / "state.json")
    capture_mysql.run(config)
    execute(connection, "insert into shop.w values (3, 3)", "alter table shop.w add system versioning", "insert ignore into shop.w values (1, 1), (2, 2)",
            "update shop.w set n = 20 where id = 2", "delete from shop.w where id = 1",
            "alter table shop.w drop system versioning")
    files, state = sorted(config.out.iterdir()), config.state.read_text()
    with pytest.raises(CaptureError, match=r"(?s)shop\.w.*system-versioned.*binlog.*--resnapshot"):
        capture_mysql.run(config)
    assert sorted(config.out.iterdir()) == files and config.state.read_text() == state
    with pytest.raises(CaptureError, match="system-versioned"):
        capture_mysql.run(config)
    capture_mysql.run(dataclasses.replace(config, resnapshot=True))
    capture_mysql.run(config)
    assert_mirrors_equal_sources(mariadb, connection, dbt_project, user, password, ["shop.w"])
    connection.close()


@pytest.mark.parametrize("query, tables", [
    ("alter table w add system versioning", [("shop", "w")]),
    ("ALTER TABLE `x`.`w w` ADD PERIOD FOR SYSTEM_TIME(s, e), ADD SYSTEM VERSIONING", [("x", "w w")]),
    ("create or replace table w (id int primary key) with system versioning", [("shop", "w")]),
    ("/* tool */ create table if not exists x.w (id int, n int with system versioning)", [("x", "w")]),
    ("alter table w comment 'add system versioning later'", []),
    ("alter table w drop system versioning", []),
    ("create table w (id int primary key)", []),
])
def test_statements_that_make_a_table_system_versioned(query, tables):
    from python_jobs.capture.mysql_statements import versioned_tables

    assert versioned_tables(query, b"shop") == tables


CASCADES = (
    "create table shop.parent (id int primary key, code int not null unique, note varchar(10))",
    "create table shop.child (id int primary key, parent_id int, constraint child_parent foreign key (parent_id) "
    "references shop.parent (id) on delete cascade on update cascade)",
    "create table shop.staff (id int primary key, boss int, constraint staff_boss foreign key (boss) "
    "references shop.staff (id) on delete set null)",
    "create table shop.late (id int primary key, parent_code int)",
    # A cascade through a table that is not captured: top -> mid -> leaf.
    "create table shop.top (id int primary key)",
    "create table shop.mid (id int primary key, top_id int, foreign key (top_id) references shop.top (id) on delete cascade)",
    "create table shop.leaf (id int primary key, mid_id int, foreign key (mid_id) references shop.mid (id) on delete cascade)",
    "insert into shop.parent values (1, 10, 'a'), (2, 20, 'b'), (3, 30, 'c')",
    "insert into shop.child values (1, 1), (2, 1), (3, 2), (4, 3)",
    "insert into shop.staff values (1, null), (2, 1), (3, 2)",
    "insert into shop.late values (1, 10), (2, 30)",
    "insert into shop.top values (1), (2)", "insert into shop.mid values (1, 1), (2, 2)",
    "insert into shop.leaf values (1, 1), (2, 2)",
)
CAPTURED = ["shop.child", "shop.staff", "shop.late", "shop.leaf"]


def test_rows_a_foreign_key_cascades_into_are_read_again_and_the_mirrors_equal_the_source(mariadb, dbt_project, tmp_path):
    """The server writes no rows event for the child rows a cascade deletes or changes, only the
    parent's: after such a parent's change the capture reads the tables it reaches again online."""
    connection = mariadb.connect(autocommit=True)
    execute(connection, "create database shop", *CASCADES)
    user, password, config = captured_with_signal_table(mariadb, connection, CAPTURED, dbt_project, tmp_path)
    capture_mysql.run(config)
    execute(connection, "update shop.parent set note = 'x'")  # no key changed: nothing cascades
    assert capture_mysql.run(config).snapshot_rows == 0
    execute(connection,
            "alter table shop.late add constraint late_parent foreign key (parent_code) references shop.parent (code) "
            "on delete set null",
            "delete from shop.parent where id = 1", "update shop.parent set id = 5 where id = 2",
            "delete from shop.parent where code = 30", "delete from shop.staff where id = 1", "delete from shop.top where id = 2")
    capture_mysql.run(config)
    assert_mirrors_equal_sources(mariadb, connection, dbt_project, user, password, CAPTURED)
    connection.close()


def test_a_foreign_key_dropped_after_cascades_the_capture_has_not_read_yet_still_has_them_read_again(
        mariadb, dbt_project, tmp_path):
    """A capture judges a parent's change with the foreign keys of its place in the binlog, which its
    state keeps, not with the catalog's now: changes that cascaded while it was stopped are read
    again though the keys are dropped before it runs (directly, through a table between, and by a
    key added and dropped again meanwhile)."""
    connection = mariadb.connect(autocommit=True)
    execute(connection, "create database shop", *CASCADES)
    user, password, config = captured_with_signal_table(mariadb, connection, CAPTURED, dbt_project, tmp_path)
    capture_mysql.run(config)
    execute(connection,
            "alter table shop.late add constraint late_parent foreign key (parent_code) references shop.parent (code) "
            "on delete set null",
            "delete from shop.parent where id = 1", "update shop.parent set id = 5 where id = 2",
            "delete from shop.parent where code = 30", "delete from shop.top where id = 2",
            "alter table shop.child drop foreign key child_parent",
            "alter table shop.mid drop foreign key if exists `mid_ibfk_1`", "alter table shop.late drop foreign key late_parent",
            "delete from shop.parent where id = 5", "delete from shop.top where id = 1")  # no cascade now
    capture_mysql.run(config)
    assert_mirrors_equal_sources(mariadb, connection, dbt_project, user, password, CAPTURED)
    connection.close()


def test_columns_computed_per_row_by_an_alter_table_are_read_again(mariadb, dbt_project, tmp_path):
    """An ALTER TABLE that gives a generated column another expression, or adds a column whose older
    rows each get their own value (generated, AUTO_INCREMENT, a default expression), changes every
    row with no rows event: the schema change event cannot carry one value for them all."""
    connection = mariadb.connect(autocommit=True)
    execute(connection, "create database shop",
            "create table shop.g (id int primary key, a int, p int as (a * 2) persistent, v int as (a + 1) virtual)",
            "insert into shop.g (id, a) values (1, 10), (2, 20)")
    user, password, config = captured_with_signal_table(mariadb, connection, ["shop.g"], dbt_project, tmp_path)
    capture_mysql.run(config)
    execute(connection, "alter table shop.g modify p int as (a * 3) persistent, modify v int as (a + 5) virtual",
            "alter table shop.g add column n int not null auto_increment unique",
            "alter table shop.g add column u varchar(36) default (uuid()), add column b int default (a + 1)",
            "insert into shop.g (id, a) values (3, 30)")
    summary = capture_mysql.run(config)
    assert_mirrors_equal_sources(mariadb, connection, dbt_project, user, password, ["shop.g"])
    assert summary.snapshot_rows == 3  # the table read again, once
    connection.close()


def test_a_table_renamed_away_and_created_again_mirrors_only_its_new_rows(mariadb, dbt_project, tmp_path):
    """RENAME TABLE (or ALTER TABLE ... RENAME) that takes a captured table's name away leaves the
    name with no rows, as a DROP TABLE does, with no rows event; a table created under it later
    starts empty. In the same statement another captured name may get a table (a swap): read again."""
    connection = mariadb.connect(autocommit=True)
    execute(connection, "create database shop",
            *(f"create table shop.{name} (id int primary key, n int)" for name in ("a", "b", "c", "c_new")),
            *(f"insert into shop.{name} values (1, 1), (2, 2)" for name in ("a", "b", "c")),
            "insert into shop.c_new values (7, 7)")
    tables = ["shop.a", "shop.b", "shop.c"]
    user, password, config = captured_with_signal_table(mariadb, connection, tables, dbt_project, tmp_path)
    capture_mysql.run(config)
    execute(connection, "rename table shop.a to shop.a_old, shop.c to shop.c_old, shop.c_new to shop.c",
            "create table shop.a like shop.a_old", "insert into shop.a values (5, 5)",
            "alter table shop.b rename to shop.b_old", "create table shop.b (id int primary key, n int)",
            "insert into shop.b values (8, 8)")
    capture_mysql.run(config)
    assert_mirrors_equal_sources(mariadb, connection, dbt_project, user, password, tables)
    connection.close()


@pytest.mark.parametrize("query, tables", [
    ("rename table a to a_old", [("shop", "a")]),
    ("RENAME TABLE `x`.`a` TO x.a_old, b TO a", [("x", "a"), ("shop", "b")]),
    ("rename table a to t, b to a, t to b", []),  # a swap: both names get a table again
    ("alter table a add column c int, rename to a_old", [("shop", "a")]),
    ("alter table a rename column n to m", []),
])
def test_tables_whose_name_a_rename_takes_away(query, tables):
    from python_jobs.capture.mysql_statements import renamed_away_tables

    assert renamed_away_tables(query, "shop") == tables


def test_rows_an_alter_table_changed_as_it_ignored_errors_are_read_again(mariadb, dbt_project, tmp_path):
    """ALTER IGNORE TABLE ... ADD UNIQUE drops the rows it finds duplicate, and a column made NOT NULL
    in a session that is not strict gets 0 or '' for its NULLs: neither writes a rows event. A
    strict session's ALTER that would have to fails instead, and reads nothing again."""
    connection = mariadb.connect(autocommit=True)
    execute(connection, "create database shop", "create table shop.u (id int primary key, a int, s varchar(3))",
            "insert into shop.u values (1, 1, null), (2, 1, 'x'), (3, 2, 'y')")
    user, password, config = captured_with_signal_table(mariadb, connection, ["shop.u"], dbt_project, tmp_path)
    capture_mysql.run(config)
    execute(connection, "alter table shop.u modify a bigint not null default 0, add column n int")  # strict: no NULLs now
    assert capture_mysql.run(config).snapshot_rows == 0
    execute(connection, "alter ignore table shop.u add unique (a)")
    execute(connection, "set session sql_mode = 'NO_ENGINE_SUBSTITUTION'", "alter table shop.u change s s varchar(3) not null")
    summary = capture_mysql.run(config)
    assert_mirrors_equal_sources(mariadb, connection, dbt_project, user, password, ["shop.u"])
    assert summary.snapshot_rows == 2  # read again once, after both
    connection.close()


STRICT = 1 << 21


@pytest.mark.parametrize("ddl, sql_mode, reason", [
    ("alter ignore table u add unique (a)", STRICT, "ALTER IGNORE dropping duplicates"),
    ("ALTER ONLINE IGNORE TABLE u ADD PRIMARY KEY (a)", STRICT, "ALTER IGNORE dropping duplicates"),
    ("alter table u change s s varchar(3) not null", 0, "NOT NULL in a session that is not strict"),
    ("alter table u modify s varchar(3) NOT NULL default ''", None, "NOT NULL in a session that is not strict"),
    ("alter table u modify s varchar(3) not null", STRICT, None),
    ("alter table u add column t int not null", 0, None),  # an added column: existingRows says its value
    ("alter table u comment 'alter ignore: not null'", 0, None),
])
def test_alter_tables_that_may_change_rows_as_they_ignore_errors(ddl, sql_mode, reason):
    from python_jobs.capture.mysql_retypes import ignored_errors

    assert ignored_errors(ddl, sql_mode) == reason


def test_a_database_dropped_and_a_table_converted_to_a_partition_reach_the_mirrors(mariadb, dbt_project, tmp_path):
    """DROP DATABASE drops its captured tables, and MariaDB's ALTER TABLE ... CONVERT TABLE x TO
    PARTITION moves x's rows into the partitioned table (x is gone), all with no rows event."""
    connection = mariadb.connect(autocommit=True)
    execute(connection, "create database shop", "create database old",
            "create table shop.p (id int primary key, n int) partition by range (id) (partition p0 values less than (100))",
            "create table shop.x (id int primary key, n int)", "create table old.t (id int primary key, n int)",
            "insert into shop.p values (1, 1)", "insert into shop.x values (150, 150)", "insert into old.t values (1, 1), (2, 2)")
    tables = ["shop.p", "shop.x", "old.t"]
    user, password, config = captured_with_signal_table(mariadb, connection, tables, dbt_project, tmp_path, schemas=["shop", "old"])
    capture_mysql.run(config)
    execute(connection, "alter table shop.p convert table shop.x to partition p1 values less than (200)",
            "create table shop.x (id int primary key, n int)", "insert into shop.x values (7, 7)",
            "drop database old", "create database old", "create table old.t (id int primary key, n int)",
            "insert into old.t values (5, 5)")
    capture_mysql.run(config)
    assert_mirrors_equal_sources(mariadb, connection, dbt_project, user, password, tables)
    connection.close()


def test_a_renamed_column_holds_its_values_in_every_mirror_row(mariadb, dbt_project, tmp_path):
    """RENAME COLUMN or CHANGE gives every row its value under the new name with no rows event: the
    rows not changed since would hold null in the mirror's column of the new name."""
    connection = mariadb.connect(autocommit=True)
    execute(connection, "create database shop", "create table shop.r (id int primary key, a int, b varchar(5))",
            "insert into shop.r values (1, 10, 'x'), (2, 20, 'y')")
    user, password, config = captured_with_signal_table(mariadb, connection, ["shop.r"], dbt_project, tmp_path)
    capture_mysql.run(config)
    execute(connection, "alter table shop.r change b b varchar(8)")  # its own name: nothing to read
    assert capture_mysql.run(config).snapshot_rows == 0
    execute(connection, "alter table shop.r rename column a to qty, change column b `Label` varchar(8)",
            "insert into shop.r values (3, 30, 'z')")
    summary = capture_mysql.run(config)
    assert_mirrors_equal_sources(mariadb, connection, dbt_project, user, password, ["shop.r"])
    assert summary.snapshot_rows == 3
    connection.close()


def test_statements_prefixed_with_set_statement_are_told_as_the_statements_they_are(mariadb, dbt_project, tmp_path):
    """MariaDB's SET STATEMENT var = value FOR <statement> is logged with its prefix: a TRUNCATE, an
    ALTER or a change logged as a statement so prefixed is what it would be without it."""
    connection = mariadb.connect(autocommit=True)
    execute(connection, "create database shop", "create table shop.t (id int primary key, s varchar(3))",
            "create table shop.v (id int primary key, s varchar(3))",
            "insert into shop.t values (1, 'a')", "insert into shop.v values (1, null), (2, 'b')")
    user, password, config = captured_with_signal_table(mariadb, connection, ["shop.t", "shop.v"], dbt_project, tmp_path)
    capture_mysql.run(config)
    execute(connection, "set statement lock_wait_timeout = 5 for truncate table shop.t", "insert into shop.t values (2, 'c')",
            "set statement sql_mode = 'NO_ENGINE_SUBSTITUTION', max_statement_time = 60 for "
            "alter table shop.v modify s varchar(3) not null")
    capture_mysql.run(config)
    assert_mirrors_equal_sources(mariadb, connection, dbt_project, user, password, ["shop.t", "shop.v"])
    execute(connection, "set statement binlog_format = 'STATEMENT' for insert into shop.t values (3, 'd')")
    with pytest.raises(CaptureError, match="shop.t at .* is logged as a statement"):
        capture_mysql.run(config)
    connection.close()


@pytest.mark.parametrize("query, text", [
    ("set statement lock_wait_timeout = 5 for truncate table t", "truncate table t"),
    ("SET STATEMENT sql_mode='A,for b', max_statement_time=5 FOR alter table t add c int", "alter table t add c int"),
    ("/*!40101 truncate table t */", "truncate table t"),
    ("/*M!100101 truncate table t */ ", "truncate table t"),
    ("/* a comment */ set session x = 1", "set session x = 1"),
])
def test_what_a_statement_is_behind_its_prefix_and_executable_comments(query, text):
    from python_jobs.capture.mysql_statements import statement

    assert statement(query) == text


def test_compressed_columns_of_a_table_not_captured_pass_and_of_a_captured_one_stop_the_capture_saying_what_to_do(
        mariadb, tmp_path):
    """MariaDB's COMPRESSED columns have binlog types the reader did not know: any change of a table with one,
    captured or not, failed the capture ("0 is not a valid MetadataFieldType"). A table not captured now
    passes. A captured column made COMPRESSED and back (as the capture's own refusal of such a column
    advises) leaves compressed values in the binlog between: the capture stops there, naming the table
    and what to run, and writes nothing; --resnapshot reads it again."""
    connection = mariadb.connect(autocommit=True)
    execute(connection, "create database shop", "create table shop.c (id int primary key, body text)",
            "create table shop.z (id int primary key, v varchar(20) compressed, body text compressed)",
            "insert into shop.c values (1, 'a')")
    user, password = create_mariadb_capture_user(mariadb, ["shop"])
    out = tmp_path / "inbox"
    out.mkdir()
    config = config_for(mariadb, user, password, ["shop.c"], out, tmp_path / "state.json")
    capture_mysql.run(config)
    execute(connection, "insert into shop.z values (1, 'v', 'zz')", "update shop.c set body = 'b' where id = 1")
    capture_mysql.run(config)
    assert '"body":"b"' in "".join(path.read_text() for path in out.iterdir())
    execute(connection, "alter table shop.c modify body text compressed", "update shop.c set body = 'c' where id = 1",
            "alter table shop.c modify body text")
    files, state = sorted(out.iterdir()), config.state.read_text()
    with pytest.raises(CaptureError, match=r"shop\.c at \S+:\d+ .*cannot decode.*--resnapshot"):
        capture_mysql.run(config)
    assert sorted(out.iterdir()) == files and config.state.read_text() == state
    capture_mysql.run(dataclasses.replace(config, resnapshot=True))
    assert '"body":"c"' in sorted(out.iterdir())[-1].read_text()
    connection.close()
