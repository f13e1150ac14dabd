"""cdc-verify across column types, on both sources and both engines: a mirror equal to its source
verifies as equal with the checksums of both sides agreeing (no row compared one by one), and one
value changed in the mirror behind the pipeline's back (a row each, so no change hides behind
another's range) is reported with its key and column, by ranges and by a sample."""

from __future__ import annotations

import re

from harness.mariadb_server import create_mariadb_capture_user
from harness.postgres_server import create_capture_user
from python_jobs import scaffold
from python_jobs.capture import mysql as capture_mysql
from python_jobs.capture import postgres as capture_postgres
from python_jobs.verify import check as verify_check
from python_jobs.verify import cli as verify_cli
from python_jobs.verify import in_flight
from test_capture_faults import mariadb, postgres  # noqa: F401 - fixtures
from test_online_snapshots import execute
from test_online_snapshots_mariadb import execute as my_execute

PROFILES = verify_cli.Path(__file__).resolve().parent.parent / "profiles"

# (column, type, row 1's value, row 2's); row 3 is all null.
POSTGRES_COLUMNS = [
    ("i", "int", "-2147483648", "7"),
    ("big", "bigint", "9223372036854775807", "-1"),
    ("n", "numeric(10,2)", "1.50", "-0.01"),
    ("n5", "numeric(20,5)", "123456789012345.10000", "0"),
    ("nn", "numeric", "1.50", "-0.000001"),
    ("r", "real", "1.1", "-0"),
    ("d", "double precision", "0.1", "-0"),
    ("tx", "text", "'zoë 東京 '", "''"),
    ("ch", "char(4)", "'ab'", "''"),
    ("by", "bytea", r"'\x0102ff'", r"'\x'"),
    ("b", "boolean", "true", "false"),
    ("dt", "date", "'2026-01-02'", "'0099-06-01'"),
    ("tm", "time", "'12:34:56.5'", "'00:00'"),
    ("ts", "timestamp", "'2026-01-02 03:04:05.123456'", "'1969-12-31 23:59:59.999999'"),
    ("tz", "timestamptz", "'2026-01-02 03:04:05.123456+05:30'", "'0999-01-01 00:00:00+00'"),
    ("j", "json", """'{"b": 1,  "a": [1, 2.50]}'""", "'{}'"),
    ("jb", "jsonb", """'{"b": 1, "a": [1, 2.50]}'""", "'null'"),
    ("u", "uuid", "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'", "'00000000-0000-0000-0000-000000000000'"),
    ("e", "shop.mood", "'ok'", "'sad'"),
    ("bt", "bit(4)", "'1010'", "'0000'"),
    ("ia", "int[]", "'{1,2}'", "'{}'"),
    ("iv", "interval", "'1 day 02:00:00.000001'", "'-1 mon'"),
    # Not-finite numbers are null in a mirror; Databend holds the years 1000 to 9999 only (null otherwise).
    ("rn", "real", "'NaN'", "'-Infinity'"),
    ("nan", "numeric(10,2)", "'NaN'", "12"),
    ("dt9", "date", "'9999-12-31'", "'1000-01-01'"),
    ("tz1", "timestamptz", "'1000-01-01 00:00:00+00'", "'0999-12-31 23:59:59.999999+00'"),
    ("tx2", "varchar(10)", "'🚀\t'", "' '"),
    ("dn", "double precision", "'NaN'", "'Infinity'"),
    ("nw", "numeric(50,10)", "1.5000000000", "0"),
    ("ta", "text[]", """'{a,"c d"}'""", "'{NULL}'"),
    ("ttz", "timetz", "'12:00:00+05'", "'00:00:00+00'"),
    # Mirrored under the names cdc-scaffold gives them: order_, two_words.
    ('"order"', "int", "4", "-4"),
    ('"two words"', "text", "'a b'", "''"),
]
# Written into the mirror, yet not a change: the same decimal at another scale, 0 for -0 (equal as SQL
# compares them: docs/operating.md).
POSTGRES_SAME = [("n", 1, "1.5"), ("d", 2, "0"), ("r", 2, "cast(0 as float)")]
# (column, row whose copy is changed, the mirror's new value as SQL both engines read).
POSTGRES_CHANGES = [
    ("i", 1, "-2147483647"), ("big", 1, "9223372036854775806"), ("n", 1, "1.51"), ("n5", 2, "0.00001"),
    ("nn", 1, "'1.51'"), ("nn", 1, "'1.5'"), ("r", 1, "cast(1.1000001 as float)"), ("d", 1, "0.10000000000000002"), ("d", 3, "0"),
    ("tx", 1, "'zoë 東京'"), ("tx", 2, "null"), ("tx", 3, "''"), ("ch", 1, "'ab'"), ("by", 1, "'0102fe'"),
    ("b", 1, "false"), ("dt", 1, "cast('2026-01-03' as date)"), ("tm", 1, "'12:34:56.500001'"),
    ("ts", 1, "cast('2026-01-02 03:04:05.123457' as timestamp)"), ("ts", 2, "cast('1970-01-01 00:00:00' as timestamp)"),
    ("tz", 1, "cast('2026-01-01 21:34:05.123455' as timestamp)"), ("j", 1, """'{"b": 2,  "a": [1, 2.50]}'"""),
    ("jb", 1, """'{"a": [1, 2.50], "c": 1}'"""), ("u", 1, "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12'"),
    ("e", 1, "'sad'"), ("bt", 1, "'1011'"), ("ia", 1, "'{1,3}'"), ("iv", 1, "'1 day 02:00:00.000002'"),
    ("rn", 1, "1"), ("nan", 2, "12.01"), ("dt9", 1, "cast('9999-12-30' as date)"),
    ("tz1", 1, "cast('1000-01-01 00:00:00.000001' as timestamp)"), ("tx2", 1, "'🚀'"), ("tx2", 2, "''"),
    ("dn", 1, "1.5"), ("nw", 1, "'1.5000000001'"), ("ta", 1, """'{a,"c  d"}'"""), ("ttz", 1, "'12:00:00+06'"),
    ("order_", 1, "5"), ("two_words", 1, "'a  b'"),
]

