"""MariaDB tables whose DATETIME, TIME and TIMESTAMP columns have MariaDB 5.3's (and MySQL 5.5's)
storage format: created while mysql56_temporal_format was OFF, or upgraded from those servers;
information_schema's column_type says `time /* mariadb-5.3 */`. Without fractional seconds they
read alike from the snapshot and the stream (a negative TIME too, a signed number in the binlog) and
mirror as the source holds them; with fractional seconds the binlog has neither their type nor
their length, and the capture refuses the table, saying how to convert it. Modelled on
tests/test_capture_types.py, with its helpers."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from harness.mariadb_server import start_mariadb
from python_jobs import scaffold
from python_jobs.capture import mysql as capture_mysql
from python_jobs.capture.output import CaptureError
from test_capture_mysql_generated_invisible_and_quoted_columns import capture_config, server_directory  # noqa: F401
from test_capture_types import STREAMED, apply, assert_snapshot_and_stream_agree, rows_through_both_ways

COLUMNS = [
    ("dt", "datetime", "'2026-01-02 03:04:05'", "'0000-00-00 00:00:00'"),
    ("tm", "time", "'-12:34:56'", "'838:59:59'"),
    ("tn", "time", "'-00:00:01'", "'-838:59:59'"),
    ("ts", "timestamp null", "'2026-01-02 03:04:05'", "'1970-01-01 00:00:01'"),
]


def test_old_temporal_formats_read_alike_both_ways_or_are_refused(dbt_project, server_directory, tmp_path):  # noqa: F811
    server = start_mariadb(server_directory)
    try:
        root = server.connect(autocommit=True)
        with root.cursor() as cursor:
            cursor.execute("set global mysql56_temporal_format = OFF")  # for the sessions from now on
        connection = server.connect(autocommit=True)
        with connection.cursor() as cursor:
            cursor.execute("set session sql_mode = ''")
            cursor.execute("create database shop character set utf8mb4")
            cursor.execute("create table shop.legacy (id int primary key, "
                           + ", ".join(f"{name} {data_type}" for name, data_type, *_ in COLUMNS) + ")")
            cursor.execute("create table shop.fine (id int primary key, at datetime(3), took time(6))")
            cursor.execute("select column_type from information_schema.columns where table_name = 'legacy' and column_name = 'tm'")
            assert cursor.fetchone()[0] == "time /* mariadb-5.3 */"
        config = capture_config(server, dbt_project.inbox, tmp_path / "capture-state.json", "shop.legacy")
        names = ", ".join(name for name, *_ in COLUMNS)
        rows_through_both_ways(connection, COLUMNS, lambda: capture_mysql.run(config),
                               "insert into shop.legacy values ({row}, {values})",
                               f"insert into shop.legacy select id + {STREAMED}, {names} from shop.legacy")
        (table,) = scaffold.mysql_tables("127.0.0.1", server.port, config.user, config.password, ["shop.legacy"])
        mirrored = apply(dbt_project, table)
        assert_snapshot_and_stream_agree(mirrored)
        with connection.cursor() as cursor:
            cursor.execute("set session time_zone = '+00:00'")
            cursor.execute("select id, cast(dt as char), time_format(tm, '%H:%i:%s.%f'), time_format(tn, '%H:%i:%s.%f'), "
                           "cast(ts as char) from shop.legacy")
            source = {row[0]: row[1:] for row in cursor.fetchall()}
        for row_id, (datetime, time, negative, timestamp) in source.items():
            assert mirrored[row_id]["dt"] == (None if datetime is None or datetime.startswith("0000")
                                              else dt.datetime.fromisoformat(datetime)), row_id
            assert (mirrored[row_id]["tm"], mirrored[row_id]["tn"]) == (time, negative), row_id
            assert mirrored[row_id]["ts"] == (timestamp and dt.datetime.fromisoformat(timestamp)), row_id
        assert mirrored[1 + STREAMED]["tm"] == "-12:34:56.000000"

        fine = dataclasses.replace(config, tables=("shop.fine",), out=tmp_path / "fine", state=tmp_path / "fine.json")
        fine.out.mkdir()
        with pytest.raises(CaptureError, match=r"column at of table shop\.fine has MariaDB 5\.3's format.*"
                                               r"mysql56_temporal_format=ON, ALTER TABLE shop\.fine FORCE"):
            capture_mysql.run(fine)
        with root.cursor() as cursor:
            cursor.execute("set global mysql56_temporal_format = ON")
            cursor.execute("alter table shop.fine force")
            cursor.execute("insert into shop.fine values (1, '2026-01-02 03:04:05.5', '-00:00:00.25')")
        capture_mysql.run(fine)
        connection.close()
        root.close()
    finally:
        server.stop()
