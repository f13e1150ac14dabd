"""Every column type reads the same from a capture's snapshot and from its stream, and lands in the
mirror as the source holds it. One table per server with a column per type; each row is inserted
before the snapshot and again after it, so one copy reaches the mirror through the snapshot and
the other through the stream. Captured by the least-privileged user the docs prescribe, modelled
by cdc-scaffold, landed, applied, and compared with the source table itself (docs/type_mapping.md
says how each type is written).
(Why one file of over 350 lines: both servers' types and their expected mirror values side by side,
as docs/type_mapping.md has them, with the helpers both use.)"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import struct
import tempfile
from decimal import Decimal
from pathlib import Path

import pytest

from harness.mariadb_server import create_mariadb_capture_user, start_mariadb
from harness.postgres_server import create_capture_user, start_postgres
from python_jobs import scaffold
from python_jobs.capture import mysql as capture_mysql
from python_jobs.capture import postgres as capture_postgres
from test_capture_faults import following_capture, stopped, wait_for

STREAMED = 100  # the stream's copy of row n is row n + STREAMED
FOLLOWED = 200  # PostgreSQL's: a third copy, through --follow

# (column, type, a typical value, an edge value); a third row is all null.
POSTGRES_COLUMNS = [
    ("j", "jsonb", """'{"k": 5, "x": [1, 2.50], "s": "b5"}'""", "'null'"),
    ("js", "json", """'{"k":  5}'""", "'[]'"),
    ("a", "text[]", """'{a,b5,"c d"}'""", "'{}'"),
    ("ia", "int[]", "'{1,2}'", "'{NULL}'"),
    ("n", "numeric(10,2)", "12.5", "'NaN'"),
    ("nn", "numeric", "123456789012345678901234.5678", "-0.000001"),
    ("f", "real", "1.1", "'Infinity'"),
    ("d", "double precision", "0.1", "-1e-300"),
    ("b", "boolean", "true", "false"),
    ("ts", "timestamptz", "'2026-01-02 03:04:05.123456+05:30'", "'infinity'"),
    ("lt", "timestamp", "'2026-01-02 03:04:05'", "'1970-01-01 00:00:00'"),
    ("dt", "date", "'2026-01-02'", "'-infinity'"),
    ("tm", "time", "'12:34:56.5'", "'24:00'"),
    ("iv", "interval", "'1 day 02:00:00'", "'-1 mon'"),
    ("by", "bytea", r"'\x0102ff'", r"'\x'"),
    ("u", "uuid", "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'", "'00000000-0000-0000-0000-000000000000'"),
    ("e", "shop.mood", "'ok'", "'sad'"),
    ("m", "money", "12.34", "-1"),
    ("big", "bigint", "9223372036854775807", "-9223372036854775808"),
    ("sm", "smallint", "-32768", "0"),
    ("tx", "text", "'zoë \"q\" \\ 東京'", "''"),
    ("ch", "char(4)", "'ab'", "''"),
    ("ip", "inet", "'10.0.0.1/32'", "'::1'"),
    # Years before 1000 as they are; times before year 1 as null (docs/type_mapping.md).
    ("early", "timestamptz", "'0099-06-01 12:00:00+00'", "'0001-01-01 00:00:00+00 BC'"),
    ("early3", "timestamptz(3)", "'0999-01-01 00:00:00.5+00'", "'0001-01-01 00:00:00+00 BC'"),
    ("local", "timestamp", "'0999-01-01 00:00:00'", "'0044-03-15 10:00:00 BC'"),
    ("day", "date", "'0099-06-01'", "'0044-03-15 BC'"),
]
MARIADB_COLUMNS = [
    ("s", "set('a','b','c')", "'a,c'", "''"),
    ("e", "enum('x','y')", "'y'", "''"),
    # Members the binlog carries in the column's character set, not UTF-8.
    ("el1", "enum('café','naïve','x') character set latin1", "'naïve'", "'café'"),
    ("sl1", "set('é','ü','x') character set latin1", "'é,x'", "'ü'"),
    ("esj", "enum('東京','大阪') character set sjis", "'大阪'", "'東京'"),
    ("d", "date", "'2026-01-02'", "'0000-00-00'"),
    ("dtm", "datetime(6)", "'2026-01-02 03:04:05.123456'", "'2026-00-00 00:00:00'"),
    ("ts", "timestamp(3) null", "'2026-01-02 03:04:05.5'", "'0000-00-00 00:00:00'"),
    ("f", "float", "1.1", "-3.4e38"),
    ("f2", "float(10,3)", "3.14159", "1.2345678"),
    ("db", "double", "0.1", "1e308"),
    ("dc", "decimal(12,4)", "12.5", "-0.0001"),
    ("ui", "int unsigned", "4294967295", "0"),
    ("bu", "bigint unsigned", "18446744073709551615", "0"),
    ("ti", "tinyint", "-128", "127"),
    ("bt", "bit(5)", "b'10101'", "b'0'"),
    ("bw", "bit(64)", "b'" + "1" * 64 + "'", "b'1'"),
    ("uu", "uuid", "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'", "'00000000-0000-0000-0000-000000000000'"),
    ("i6", "inet6", "'::ffff:1.2.3.4'", "'1::'"),
    ("i6c", "inet6", "'::1.2.3.4'", "'2001:db8::ff00:42:8329'"),
    ("i4", "inet4", "'10.0.0.1'", "'0.0.0.0'"),
    ("fm", "float", "3.4028234e38", "-3.40282e38"),
    ("l1", "varchar(10) character set latin1", "x'81e9'", "'€Š'"),
    ("u16", "varchar(10) character set utf16", "'ab€'", "'🚀'"),
    ("u16l", "varchar(10) character set utf16le", "'é'", "''"),
    ("u32", "varchar(10) character set utf32", "'é'", "'ab'"),
    ("uc2", "varchar(10) character set ucs2", "'é'", "'ab'"),
    ("j", "json", """'{"b": 1, "a": [1, 2.50]}'""", "'null'"),
    ("bi", "binary(3)", "'ab'", "''"),
    ("vb", "varbinary(10)", "'xyz'", "''"),
    ("tx", "text", "'zoë \"q\" 東京'", "''"),
    ("tm", "time(3)", "'-12:34:56.789'", "'838:59:59'"),
    ("y", "year", "2026", "0"),
    ("ch", "char(3)", "'ab'", "''"),
]


@pytest.fixture
def server_directory():
    # Not under pytest's tmp_path: the servers run as another user, who cannot enter it.
    directory = Path(tempfile.mkdtemp(prefix="cdc-merge-types-"))
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def float32(value: float) -> float:
    return struct.unpack("<f", struct.pack("<f", value))[0]


def rows_through_both_ways(connection, columns, capture, insert_sql: str, copy_sql: str) -> None:
    """Rows 1-3 before the snapshot, their copies (+STREAMED) after it."""
    with connection.cursor() as cursor:
        for row, values in enumerate([[column[2] for column in columns], [column[3] for column in columns],
                                      ["null"] * len(columns)], start=1):
            cursor.execute(insert_sql.format(row=row, values=", ".join(values)))
    connection.commit()
    capture()
    with connection.cursor() as cursor:
        cursor.execute(copy_sql)
    connection.commit()
    capture()


def apply(project, table: scaffold.SourceTable, data_format: str = "auto", model_written: bool = False) -> dict[int, dict]:
    """Land, apply the scaffolded model (or the one written already), and the mirror's rows by id."""
    if not model_written:
        (project.project_dir / "models" / "mirrors" / f"{table.model_name}.sql").write_text(scaffold.model_sql(table))
    summary = project.land({table.qualified: list(table.primary_key)}, format=data_format)
    assert summary.counts["rejected"] == 0, summary.counts
    project.dbt("run", "--select", table.model_name)
    rows = project.query(f"select * from {project.schema}.{table.model_name}")
    return {row["id"]: {name: value for name, value in row.items() if not name.startswith("_cdc")} for row in rows}