MARIADB_COLUMNS = [
    ("i", "int", "-2147483648", "7"),
    ("ui", "int unsigned", "4294967295", "0"),
    ("bu", "bigint unsigned", "18446744073709551615", "0"),
    ("big", "bigint", "-9223372036854775808", "9223372036854775807"),
    ("t1", "tinyint(1)", "1", "0"),
    ("dc", "decimal(12,4)", "12.5000", "-0.0001"),
    ("dc0", "decimal(20,0)", "99999999999999999999", "0"),
    ("f", "float", "1.1", "-3.4e38"),
    ("db", "double", "0.1", "-0"),
    ("tx", "varchar(20)", "'zoë 東京 '", "''"),
    ("ch", "char(3)", "'ab'", "''"),
    ("bi", "binary(3)", "'ab'", "''"),
    ("vb", "varbinary(10)", "'xyz'", "''"),
    ("d", "date", "'2026-01-02'", "'1000-01-01'"),
    ("dtm", "datetime(6)", "'2026-01-02 03:04:05.123456'", "'1970-01-01 00:00:00'"),
    ("ts", "timestamp(6) null", "'2026-01-02 03:04:05.123456'", "'1970-01-01 00:00:01'"),
    ("tm", "time(6)", "'-12:34:56.5'", "'838:59:59'"),
    ("y", "year", "2026", "0"),
    ("j", "json", """'{"b": 1,  "a": [1, 2.50]}'""", "'null'"),
    ("uu", "uuid", "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'", "'00000000-0000-0000-0000-000000000000'"),
    ("e", "enum('x','y')", "'y'", "'x'"),
    ("s", "set('a','b','c')", "'a,c'", "''"),
    ("bt", "bit(5)", "b'10101'", "b'0'"),
    ("bw", "bit(64)", "b'" + "1" * 64 + "'", "b'1'"),
    ("tn", "varchar(10)", "'a\\0🚀'", "' '"),
    ("dtb", "datetime(6)", "'1000-01-01 00:00:00'", "'0999-12-31 23:59:59.999999'"),
    ("zf", "int(5) zerofill", "42", "0"),
    ("dz", "decimal(6,2) zerofill", "1.50", "0"),
    ("dw", "decimal(50,10)", "1.5000000000", "-0.0000000001"),
    ("`order`", "int", "4", "-4"),
    ("`two words`", "varchar(10)", "'a b'", "''"),
]
MARIADB_SAME = [("dc", 1, "12.5"), ("db", 2, "0")]
MARIADB_CHANGES = [
    ("i", 1, "-2147483647"), ("ui", 1, "4294967294"), ("bu", 1, "18446744073709551614"), ("big", 2, "9223372036854775806"),
    ("t1", 1, "2"), ("dc", 1, "12.5001"), ("dc0", 1, "99999999999999999998"), ("f", 1, "cast(1.1000001 as float)"),
    ("db", 1, "0.10000000000000002"), ("tx", 1, "'zoë 東京'"), ("tx", 2, "null"), ("tx", 3, "''"),
    ("ch", 1, "'ab '"), ("bi", 1, "'YWIB'"), ("vb", 1, "'eHl7'"), ("d", 1, "cast('2026-01-03' as date)"),
    ("dtm", 1, "cast('2026-01-02 03:04:05.123457' as timestamp)"), ("ts", 1, "cast('2026-01-02 03:04:05.123455' as timestamp)"),
    ("tm", 1, "'-12:34:56.500001'"), ("y", 1, "2025"), ("j", 1, """'{"b": 1,  "a": [1, 2.5]}'"""),
    ("uu", 1, "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12'"), ("e", 1, "'x'"), ("s", 1, "'a'"), ("bt", 1, "20"),
    ("bw", 1, "18446744073709551614"), ("tn", 1, "'a🚀'"), ("dtb", 1, "cast('1000-01-01 00:00:00.000001' as timestamp)"),
    ("zf", 1, "43"), ("dz", 1, "1.51"), ("dw", 1, "'1.5000000001'"),
    ("order_", 1, "5"), ("two_words", 2, "null"),
]
CHANGED_FROM = 100  # the copy of a row that a change alters is row CHANGED_FROM + the change's index


