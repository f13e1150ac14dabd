"""MariaDB text keys whose collation takes values apart in bytes as one (case, trailing spaces): an
ALTER TABLE that retypes a column to CHAR strips its values' trailing spaces, and one to BINARY pads
them with zero bytes, in every row and with no rows event; the capture reads such a table again
online, so the mirror's keys and values become the source's."""

from __future__ import annotations

import base64

from harness.mariadb_server import create_mariadb_capture_user
from python_jobs import scaffold
from python_jobs.capture import mysql as capture_mysql
from python_jobs.capture.mysql_pages import SIGNAL_TABLE, SIGNAL_TABLE_DDL
from test_capture_faults import mariadb  # noqa: F401 - fixture
from test_online_snapshots_mariadb import execute


def source_rows(server) -> list[tuple]:
    connection = server.connect()
    with connection.cursor() as cursor:
        cursor.execute("select k, label, to_base64(tag), n from shop.codes")
        rows = sorted(cursor.fetchall())
    connection.close()
    return rows


def test_columns_retyped_to_char_or_binary_are_read_again_with_their_new_padding(mariadb, dbt_project, tmp_path):
    execute(mariadb, "create database shop",
            "create table shop.codes (k varchar(10) collate utf8mb4_general_ci primary key, label varchar(10), "
            "tag varbinary(4), n int)",
            "insert into shop.codes values ('a ', 'x  ', 'ab', 1), ('B', 'y ', 'c', 2), ('é  ', 'z', '', 3)",
            "create database cdc_merge", SIGNAL_TABLE_DDL.format(table=SIGNAL_TABLE))
    user, password = create_mariadb_capture_user(mariadb, ["shop"])
    execute(mariadb, f"grant insert on {SIGNAL_TABLE} to {user}@'%'")
    config = capture_mysql.CaptureConfig(host="127.0.0.1", port=mariadb.port, user=user, password=password,
                                         tables=("shop.codes",), out=dbt_project.inbox, state=tmp_path / "state.json")
    capture_mysql.run(config)
    # 'a ' becomes 'a' (the same key to the collation, another to the mirror), 'x  ' 'x', 'ab' 'ab\0\0'.
    execute(mariadb, "alter table shop.codes modify k char(10) collate utf8mb4_general_ci, modify label char(10), "
                     "modify tag binary(4)",
            "insert into shop.codes values ('d ', 'w ', 'd', 4)")
    again = capture_mysql.run(config)

    (table,) = scaffold.mysql_tables("127.0.0.1", mariadb.port, user, password, ["shop.codes"])
    (dbt_project.project_dir / "models" / "mirrors" / f"{table.model_name}.sql").write_text(scaffold.model_sql(table))
    assert dbt_project.land({"shop.codes": ["k"]}).counts["rejected"] == 0
    dbt_project.dbt("run", "--select", table.model_name)
    mirrored = sorted((row["k"], row["label"], row["tag"], row["n"]) for row in dbt_project.query(
        f"select k, label, tag, n from {dbt_project.schema}.{table.model_name}"))
    assert mirrored == source_rows(mariadb)
    assert again.snapshot_rows == 4  # the table read again, once
    assert ("a", "x", base64.b64encode(b"ab\0\0").decode(), 1) in mirrored