def assert_verify_is_clean_and_can_fail(project, source: dict[str, str], model: str, column: str, value: str,
                                        rows: int = 6, source_table: str = "shop.typed") -> None:
    """The user's own check (cdc-verify's operation), by key ranges and by a sample, finds every row
    equal, the checksums of both sides agreeing on every type (no row compared one by one); and it
    can fail: a value changed in the mirror behind the pipeline's back is reported with its key and
    column."""
    by_ranges, sampled = json.dumps({"source": source}), json.dumps({"source": source, "sample": 1000})
    project.dbt("run-operation", "cdc_verify", "--args", by_ranges)
    assert f"{project.schema}.{model} vs {source_table}: equal: {rows} rows" in project.dbt_log(), project.dbt_log()
    assert "key ranges, 0 rows compared one by one" in project.dbt_log(), project.dbt_log()
    project.dbt("run-operation", "cdc_verify", "--args", sampled)
    assert f"{project.schema}.{model} vs {source_table}: equal: {rows} rows" in project.dbt_log()
    project.execute(f"update {project.schema}.{model} set {column} = {value} where id = 2")
    for arguments in (by_ranges, sampled):
        assert not project.dbt("run-operation", "cdc_verify", "--args", arguments, expect_success=False).success
        assert f'key ["2"]: {column}: source' in project.dbt_log()