def rows_sql(columns, changes) -> list[str]:
    """Rows 1-3 (row 3 all null) and, for each change, a copy of its row."""
    rows = [[column[2] for column in columns], [column[3] for column in columns], ["null"] * len(columns)]
    ids = [1, 2, 3] + [CHANGED_FROM + index for index in range(len(changes))]
    values = rows + [rows[row - 1] for _, row, _ in changes]
    return [f"({row_id}, {', '.join(row)})" for row_id, row in zip(ids, values)]


def land_and_apply(project, table) -> str:
    (project.project_dir / "models" / "mirrors" / f"{table.model_name}.sql").write_text(scaffold.model_sql(table))
    landed = project.land({table.qualified: list(table.primary_key)})
    assert "quarantined 0 lines" in landed.status(), landed.status()
    project.dbt("run", "--select", table.model_name)
    return table.model_name


def verify(project, model: str, source: list[str], *options: str) -> int:
    return verify_cli.main(["--project-dir", str(project.project_dir), "--profiles-dir", str(PROFILES),
                            "--target", project.target, "--select", model, *source, *options])


def uncarried_rows(changes, columns_rows: dict[str, tuple[int, ...]]) -> dict[str, int]:
    """Per column, the source's rows (rows 1-3 and the changes' copies) whose value no mirror holds: those
    of the rows named."""
    return {column: sum(row in rows for row in [1, 2, 3, *(row for _, row, _ in changes)])
            for column, rows in columns_rows.items()}


