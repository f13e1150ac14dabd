"""More PostgreSQL types read alike from the snapshot and the stream and land as the source holds
them: row types with a null field, bit strings, numerics whose scale exceeds their precision or is
negative, domains over domains, stored generated columns (also after an update of the column they
are computed from), extension types, ranges, geometry and the rest, each as docs/type_mapping.md
says, whatever output settings the capture user's role has; and enum values renamed and row types
changed by ALTER TYPE, which change rows without a change in the log (modelled on
tests/test_capture_types.py, whose helpers it uses)."""

from __future__ import annotations

import pytest

from harness.postgres_server import create_capture_user, start_postgres
from python_jobs import scaffold
from python_jobs.capture import postgres as capture_postgres
from python_jobs.capture import postgres_labels
from test_capture_types import (
    FOLLOWED,
    STREAMED,
    apply,
    assert_snapshot_and_stream_agree,
    assert_verify_is_clean_and_can_fail,
    expected_postgres_value,
    follow_until_written,
    rows_through_both_ways,
    server_directory,  # noqa: F401 - the fixture, used by name
)

TYPES_SQL = ("create extension citext; create extension hstore; create schema shop; "
             "create type shop.mood as enum ('sad', 'ok'); create type shop.pair as (n int, at timestamptz, s text); "
             "create domain shop.label as text; create domain shop.price as numeric(10,2); "
             # Domains over domains: as the type under them all.
             "create domain shop.dear as shop.price; create domain shop.flag as boolean; create domain shop.yes as shop.flag; "
             "create domain shop.moment as timestamptz; create domain shop.instant as shop.moment")
# (column, type, a typical value, an edge value); a third row is all null.
COLUMNS = [
    ("a", "int", "3", "-5"),
    # A row type's value with null fields is no null (row(1, null) IS NOT NULL is false).
    ("pair", "shop.pair", "row(1, '2026-01-02 03:04:05+05:30', 'x y')", "row(null, null, '')"),
    ("bits", "bit(4)", "B'1010'", "B'0001'"),
    ("vbits", "bit varying(10)", "B'101'", "B''"),
    ("tiny", "numeric(3,5)", "0.00123", "-0.00999"),
    ("hundreds", "numeric(5,-2)", "12345", "-100"),
    ("fine", "numeric(40,30)", "1.123456789012345678901234567890", "-0.000000000000000000000000000001"),
    ("ttz", "time with time zone", "'12:34:56.5+05:30'", "'00:00:00-14'"),
    ("r4", "int4range", "'[1,5)'", "'empty'"),
    ("rts", "tstzrange", "'[2026-01-01 10:00+02,infinity)'", "'(,)'"),
    ("rd", "daterange", "'[2026-01-01,2026-02-01]'", "'[-infinity,2026-01-01)'"),
    ("mr", "int4multirange", "'{[1,3),[5,7)}'", "'{}'"),
    ("x", "xml", "'<a b=\"1\">t</a>'", "''"),
    ("tv", "tsvector", "'a fat cat'", "''"),
    ("net", "cidr", "'10.1.0.0/16'", "'::/0'"),
    ("mac", "macaddr", "'08:00:2b:01:02:03'", "'00:00:00:00:00:00'"),
    ("mac8", "macaddr8", "'08:00:2b:01:02:03:04:05'", "'00:00:00:00:00:00:00:00'"),
    ("pt", "point", "'(1.5,2.25)'", "'(0.1,1e-300)'"),
    ("bx", "box", "'((0,0),(1,1))'", "'((0.1,0.2),(0.3,0.4))'"),
    ("poly", "polygon", "'((0,0),(1,1),(1,0))'", "'((0.1,0.1))'"),
    ("ci", "citext", "'MiXeD'", "''"),
    ("hs", "hstore", "'a=>1, b=>NULL'", "''"),
    ("lbl", "shop.label", "'zoë'", "''"),
    ("price", "shop.price", "12.5", "-0.01"),
    ("dear", "shop.dear", "12.5", "'NaN'"),
    ("yes", "shop.yes", "true", "false"),
    ("instant", "shop.instant", "'2026-01-02 03:04:05.5+05:30'", "'infinity'"),
    ("nums", "numeric[]", "'{1.50,NaN,2}'", "'{}'"),
    ("times", "timestamptz[]", "'{\"2026-01-01 10:00+02\",infinity}'", "'{}'"),
    ("moods", "shop.mood[]", "'{ok,sad}'", "'{}'"),
    ("ch", "char(5)", "'ab'", "'abcde'"),
    ("iv", "interval", "'1 year 2 mons 3 days 04:05:06.789'", "'-1 days +02:00:00'"),
    ("o", "oid", "4294967295", "0"),
    ("rc", "regclass", "'pg_class'", "'shop.more'"),
    # Rendered alike whatever output settings the capture user's role has (ROLE_SETTINGS).
    ("by", "bytea", r"'\x0102ff'", r"'\x'"),
    ("day", "date", "'2026-01-02'", "'1000-01-01'"),
    ("at", "timestamptz", "'2026-01-02 03:04:05.5+05:30'", "'2026-07-01 00:00:00+00'"),
    ("ratio", "double precision", "0.1", "-1e-300"),
    ("at0", "timestamptz(0)", "'2026-01-02 03:04:05.5+05:30'", "'1999-12-31 23:59:59.9-08'"),
    ("local3", "timestamp(3)", "'2026-01-02 03:04:05.1236'", "'1000-01-01 00:00:00'"),
    ("clock", "time", "'12:34:56.5'", "'24:00'"),
]
ROLE_SETTINGS = ("alter role cdc set DateStyle = 'SQL, DMY'; alter role cdc set IntervalStyle = 'iso_8601'; "
                 "alter role cdc set TimeZone = 'Asia/Kolkata'; alter role cdc set extra_float_digits = 0; "
                 "alter role cdc set bytea_output = 'escape'")