def assert_snapshot_and_stream_agree(mirrored: dict[int, dict], copies: tuple[int, ...] = (STREAMED,)) -> None:
    assert sorted(mirrored) == [row + copy for copy in (0, *copies) for row in (1, 2, 3)]
    for copy in copies:
        for row in (1, 2, 3):
            snapshot, streamed = dict(mirrored[row], id=None), dict(mirrored[row + copy], id=None)
            differing = {name: (snapshot[name], streamed[name]) for name in snapshot if snapshot[name] != streamed[name]}
            assert differing == {}, f"row {row}: (snapshot, stream +{copy}) differ"


def test_postgres_types_read_alike_both_ways_and_equal_the_source(dbt_project, server_directory, tmp_path):
    server = start_postgres(server_directory)
    try:
        connection = server.connect()
        dsn, config = postgres_rows_three_ways(server, connection, "create type shop.mood as enum ('sad', 'ok')",
                                               "shop.typed", POSTGRES_COLUMNS, dbt_project.inbox, tmp_path)
        # Both streamed copies written as the server sent them (python_jobs/capture/postgres_records.py).
        assert sum(line.startswith('{"commit_lsn":') for path in config.out.glob("*.json")
                   for line in path.read_text().splitlines()) == 6
        (table,) = scaffold.postgres_tables(dsn, ["shop.typed"])
        mirrored = apply(dbt_project, table, "debezium")  # as the starters' landing.yml reads the capture's files
        assert_snapshot_and_stream_agree(mirrored, (STREAMED, FOLLOWED))
        assert mirrored[2]["day"] is None and mirrored[1]["day"] == dt.date(99, 6, 1)
        assert_mirror_equals_postgres_source(connection, POSTGRES_COLUMNS, table, mirrored)
        assert_verify_is_clean_and_can_fail(dbt_project, {"postgres": dsn}, table.model_name, "j", "'{}'", rows=9)
        connection.close()
    finally:
        server.stop()


def assert_mirror_equals_postgres_source(connection, columns, table: scaffold.SourceTable, mirrored: dict[int, dict]) -> None:
    """Each mirrored value is the source's own rendering of it (its type's output function, in UTC)
    as docs/type_mapping.md maps it."""
    with connection.cursor() as cursor:
        cursor.execute("set timezone = 'UTC'")
        cursor.execute("select id, " + ", ".join(f"case when {name} is not null then format('%s', {name}) end"
                                                 for name, *_ in columns) + f" from {table.qualified}")
        source = {row[0]: row[1:] for row in cursor.fetchall()}
    assert sorted(source) == sorted(mirrored)
    types = {column.name: scaffold.model_type(column) for column in table.columns}
    for row_id, values in source.items():
        for (name, pg_type, *_), text in zip(columns, values):
            expected = expected_postgres_value(pg_type, types[name], text)
            assert mirrored[row_id][name] == expected, f"row {row_id} column {name} ({pg_type}): source {text!r}"


# Values a mirror type holds only in part, and domains, whose values wal2json sends as text.
POSTGRES_EDGE_COLUMNS = [
    ("flag", "shop.flag", "true", "false"),
    ("big", "shop.big_number", "9000000000", "-1"),
    ("ratio", "shop.ratio", "1.5", "'NaN'"),
    ("price", "shop.price", "12.5", "-0.01"),
    ("wide", "numeric(50,10)", "12345678901234567890123456789012345678.1234567890", "-0.0000000001"),
]
POSTGRES_DOMAINS = ("create domain shop.flag as boolean; create domain shop.big_number as bigint; "
                    "create domain shop.ratio as double precision; "
                    "create domain shop.price as numeric(10,2) check (value > -1)")


