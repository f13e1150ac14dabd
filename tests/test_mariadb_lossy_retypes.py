"""ALTER TABLEs of a MariaDB table that change the values its rows hold, in every row and with no
rows event: a decimal's scale narrowed rounds, DATETIME(6) made DATETIME drops the fraction, a signed
column made unsigned clips -5 to 0 and an ENUM's dropped member becomes '' (in a non-strict
session), a SET's members reordered reorder its text, VARBINARY made VARCHAR turns the mirror's
base64 into text, and CONVERT TO CHARACTER SET latin1 makes '中' '?'. The capture reads such a table
again online (mysql_retypes.py), also when a later ALTER widened the type back before it read the first,
and not after a widening, so the mirror's values become the source's."""

from __future__ import annotations

import datetime as dt

from harness.mariadb_server import create_mariadb_capture_user
from python_jobs import scaffold
from python_jobs.capture import mysql as capture_mysql
from python_jobs.capture.mysql_pages import SIGNAL_TABLE, SIGNAL_TABLE_DDL
from test_capture_faults import mariadb  # noqa: F401 - fixture
from test_online_snapshots_mariadb import execute

COLUMNS = "id, price, at, delta, kind, tags, raw, label, qty, code"


def source_rows(server) -> list[tuple]:
    connection = server.connect()
    with connection.cursor() as cursor:
        cursor.execute(f"select {COLUMNS} from shop.readings")
        rows = sorted(cursor.fetchall())
    connection.close()
    return rows


def test_retypes_that_change_values_are_read_again_and_widenings_not(mariadb, dbt_project, tmp_path):
    execute(mariadb, "create database shop",
            "create table shop.readings (id int primary key, price decimal(10,2), at datetime(6), delta int, "
            "kind enum('x','y','z'), tags set('a','b','c'), raw varbinary(10), label varchar(10) character set utf8mb4, "
            "qty int, code varchar(10))",
            "insert into shop.readings values (1, 1.25, '2020-01-01 10:00:01.600000', -5, 'y', 'a,b', 'ab', 'é', 1, 'a'), "
            "(2, 2.34, '2020-01-01 10:00:02.400000', 7, 'z', 'c', 'xyz', '中', 2, 'b')",
            "create database cdc_merge", SIGNAL_TABLE_DDL.format(table=SIGNAL_TABLE))
    user, password = create_mariadb_capture_user(mariadb, ["shop"])
    execute(mariadb, f"grant insert on {SIGNAL_TABLE} to {user}@'%'")
    config = capture_mysql.CaptureConfig(host="127.0.0.1", port=mariadb.port, user=user, password=password,
                                         tables=("shop.readings",), out=dbt_project.inbox, state=tmp_path / "state.json")
    capture_mysql.run(config)
    execute(mariadb, "alter table shop.readings modify qty bigint, modify code varchar(20)")
    widened = capture_mysql.run(config)
    # Read far behind: the catalog has DATETIME(6) again, so only the statement tells the fraction went.
    execute(mariadb, "alter table shop.readings modify at datetime", "alter table shop.readings modify at datetime(6)")
    behind = capture_mysql.run(config)
    execute(mariadb, "set session sql_mode = ''",
            "alter table shop.readings modify price decimal(10,1), modify delta int unsigned, "
            "modify kind enum('x','z'), modify tags set('c','b','a'), modify raw varchar(10)")
    retyped = capture_mysql.run(config)
    execute(mariadb, "set session sql_mode = ''", "alter table shop.readings convert to character set latin1",
            "insert into shop.readings values (3, 3.5, '2020-01-02', 1, 'x', 'b', 'new', 'ü', 3, 'c')")
    converted = capture_mysql.run(config)

    (table,) = scaffold.mysql_tables("127.0.0.1", mariadb.port, user, password, ["shop.readings"])
    (dbt_project.project_dir / "models" / "mirrors" / f"{table.model_name}.sql").write_text(scaffold.model_sql(table))
    assert dbt_project.land({"shop.readings": ["id"]}).counts["rejected"] == 0
    dbt_project.dbt("run", "--select", table.model_name)
    mirrored = sorted(tuple(row.values()) for row in dbt_project.query(
        f"select {COLUMNS} from {dbt_project.schema}.{table.model_name}"))
    assert mirrored == source_rows(mariadb)
    # Read again after the lossy ALTERs only; the conversion's read has the row inserted after it too.
    assert (widened.snapshot_rows, behind.snapshot_rows, retyped.snapshot_rows, converted.snapshot_rows) == (0, 2, 2, 3)
    assert mirrored[0][2:8] == (dt.datetime(2020, 1, 1, 10, 0, 1), 0, "", "b,a", "ab", "é") and mirrored[1][7] == "?"