# Stored generated columns: not inserted, computed by the server (and sent by wal2json).
GENERATED = [("twice", "int", "generated always as (a * 2) stored"),
             ("label", "text", "generated always as ((pair).s || '!') stored")]


def test_postgres_more_types_read_alike_both_ways_and_equal_the_source(conformance_project, server_directory,  # noqa: F811
                                                                      tmp_path):
    dbt_project = conformance_project  # Spark + Iceberg and Databend
    server = start_postgres(server_directory)
    try:
        connection = server.connect()
        with connection.cursor() as cursor:
            cursor.execute(TYPES_SQL)
            cursor.execute("create table shop.more (id int primary key, "
                           + ", ".join(f"{name} {data_type}" for name, data_type, *_ in COLUMNS) + ", "
                           + ", ".join(" ".join(column) for column in GENERATED) + ")")
        connection.commit()
        dsn = create_capture_user(server, ["shop"])
        with connection.cursor() as cursor:
            cursor.execute(ROLE_SETTINGS)
        connection.commit()
        config = capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.more",), slot="more", out=dbt_project.inbox,
                                                state=tmp_path / "capture-state.json")
        names = ", ".join(name for name, *_ in COLUMNS)
        rows_through_both_ways(connection, COLUMNS, lambda: capture_postgres.run(config),
                               f"insert into shop.more (id, {names}) values ({{row}}, {{values}})",
                               f"insert into shop.more (id, {names}) select id + {STREAMED}, {names} from shop.more")
        with connection.cursor() as cursor:
            cursor.execute(f"insert into shop.more (id, {names}) select id + {FOLLOWED}, {names} from shop.more "
                           f"where id < {STREAMED}")
        connection.commit()
        follow_until_written(config, 3)
        with connection.cursor() as cursor:  # the generated columns computed again, in the stream
            cursor.execute(f"update shop.more set a = a + 10, pair = row(2, null, 'z') where id > {FOLLOWED}")
        connection.commit()
        capture_postgres.run(config)

        (table,) = scaffold.postgres_tables(dsn, ["shop.more"])
        types = {column.name: scaffold.model_type(column) for column in table.columns}
        assert (types["bits"], types["tiny"], types["hundreds"]) == ("string", "decimal(5,5)", "decimal(7,0)")
        assert (types["dear"], types["yes"], types["instant"]) == ("decimal(10,2)", "boolean", "timestamp")
        mirrored = apply(dbt_project, table, "debezium")
        assert_snapshot_and_stream_agree({row: values for row, values in mirrored.items() if row < FOLLOWED})
        assert mirrored[2]["pair"] == '(,,"")' and mirrored[1]["bits"] == "1010"
        assert mirrored[1]["yes"] is True and mirrored[2]["dear"] is None
        assert mirrored[201]["twice"] == 26 and mirrored[201]["label"] == "z!"
        assert_mirror_equals_source(connection, [*COLUMNS, *GENERATED], types, mirrored)
        assert_verify_is_clean_and_can_fail(dbt_project, {"postgres": dsn}, table.model_name, "ci", "'x'", rows=9,
                                            source_table="shop.more")
        connection.close()
    finally:
        server.stop()


def assert_mirror_equals_source(connection, columns, types: dict[str, str], mirrored: dict[int, dict]) -> None:
    """Each mirrored value is the source's own rendering of it in UTC (null only where the value is)."""
    with connection.cursor() as cursor:
        cursor.execute("set timezone = 'UTC'")
        cursor.execute("select id, " + ", ".join(f"case when {name} is distinct from null then format('%s', {name}) end"
                                                 for name, *_ in columns) + " from shop.more")
        source = {row[0]: row[1:] for row in cursor.fetchall()}
    assert sorted(source) == sorted(mirrored)
    for row_id, values in source.items():
        for (name, pg_type, *_), text in zip(columns, values):
            expected = expected_postgres_value(pg_type, types[name], text)
            assert mirrored[row_id][name] == expected, f"row {row_id} column {name} ({pg_type}): source {text!r}"


