"""A TIMESTAMP column added with a literal default (ALTER TABLE ... ADD COLUMN ts timestamp DEFAULT
'2026-01-01 00:00:00') gives the rows that existed then the time that literal is in the time zone of
the session that added it: the server's, or the session's own, which the binlog's ALTER carries.
The capture writes those rows' value (the schema change event's existingRows) as that UTC time, as
it writes every TIMESTAMP, and the mirror equals the source table. Modelled on
tests/test_capture_types.py, with its helpers."""

from __future__ import annotations

import datetime as dt

from harness.mariadb_server import start_mariadb
from python_jobs import scaffold
from python_jobs.capture import mysql as capture_mysql
from test_capture_mysql_generated_invisible_and_quoted_columns import capture_config, server_directory  # noqa: F401
from test_capture_types import apply

ADDED = [  # (the adding session's time zone, or None: the server's; the column; its default)
    ("'+05:30'", "ts_session", "timestamp not null default '2026-01-01 00:00:00'"),
    ("'-03:00'", "ts6_session", "timestamp(6) null default '2026-07-01 12:00:00.250000'"),
    (None, "ts_server", "timestamp not null default '2026-01-01 00:00:00'"),
    (None, "zero", "timestamp not null default '0000-00-00 00:00:00'"),
    ("'+05:30'", "dt_local", "datetime(3) default '2026-01-01 00:00:00.5'"),
]


def test_timestamps_added_with_a_literal_default_equal_the_source(dbt_project, server_directory, tmp_path):  # noqa: F811
    server = start_mariadb(server_directory)
    try:
        connection = server.connect(autocommit=True)
        with connection.cursor() as cursor:
            cursor.execute("set global time_zone = '+09:00'")  # the server's, not UTC
            cursor.execute("create database shop character set utf8mb4")
            cursor.execute("create table shop.stamps (id int primary key, n int)")
            cursor.execute("insert into shop.stamps values (1, 1), (2, 2)")
        config = capture_config(server, dbt_project.inbox, tmp_path / "capture-state.json", "shop.stamps")
        capture_mysql.run(config)
        with connection.cursor() as cursor:
            cursor.execute("insert into shop.stamps values (3, 3)")
        for time_zone, name, definition in ADDED:
            adding = server.connect(autocommit=True)  # the server's time zone, unless it sets its own
            with adding.cursor() as cursor:
                cursor.execute("set session sql_mode = ''")  # the zero timestamp
                if time_zone:
                    cursor.execute(f"set session time_zone = {time_zone}")
                cursor.execute(f"alter table shop.stamps add column {name} {definition}")
            adding.close()
        with connection.cursor() as cursor:
            cursor.execute("insert into shop.stamps (id, n) values (4, 4)")
        capture_mysql.run(config)

        (table,) = scaffold.mysql_tables("127.0.0.1", server.port, config.user, config.password, ["shop.stamps"])
        mirrored = apply(dbt_project, table)
        names = [name for _, name, _ in ADDED]
        with connection.cursor() as cursor:
            cursor.execute("set session time_zone = '+00:00'")
            cursor.execute(f"select id, {', '.join(f'cast({name} as char)' for name in names)} from shop.stamps")
            source = {row[0]: dict(zip(names, row[1:])) for row in cursor.fetchall()}
        assert sorted(mirrored) == sorted(source) == [1, 2, 3, 4]
        for row_id, values in source.items():
            for name, text in values.items():
                expected = None if text is None or text.startswith("0000") else dt.datetime.fromisoformat(text)
                assert mirrored[row_id][name] == expected, f"row {row_id} column {name}: source {text!r} (UTC)"
        assert mirrored[1]["ts_session"] == dt.datetime(2025, 12, 31, 18, 30)
        assert mirrored[1]["ts_server"] == dt.datetime(2025, 12, 31, 15, 0)
        connection.close()
    finally:
        server.stop()
