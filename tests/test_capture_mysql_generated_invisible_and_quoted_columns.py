"""MariaDB columns that are not plain stored columns of plain names mirror as the source holds them,
through the snapshot and the stream alike: generated columns (VIRTUAL, which the binlog's full row
image carries computed, and PERSISTENT), an INVISIBLE column (which `SELECT *` leaves out and the
binlog does not), names that need backquotes (a space, a backquote, a reserved word, upper case),
columns added in the middle and first while the capture is behind, and CHAR columns on a server
whose sql_mode pads them to their full length in a SELECT (PAD_CHAR_TO_FULL_LENGTH) but not in the
binlog. Modelled on tests/test_capture_types.py, whose helpers these use."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from harness.mariadb_server import create_mariadb_capture_user, start_mariadb
from python_jobs import scaffold
from python_jobs.capture import mysql as capture_mysql
from test_capture_types import STREAMED, apply, assert_snapshot_and_stream_agree, assert_verify_is_clean_and_can_fail

# The table's columns as written, and each one's name in the source's catalog.
LAYOUT = ("id int primary key, a int, x int as (a * 2) virtual, p int as (a + 1) persistent, "
          "hidden int invisible default 5, `Odd Name` varchar(5), `a``b` int, `select` varchar(3), `UPPER` int")
NAMES = ["id", "a", "x", "p", "hidden", "Odd Name", "a`b", "select", "UPPER"]
# Stored, not generated: what an insert names.
WRITTEN = "id, a, hidden, `Odd Name`, `a``b`, `select`, `UPPER`"
ROWS = ["1, 10, 7, 'two w', 1, 's', 3", "2, -4, 5, '', 0, '', -1", "3, null, null, null, null, null, null"]


@pytest.fixture
def server_directory():
    # Not under pytest's tmp_path: the server runs as another user, who cannot enter it.
    directory = Path(tempfile.mkdtemp(prefix="cdc-merge-layouts-"))
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def capture_config(server, inbox: Path, state: Path, table: str) -> capture_mysql.CaptureConfig:
    user, password = create_mariadb_capture_user(server, ["shop"])
    return capture_mysql.CaptureConfig(host="127.0.0.1", port=server.port, user=user, password=password,
                                       tables=(table,), out=inbox, state=state)


def quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def source_rows(connection, table: str, names: list[str]) -> dict[int, dict]:
    """The source's rows by id, every column named (an invisible one too), as stored."""
    with connection.cursor() as cursor:
        cursor.execute("set session sql_mode = ''")  # CHARs as stored, not padded
        cursor.execute(f"select {', '.join(quoted(name) for name in names)} from {table}")
        rows = [dict(zip(names, row)) for row in cursor.fetchall()]
    return {row["id"]: row for row in rows}


def test_mariadb_generated_invisible_and_quoted_columns_equal_the_source(dbt_project, server_directory, tmp_path):
    server = start_mariadb(server_directory)
    try:
        connection = server.connect(autocommit=True)
        with connection.cursor() as cursor:
            cursor.execute("create database shop character set utf8mb4")
            cursor.execute(f"create table shop.layout ({LAYOUT})")
            for row in ROWS:
                cursor.execute(f"insert into shop.layout ({WRITTEN}) values ({row})")
        config = capture_config(server, dbt_project.inbox, tmp_path / "capture-state.json", "shop.layout")
        capture_mysql.run(config)
        with connection.cursor() as cursor:
            stored = ", ".join(quoted(name) for name in NAMES[1:] if name not in ("x", "p"))
            cursor.execute(f"insert into shop.layout ({WRITTEN}) select id + {STREAMED}, {stored} from shop.layout")
        capture_mysql.run(config)
        table = scaffold.mysql_tables("127.0.0.1", server.port, config.user, config.password, ["shop.layout"])[0]
        assert [column.name for column in table.columns] == NAMES
        mirrored = apply(dbt_project, table)
        assert_snapshot_and_stream_agree(mirrored)
        assert_mirror_equals_source(mirrored, source_rows(connection, "shop.layout", NAMES), table)
        assert mirrored[1]["x"] == 20 and mirrored[1]["p"] == 11 and mirrored[1]["hidden"] == 7

        # Changed while the capture is behind: a generated column follows its base column, and the
        # binlog's columns change their order twice (a column added after a, then one first).
        with connection.cursor() as cursor:
            cursor.execute(f"update shop.layout set a = 30, `a``b` = 8 where id in (1, {1 + STREAMED})")
            cursor.execute("alter table shop.layout add column mid int not null default 9 after a")
            cursor.execute(f"update shop.layout set a = 40, mid = 6, hidden = 1 where id in (2, {2 + STREAMED})")
            cursor.execute("alter table shop.layout add column lead varchar(3) default 'L' first")
            cursor.execute(f"insert into shop.layout ({WRITTEN}, mid, lead) values (4, 50, 2, 'four', 4, 'f', 4, 1, 'Z')")
            cursor.execute(f"update shop.layout set `Odd Name` = 'moved' where id = {3 + STREAMED}")
        capture_mysql.run(config)
        table = scaffold.mysql_tables("127.0.0.1", server.port, config.user, config.password, ["shop.layout"])[0]
        names = [column.name for column in table.columns]
        assert names == ["lead", "id", "a", "mid", *NAMES[2:]]
        mirrored = apply(dbt_project, table)
        source = source_rows(connection, "shop.layout", names)
        assert sorted(mirrored) == sorted(source) == [1, 2, 3, 4, 101, 102, 103]
        assert_mirror_equals_source(mirrored, source, table)
        assert mirrored[101]["x"] == 60 and mirrored[102]["p"] == 41 and mirrored[4]["x"] == 100
        connection.close()
    finally:
        server.stop()