def test_postgres_domains_and_wide_numerics_equal_the_source(dbt_project, server_directory, tmp_path):
    """A domain's values (sent as text by wal2json) as its base type's, and a numeric wider than a
    mirror's decimal as its exact text, from the snapshot, the one-shot stream and --follow alike."""
    server = start_postgres(server_directory)
    try:
        connection = server.connect()
        dsn, _ = postgres_rows_three_ways(server, connection, POSTGRES_DOMAINS, "shop.edges", POSTGRES_EDGE_COLUMNS,
                                          dbt_project.inbox, tmp_path)
        (table,) = scaffold.postgres_tables(dsn, ["shop.edges"])
        assert {column.name: scaffold.model_type(column) for column in table.columns}["wide"] == "string"
        mirrored = apply(dbt_project, table, "debezium")
        assert_snapshot_and_stream_agree(mirrored, (STREAMED, FOLLOWED))
        assert mirrored[1]["flag"] is True and mirrored[1]["big"] == 9000000000 and mirrored[2]["ratio"] is None
        assert_mirror_equals_postgres_source(connection, POSTGRES_EDGE_COLUMNS, table, mirrored)
        assert_verify_is_clean_and_can_fail(dbt_project, {"postgres": dsn}, table.model_name, "wide", "'1'", rows=9,
                                            source_table="shop.edges")
        connection.close()
    finally:
        server.stop()


def postgres_rows_three_ways(server, connection, types_sql: str, table: str, columns, inbox, tmp_path):
    """The table (schema shop, after types_sql) with rows 1-3 through the snapshot, their copies
    through the one-shot stream (+STREAMED) and through --follow (+FOLLOWED), captured by the
    least-privileged user; (its DSN, the capture's config)."""
    with connection.cursor() as cursor:
        cursor.execute(f"create schema shop; {types_sql}")
        cursor.execute(f"create table {table} (id int primary key, "
                       + ", ".join(f"{name} {data_type}" for name, data_type, *_ in columns) + ")")
    connection.commit()
    dsn = create_capture_user(server, ["shop"])
    config = capture_postgres.CaptureConfig(dsn=dsn, tables=(table,), slot="types", out=inbox,
                                            state=tmp_path / "capture-state.json")
    names = ", ".join(name for name, *_ in columns)
    rows_through_both_ways(connection, columns, lambda: capture_postgres.run(config),
                           f"insert into {table} values ({{row}}, {{values}})",
                           f"insert into {table} select id + {STREAMED}, {names} from {table}")
    with connection.cursor() as cursor:
        cursor.execute(f"insert into {table} select id + {FOLLOWED}, {names} from {table} where id < {STREAMED}")
    connection.commit()
    follow_until_written(config, 3)
    return dsn, config


def follow_until_written(config, changes: int) -> None:
    """`cdc-capture-postgres --follow` until its state says changes are in files; then SIGTERM."""
    with following_capture("postgres", "--dsn", config.dsn, "--tables", *config.tables, "--slot", config.slot,
                           "--out", str(config.out), "--state", str(config.state), "--max-wait-seconds", "0.3") as following:
        wait_for(lambda: json.loads(config.state.read_text()).get("following", {}).get("changes", 0) >= changes, 60)
        stopped(following)


NOT_FINITE = {"NaN", "Infinity", "-Infinity", "infinity", "-infinity"}


def expected_postgres_value(pg_type: str, mirror_type: str, text: str | None):
    """The mirror's value of a source value, as docs/type_mapping.md says."""
    if text is None or (text in NOT_FINITE and (mirror_type != "string" or pg_type == "numeric")):
        return None  # wal2json sends not-finite numbers as null, and no mirror type holds infinite times
    if text.endswith(" BC") and mirror_type in ("date", "timestamp"):
        return None  # nor times before year 1
    if mirror_type == "string":
        return text[2:] if pg_type == "bytea" else text
    if mirror_type in ("int", "bigint"):
        return int(text)
    if mirror_type.startswith("decimal"):
        return Decimal(text)
    if mirror_type == "float":
        return float32(float(text))
    if mirror_type == "double":
        return float(text)
    if mirror_type == "boolean":
        return text == "t"
    if mirror_type == "date":
        return dt.date.fromisoformat(text)
    if mirror_type == "timestamp":  # rendered in UTC: '2026-01-01 21:34:05.123456+00'
        return dt.datetime.fromisoformat(text).replace(tzinfo=None)
    raise AssertionError(f"no expectation for {pg_type} as {mirror_type}")