def check_equal_then_each_change_found(project, model: str, source: list[str], same, changes, monkeypatch,
                                       uncarried: dict[str, int]) -> None:
    rows = 3 + len(changes)
    # The source is quiet: no wait of 5 s a check for nothing more to land.
    monkeypatch.setattr(in_flight, "QUIET_SECONDS", 0.0)
    for column, row, value in same:
        project.execute(f"update {project.schema}.{model} set {column} = {value} where id = {row}")
    assert verify(project, model, source) == 0, project.dbt_log()[-4000:]
    log = project.dbt_log()
    assert f"vs shop.typed: equal: {rows} rows" in log and "key ranges, 0 rows compared one by one" in log, log[-4000:]
    assert "not compared" not in log and "not in the checksums" not in log, log[-4000:]
    # Values the mirror holds as null, which the comparison cannot tell apart: counted at the source.
    said = re.search(r"null in the mirror, not in the source: (.*?): values the log", log)
    counted = {column: int(count) for column, count in re.findall(r"(\w+) (\d+) rows", said.group(1))} if said else {}
    assert counted == uncarried, (counted, uncarried, log[-4000:])
    assert verify(project, model, source, "--sample", "1000") == 0, project.dbt_log()[-4000:]

    for index, (column, _, value) in enumerate(changes):
        project.execute(f"update {project.schema}.{model} set {column} = {value} where id = {CHANGED_FROM + index}")
    monkeypatch.setattr(verify_check, "SHOWN_DIFFERENCES", 1000)
    expected = {f'key ["{CHANGED_FROM + index}"]: {column}: source' for index, (column, _, _) in enumerate(changes)}
    # --leaf-rows 1: a range is split down to its rows, so each change must be seen by the checksums alone.
    for options in (["--leaf-rows", "1"], ["--sample", "1000"]):
        assert verify(project, model, source, *options) == 1, project.dbt_log()[-4000:]
        log = project.dbt_log()
        report = log[log.rindex("vs shop.typed: DIFFERS"):]
        found = {f"key {key}: {column}: source" for key, column in re.findall(r"  key (\[[^\]]*\]): (\w+): source", report)}
        assert found == expected, (options, sorted(expected - found), sorted(found - expected), report[:6000])


def test_postgres_types_verified_equal_and_each_change_found(postgres, conformance_project, monkeypatch):  # noqa: F811
    project = conformance_project
    execute(postgres, "create schema shop; create type shop.mood as enum ('sad', 'ok'); create table shop.typed "
                      "(id int primary key, " + ", ".join(f"{name} {data_type}" for name, data_type, *_ in POSTGRES_COLUMNS)
                      + "); insert into shop.typed values " + ", ".join(rows_sql(POSTGRES_COLUMNS, POSTGRES_CHANGES)))
    dsn = create_capture_user(postgres, ["shop"])
    config = capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.typed",), slot="types", out=project.inbox,
                                            state=project.work_dir / "state.json")
    capture_postgres.run(config)
    (table,) = scaffold.postgres_tables(dsn, ["shop.typed"])
    model = land_and_apply(project, table)
    # NaN and infinities (rows 1 and 2); on Databend also the dates before the year 1000 (row 2's).
    uncarried = {"rn": (1, 2), "nan": (1,), "dn": (1, 2), **({"dt": (2,), "tz": (2,), "tz1": (2,)} if project.on_databend else {})}
    check_equal_then_each_change_found(project, model, ["--postgres", dsn], POSTGRES_SAME, POSTGRES_CHANGES, monkeypatch,
                                       uncarried_rows(POSTGRES_CHANGES, uncarried))