@pytest.mark.parametrize("data_type, precision, scale, expected", [
    ("numeric", 3, 5, "decimal(5,5)"), ("numeric", 5, -2, "decimal(7,0)"), ("numeric", 38, -1, "string"),
    ("numeric", 10, 2, "decimal(10,2)"), ("bit string", None, None, "string"), ("bit", 5, None, "bigint"),
])
def test_scaffold_types_postgres_numerics_and_bit_strings(data_type, precision, scale, expected):
    assert scaffold.model_type(scaffold.SourceColumn("c", data_type, precision, scale)) == expected


def test_postgres_enum_values_renamed_and_row_types_changed_reach_the_mirror(dbt_project, server_directory,  # noqa: F811
                                                                              tmp_path):
    """ALTER TYPE ... RENAME VALUE, and ADD ATTRIBUTE, change what the rows show without a change in the
    log: the tables whose rows can show the value (in an enum column, an array, a row type or a domain)
    are read again online; a table without it, and ADD VALUE, which changes no row, read nothing."""
    server = start_postgres(server_directory)
    try:
        connection = server.connect()
        with connection.cursor() as cursor:
            cursor.execute("create schema shop; create type shop.mood as enum ('sad', 'ok'); "
                           "create type shop.pair as (m shop.mood, n int); create domain shop.feeling as shop.mood; "
                           "create table shop.moods (id int primary key, m shop.mood, ms shop.mood[], p shop.pair, "
                           "f shop.feeling); create table shop.plain (id int primary key, x text)")
            cursor.execute("insert into shop.moods values (1, 'ok', '{ok,sad}', row('ok', 1), 'ok'), "
                           "(2, 'sad', '{}', null, 'sad'); insert into shop.plain values (1, 'ok')")
        connection.commit()
        dsn = create_capture_user(server, ["shop"])
        config = capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.moods", "shop.plain"), slot="moods",
                                                out=dbt_project.inbox, state=tmp_path / "capture-state.json")
        capture_postgres.run(config)
        with connection.cursor() as cursor:
            cursor.execute("alter type shop.mood add value 'meh'")
        connection.commit()
        assert capture_postgres.run(config).snapshot_rows == 0
        with connection.cursor() as cursor:
            cursor.execute("alter type shop.mood rename value 'ok' to 'fine'")
        connection.commit()
        assert capture_postgres.run(config).snapshot_rows == 2  # shop.moods' rows, not shop.plain's
        with connection.cursor() as cursor:  # every row holding a shop.pair shows one field more
            cursor.execute("alter type shop.pair add attribute note text")
        connection.commit()
        assert capture_postgres.run(config).snapshot_rows == 2

        (table,) = scaffold.postgres_tables(dsn, ["shop.moods"])
        (dbt_project.project_dir / "models" / "mirrors" / f"{table.model_name}.sql").write_text(scaffold.model_sql(table))
        summary = dbt_project.land({"shop.moods": ["id"], "shop.plain": ["id"]})
        assert summary.counts["rejected"] == 0, summary.counts
        dbt_project.dbt("run", "--select", table.model_name)
        mirrored = {row["id"]: {name: value for name, value in row.items() if not name.startswith("_cdc")}
                    for row in dbt_project.query(f"select * from {dbt_project.schema}.{table.model_name}")}
        assert mirrored[1] == {"id": 1, "m": "fine", "ms": "{fine,sad}", "p": "(fine,1,)", "f": "fine"}
        assert mirrored[2] == {"id": 2, "m": "sad", "ms": "{}", "p": None, "f": "sad"}
        connection.close()
    finally:
        server.stop()



def test_enum_labels_renamed_and_row_types_changed_ask_for_reads():
    known = {"shop.a": {"1": "sad", "2": "ok"}, "shop.b": {"row type 5": "shop.pair (integer)"}}
    now = {"shop.a": {"1": "sad", "2": "fine", "3": "meh"}, "shop.b": {"row type 5": "shop.pair (integer, text)"},
           "shop.c": {"2": "fine"}}
    assert postgres_labels.relabeled(known, now) == {"shop.a": ["enum value renamed to fine"],
                                                     "shop.b": ["row type shop.pair (integer, text)"]}
    assert postgres_labels.relabeled(known, {**known, "shop.a": {**known["shop.a"], "3": "meh"}}) == {}
    assert postgres_labels.resumed({"labels": known}, now) == {**now, **known}
