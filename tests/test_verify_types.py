"""cdc-verify across column types, on both sources and both engines: a mirror equal to its source
verifies as equal with the checksums of both sides agreeing (no row compared one by one), and one
value changed in the mirror behind the pipeline's back (a row each, so no change hides behind
another's range) is reported with its key and column, by ranges and by a sample."""

from __future__ import annotations

import json
import re

from harness.postgres_server import create_capture_user
from python_jobs import scaffold
from python_jobs.capture import postgres as capture_postgres
from python_jobs.verify import check as verify_check
from python_jobs.verify import cli as verify_cli
from test_capture_faults import postgres  # noqa: F401 - fixtures
from test_online_snapshots import execute

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
]
# (column, row whose copy is changed, the mirror's new value as SQL both engines read).
POSTGRES_CHANGES = [
    ("i", 1, "-2147483647"), ("big", 1, "9223372036854775806"), ("n", 1, "1.51"), ("n5", 2, "0.00001"),
    ("nn", 1, "'1.51'"), ("r", 1, "cast(1.1000001 as float)"), ("d", 1, "0.10000000000000002"), ("d", 3, "0"),
    ("tx", 1, "'zoë 東京'"), ("tx", 2, "null"), ("tx", 3, "''"), ("ch", 1, "'ab'"), ("by", 1, "'0102fe'"),
    ("b", 1, "false"), ("dt", 1, "cast('2026-01-03' as date)"), ("tm", 1, "'12:34:56.500001'"),
    ("ts", 1, "cast('2026-01-02 03:04:05.123457' as timestamp)"), ("ts", 2, "cast('1970-01-01 00:00:00' as timestamp)"),
    ("tz", 1, "cast('2026-01-01 21:34:05.123455' as timestamp)"), ("j", 1, """'{"b": 2,  "a": [1, 2.50]}'"""),
    ("jb", 1, """'{"a": [1, 2.50], "c": 1}'"""), ("u", 1, "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12'"),
    ("e", 1, "'sad'"), ("bt", 1, "'1011'"), ("ia", 1, "'{1,3}'"), ("iv", 1, "'1 day 02:00:00.000002'"),
    ("rn", 1, "1"), ("nan", 2, "12.01"), ("dt9", 1, "cast('9999-12-30' as date)"),
    ("tz1", 1, "cast('1000-01-01 00:00:00.000001' as timestamp)"), ("tx2", 1, "'🚀'"), ("tx2", 2, "''"),
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


def check_equal_then_each_change_found(project, model: str, source: list[str], changes, monkeypatch) -> None:
    rows = 3 + len(changes)
    assert verify(project, model, source) == 0, project.dbt_log()[-4000:]
    log = project.dbt_log()
    assert f"vs shop.typed: equal: {rows} rows" in log and "key ranges, 0 rows compared one by one" in log, log[-4000:]
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
    check_equal_then_each_change_found(project, model, ["--postgres", dsn], POSTGRES_CHANGES, monkeypatch)