def test_mariadb_types_verified_equal_and_each_change_found(mariadb, conformance_project, monkeypatch):  # noqa: F811
    project = conformance_project
    my_execute(mariadb, "create database shop character set utf8mb4",
               "create table shop.typed (id int primary key, "
               + ", ".join(f"{name} {data_type}" for name, data_type, *_ in MARIADB_COLUMNS) + ")",
               "insert into shop.typed values " + ", ".join(rows_sql(MARIADB_COLUMNS, MARIADB_CHANGES)))
    user, password = create_mariadb_capture_user(mariadb, ["shop"])
    monkeypatch.setenv("MYSQL_PWD", password)
    config = capture_mysql.CaptureConfig(host="127.0.0.1", port=mariadb.port, user=user, password=password,
                                         tables=("shop.typed",), out=project.inbox, state=project.work_dir / "state.json")
    capture_mysql.run(config)
    (table,) = scaffold.mysql_tables("127.0.0.1", mariadb.port, user, password, ["shop.typed"])
    model = land_and_apply(project, table)
    # Databend holds the years 1000 to 9999 only: row 2's datetime before them is null there.
    check_equal_then_each_change_found(project, model, ["--mysql", f"{user}@127.0.0.1:{mariadb.port}"],
                                       MARIADB_SAME, MARIADB_CHANGES, monkeypatch,
                                       uncarried_rows(MARIADB_CHANGES, {"dtb": (2,)} if project.on_databend else {}))


def database_in(postgres, name: str, encoding: str, ddl: str) -> str:  # noqa: F811
    """A database of the server in encoding, with ddl run in it: its DSN."""
    connection = postgres.connect()
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute(f"create database {name} encoding '{encoding}' lc_collate 'C' lc_ctype 'C' template template0")
    connection.close()
    connection = postgres.connect(name)
    with connection.cursor() as cursor:
        cursor.execute(ddl)
    connection.commit()
    connection.close()
    return postgres.dsn.replace("dbname=postgres", f"dbname={name}")


def test_checksums_of_a_latin1_postgres_database_are_of_utf8_text(postgres):  # noqa: F811
    """The mirrors' engines hash a text's UTF-8 bytes: a PostgreSQL database in another encoding must
    hash the same bytes, or every row with a character beyond ASCII is compared one by one."""
    import hashlib

    from python_jobs.verify.ranges import KeyRange
    from python_jobs.verify.sources import PostgresSource

    source = PostgresSource(database_in(postgres, "latin", "LATIN1",
                                        "create table t (id int primary key, s text); insert into t values (1, 'é'), (2, 'ab')"))
    side = source.ranges("public.t", [["id", "int"], ["s", "string"]])
    (stats,) = side.segment_stats(KeyRange(), []).values()
    source.close()
    assert stats.checksum == sum(int(hashlib.md5(text.encode()).hexdigest()[:8], 16) for text in ("v1|vé", "v2|vab"))


def test_text_keys_of_a_latin9_postgres_database_are_ranged_by_their_utf8_bytes(postgres):  # noqa: F811
    """The mirrors order strings by their UTF-8 bytes; a database in LATIN9 ordered its own bytes under
    collate "C" ('Š' 0xA6 before 'ª' 0xAA, where UTF-8 puts U+0160 after U+00AA): a range held other
    keys on each side, and an equal mirror showed rows missing in one range and extra in another."""
    from python_jobs.verify.ranges import KeyRange
    from python_jobs.verify.sources import PostgresSource

    source = PostgresSource(database_in(postgres, "latin9", "LATIN9",
                                        "create table k (id text primary key); insert into k values ('a'), ('z'), ('ª'), ('é'), ('Š')"))
    side = source.ranges("public.k", [["id", "string"]])
    counts = {segment: stats.rows for segment, stats in side.segment_stats(KeyRange(), [("é",)]).items()}
    through_z = sorted(side.rows(KeyRange(through=("z",))))
    source.close()
    assert counts == {0: 4, 1: 1}  # a, z, ª, é; then Š
    assert len(through_z) == 2
