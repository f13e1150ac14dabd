"""A MariaDB session may log its changes with a row image of its own (SET SESSION binlog_row_image
= MINIMAL or NOBLOB) while the server's is FULL: its rows events leave out columns (an update's
before image has only the key, its after image only what changed; an insert leaves out what took
its default; NOBLOB leaves out unchanged BLOBs). Written as they are, such rows would mirror as
nulls, and an update as a delete of its key and an insert of a row without one. The capture stops
before it writes them, saying what to do, and after --resnapshot (in one transaction, or online) the
mirror equals the source.
Captured by the least-privileged user the docs prescribe (tests/test_capture_types.py's way)."""

from __future__ import annotations

import base64
import dataclasses
import shutil
import tempfile
from pathlib import Path

import pytest

from harness.mariadb_server import start_mariadb
from python_jobs import scaffold
from python_jobs.capture import mysql as capture_mysql
from python_jobs.capture.mysql_pages import SIGNAL_TABLE, SIGNAL_TABLE_DDL
from python_jobs.capture.output import CaptureError
from test_capture_mysql_generated_invisible_and_quoted_columns import (
    assert_mirror_equals_source,
    capture_config,
    source_rows,
)
from test_capture_types import apply

NAMES = ["id", "a", "b", "bl"]
# Each with the --resnapshot's way: in one transaction, or online (its range records delete row 4).
SESSIONS = [
    ("MINIMAL", "update shop.images set a = 10 where id = 1", "consistent"),
    ("MINIMAL", "insert into shop.images (id, a) values (3, 3)", "consistent"),
    ("MINIMAL", "delete from shop.images where id = 4", "consistent"),
    ("MINIMAL", "delete from shop.images where id = 4", "online"),
    ("NOBLOB", "update shop.images set b = 'TWO' where id = 2", "consistent"),
]


@pytest.fixture
def server_directory():
    # Not under pytest's tmp_path: the server runs as another user, who cannot enter it.
    directory = Path(tempfile.mkdtemp(prefix="cdc-merge-row-images-"))
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.parametrize("image, statement, resnapshot", SESSIONS, ids=["minimal-update", "minimal-insert", "minimal-delete",
                                                                        "minimal-delete-online", "noblob-update"])
def test_rows_a_session_logs_without_every_column_stop_the_capture_until_a_resnapshot(
        dbt_project, server_directory, tmp_path, image, statement, resnapshot):
    server = start_mariadb(server_directory)
    try:
        connection = server.connect(autocommit=True)
        with connection.cursor() as cursor:
            cursor.execute("create database shop character set utf8mb4")
            cursor.execute("create table shop.images (id int primary key, a int, b varchar(5) not null default 'dflt', "
                           "bl blob)")
            cursor.execute("insert into shop.images values (1, 1, 'one', 'b1'), (2, 2, 'two', 'b2'), (4, 4, 'four', 'b4')")
            cursor.execute("create database cdc_merge")
            cursor.execute(SIGNAL_TABLE_DDL.format(table=SIGNAL_TABLE))
        config = capture_config(server, dbt_project.inbox, tmp_path / "capture-state.json", "shop.images")
        with connection.cursor() as cursor:
            cursor.execute(f"grant insert on {SIGNAL_TABLE} to {config.user}@'%'")
        capture_mysql.run(config)
        files, state = sorted(config.out.iterdir()), config.state.read_text()
        with connection.cursor() as cursor:
            cursor.execute(f"set session binlog_row_image = '{image}'")
            cursor.execute(statement)
            cursor.execute("set session binlog_row_image = 'FULL'")
            cursor.execute("update shop.images set a = a + 100 where id = 2")
        with pytest.raises(CaptureError, match=r"lack columns .*binlog_row_image=FULL \(for every session.*--resnapshot"):
            capture_mysql.run(config)
        assert sorted(config.out.iterdir()) == files and config.state.read_text() == state

        capture_mysql.run(dataclasses.replace(config, resnapshot=True, snapshot_mode=resnapshot, page_rows=1))
        written = [line for path in sorted(set(config.out.iterdir()) - set(files)) for line in path.read_text().splitlines()]
        # Online, the mirror keeps its rows while the pages are read: no truncate, a range record a page.
        assert sum('"op":"t"' in line.replace(" ", "") for line in written) == (resnapshot == "consistent")
        assert sum('"range":' in line for line in written) == (3 if resnapshot == "online" else 0)
        (table,) = scaffold.mysql_tables("127.0.0.1", server.port, config.user, config.password, ["shop.images"])
        mirrored = apply(dbt_project, table)
        source = source_rows(connection, "shop.images", NAMES)
        for row in source.values():
            row["bl"] = base64.b64encode(row["bl"]).decode() if row["bl"] is not None else None  # a BLOB's written form
        assert_mirror_equals_source(mirrored, source, table)
        connection.close()
    finally:
        server.stop()