def test_mariadb_types_read_alike_both_ways_and_equal_the_source(dbt_project, server_directory, tmp_path, monkeypatch):
    server = start_mariadb(server_directory)
    try:
        connection = server.connect()
        with connection.cursor() as cursor:
            cursor.execute("set session sql_mode = ''")  # zero dates, as older applications write them
            cursor.execute("create database shop character set utf8mb4")
            cursor.execute("create table shop.typed (id int primary key, "
                           + ", ".join(f"{name} {data_type}" for name, data_type, *_ in MARIADB_COLUMNS) + ")")
        connection.commit()
        user, password = create_mariadb_capture_user(server, ["shop"])
        config = capture_mysql.CaptureConfig(host="127.0.0.1", port=server.port, user=user, password=password,
                                             tables=("shop.typed",), out=dbt_project.inbox,
                                             state=tmp_path / "capture-state.json")
        names = ", ".join(name for name, *_ in MARIADB_COLUMNS)
        rows_through_both_ways(connection, MARIADB_COLUMNS, lambda: capture_mysql.run(config),
                               "insert into shop.typed values ({row}, {values})",
                               f"insert into shop.typed select id + {STREAMED}, {names} from shop.typed")
        (table,) = scaffold.mysql_tables("127.0.0.1", server.port, user, password, ["shop.typed"])
        mirrored = apply(dbt_project, table)
        assert_snapshot_and_stream_agree(mirrored)

        # The source's values, in UTC: each as the server renders it, with what it needs to be compared.
        with connection.cursor() as cursor:
            cursor.execute("set time_zone = '+00:00'")
            cursor.execute("select id, " + ", ".join(mariadb_rendering(name, data_type) for name, data_type, *_ in MARIADB_COLUMNS)
                           + " from shop.typed")
            source = {row[0]: row[1:] for row in cursor.fetchall()}
        types = {column.name: scaffold.model_type(column) for column in table.columns}
        for row_id, values in source.items():
            for (name, data_type, *_), value in zip(MARIADB_COLUMNS, values):
                expected = expected_mariadb_value(data_type, types[name], value)
                assert mirrored[row_id][name] == expected, f"row {row_id} column {name} ({data_type}): source {value!r}"
        monkeypatch.setenv("MYSQL_PWD", password)  # cdc-verify's; gone after the test, not left to the next tests' captures
        assert_verify_is_clean_and_can_fail(dbt_project, {"mysql": f"{user}@127.0.0.1:{server.port}"}, table.model_name,
                                            "f", "2.5")
        connection.close()
    finally:
        server.stop()


def mariadb_rendering(name: str, data_type: str) -> str:
    if data_type.startswith("float"):
        return f"{name} + 0e0"  # the stored 32-bit float as a double, all its digits
    if data_type.startswith(("binary", "varbinary")):
        return f"to_base64({name})"
    if data_type.startswith("time("):
        return f"time_format({name}, '%H:%i:%s.%f')"
    if data_type.startswith(("datetime", "timestamp", "date")):
        return f"cast({name} as char)"  # a zero date as its text
    return name


def expected_mariadb_value(data_type: str, mirror_type: str, value):
    """The mirror's value of a source value, as docs/type_mapping.md says."""
    if value is None:
        return None
    if data_type.startswith(("date", "datetime", "timestamp")):
        if value.startswith("0000") or "-00" in value[:10]:
            return None  # zero dates: no mirror date type holds them
        parsed = dt.datetime.fromisoformat(value)
        return parsed.date() if mirror_type == "date" else parsed
    if data_type.startswith("float"):
        return float32(value)
    if data_type.startswith("bit"):
        return int.from_bytes(value, "big")
    if mirror_type == "string":
        return str(value)
    if mirror_type.startswith("decimal"):
        return Decimal(value)
    return value