def assert_mirror_equals_source(mirrored: dict[int, dict], source: dict[int, dict], table: scaffold.SourceTable) -> None:
    model_names = scaffold.model_column_names(table)
    assert sorted(mirrored) == sorted(source)
    for row_id, values in source.items():
        for name, value in values.items():
            assert mirrored[row_id][model_names[name]] == value, f"row {row_id} column {name}: source {value!r}"


CHARS = [("c5", "char(5)", "'ab'", "'  a'"), ("cl", "char(4) character set latin1", "'é'", "''"),
         ("cb", "char(3) collate utf8mb4_bin", "'x y'", "' '"), ("vc", "varchar(5)", "'ab '", "''")]


def test_mariadb_chars_padded_by_the_servers_sql_mode_equal_the_source(dbt_project, server_directory, tmp_path,
                                                                       monkeypatch):
    """A CHAR holds its text without trailing spaces, and the binlog has it so; a SELECT in a
    session of sql_mode PAD_CHAR_TO_FULL_LENGTH pads it to its length. The server's sql_mode is
    the capture's sessions' own unless it sets another, as it is cdc-verify's."""
    server = start_mariadb(server_directory)
    try:
        connection = server.connect(autocommit=True)
        with connection.cursor() as cursor:
            cursor.execute("set global sql_mode = concat(@@global.sql_mode, ',PAD_CHAR_TO_FULL_LENGTH')")
            cursor.execute("create database shop character set utf8mb4")
            cursor.execute("create table shop.chars (id int primary key, "
                           + ", ".join(f"{name} {data_type}" for name, data_type, *_ in CHARS) + ")")
            for row, values in ((1, [column[2] for column in CHARS]), (2, [column[3] for column in CHARS]),
                                (3, ["null"] * len(CHARS))):
                cursor.execute(f"insert into shop.chars values ({row}, {', '.join(values)})")
        config = capture_config(server, dbt_project.inbox, tmp_path / "capture-state.json", "shop.chars")
        capture_mysql.run(config)
        names = ", ".join(name for name, *_ in CHARS)
        with connection.cursor() as cursor:
            cursor.execute(f"insert into shop.chars select id + {STREAMED}, {names} from shop.chars")
        capture_mysql.run(config)
        (table,) = scaffold.mysql_tables("127.0.0.1", server.port, config.user, config.password, ["shop.chars"])
        mirrored = apply(dbt_project, table)
        assert_snapshot_and_stream_agree(mirrored)
        assert mirrored[1]["c5"] == "ab" and mirrored[2]["c5"] == "  a" and mirrored[2]["cb"] == ""
        assert_mirror_equals_source(mirrored, source_rows(connection, "shop.chars", ["id"] + [n for n, *_ in CHARS]), table)
        monkeypatch.setenv("MYSQL_PWD", config.password)  # cdc-verify's; gone after the test
        assert_verify_is_clean_and_can_fail(dbt_project, {"mysql": f"{config.user}@127.0.0.1:{server.port}"},
                                            table.model_name, "c5", "'zz'", source_table="shop.chars")
        connection.close()
    finally:
        server.stop()
