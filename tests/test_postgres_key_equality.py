"""PostgreSQL keys whose equality is not their text's (docs/type_mapping.md, docs/online_snapshots.md):
an unbounded numeric (1.0 = 1.00), a citext and a text of a case-insensitive ICU collation ('abc' =
'ABC'), a double precision (-0 = 0), a timestamptz written in other session zones, a uuid written in
upper case, a char(n) (padding insignificant), and a composite of them. Each is read online in small
pages, changed through the stream where its text changes but not its value, read again by range,
drifted by hand and repaired by cdc-verify; after each the mirror is compared with the source's rows.
Also a bytea key (mirrored as its hex, without the \\x the source writes) and an interval ('1 day' =
'24:00:00')."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from harness.postgres_server import create_capture_user
from python_jobs.capture import postgres as capture_postgres
from python_jobs.capture.snapshot_requests import write_request
from python_jobs.verify import cli as verify_cli
from test_capture_faults import postgres  # noqa: F401 - fixture
from test_online_snapshots import execute
from test_verify import PROFILES

TABLES = {
    # table: (key's type, mirror key type, keys)
    "shop.n": ("numeric", "string", "select (g / 4.0)::numeric from generate_series(1, 12) g"),
    "shop.c": ("citext", "string", "select unnest(array['abc', 'Abd', 'b', 'B2', 'é', 'e\u0301x', '😀', 'z'])"),
    "shop.i": ("text collate ci", "string", "select unnest(array['abc', 'Abd', 'b', 'B2', 'é', 'e\u0301x', '😀', 'z'])"),
    "shop.f": ("double precision", "double", "select unnest(array[0, 1.5, -2, 1e20, 0.1])"),
    "shop.t": ("timestamptz", "timestamp", "select timestamptz '2026-03-08 06:30:00+00' + g * interval '30 minutes' "
                                           "from generate_series(1, 8) g"),
    "shop.u": ("uuid", "string", "select md5(g::text)::uuid from generate_series(1, 10) g"),
    "shop.b": ("char(4)", "string", "select unnest(array['a', 'a!', 'b', 'B'])"),
    "shop.y": ("bytea", "string", "select decode(md5(g::text), 'hex') from generate_series(1, 6) g"),
    "shop.v": ("interval", "string", "select unnest(array['1 day', '1 mon', '25 hours', '-1 day', '00:00:01.5']::interval[])"),
}
# The key as the mirror holds it, where the source's own value is not read so.
SOURCE_KEYS = {"shop.y": "encode(id, 'hex')", "shop.v": "format('%s', id)"}
STREAM = [
    # A key's text changed, its value not: the old row goes, the new text comes.
    "update shop.n set id = 1.00 where id = 1.0", "insert into shop.n values (20.0, 1)", "delete from shop.n where id = 20.000",
    "update shop.c set id = 'ABC' where id = 'abc'", "delete from shop.c where id = 'É'", "insert into shop.c values ('É', 7)",
    "update shop.i set id = 'ABC' where id = 'abc'", "delete from shop.i where id = 'Z'", "insert into shop.i values ('Z', 7)",
    "update shop.f set id = '-0' where id = 0", "update shop.f set v = 5 where id = '-0'",
    "set time zone 'Asia/Tokyo'", "insert into shop.t values ('2026-03-09 09:00:00', 3)",
    "delete from shop.t where id = '2026-03-08 03:00:00-05'", "update shop.t set v = 9 where id = '2026-03-08 17:00:00+09'",
    "reset time zone",
    "insert into shop.u values ('A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', 2)",
    "update shop.u set v = 4 where id = 'C4CA4238-A0B9-2382-0DCC-509A6F75849B'",
    "update shop.b set id = 'c   ' where id = 'a'", "update shop.b set v = 6 where id = 'b  '",
    "update shop.m set b = 'ABC' where b = 'abc'", "update shop.m set a = 2.50 where a = 2.5",
    "update shop.v set id = '24 hours' where id = '1 day'", "delete from shop.v where id = '30 days'",
    "update shop.y set v = 8 where id = decode(md5('3'), 'hex')",
]


def source_rows(server, table: str) -> list[tuple]:
    connection = server.connect()
    try:
        with connection.cursor() as cursor:
            cursor.execute("set time zone 'UTC'")
            cursor.execute(f"select {SOURCE_KEYS.get(table, 'id')}, v from {table}" if table != "shop.m"
                           else "select * from shop.m")
            rows = cursor.fetchall()
    finally:
        connection.close()
    return sorted(tuple(normal(value) for value in row) for row in rows)


def normal(value):
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.timezone.utc).replace(tzinfo=None).isoformat()
    if isinstance(value, float):
        return repr(value + 0.0)
    if isinstance(value, Decimal):
        return str(value)
    return str(value)


def mirror_rows(project, model: str, columns: str) -> list[tuple]:
    return sorted(tuple(normal(value) for value in row.values())
                  for row in project.query(f"select {columns} from {project.schema}.{model}"))


def test_keys_equal_by_value_not_text_mirror_as_the_source(postgres, dbt_project, tmp_path):  # noqa: F811
    project = dbt_project
    ddl = ["create extension citext", "create schema shop",
           "create collation shop.ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false)",
           "set search_path = shop, public"]
    for table, (key_type, _, keys) in TABLES.items():
        ddl.append(f"create table {table} (id {key_type} primary key, v int)")
        ddl.append(f"insert into {table} select k, 1 from ({keys}) as keys (k)")
    ddl.append("create table shop.m (a numeric, b text collate ci, v int, primary key (a, b))")
    ddl.append("insert into shop.m select (g / 2.0)::numeric, k, g from generate_series(1, 6) g, "
               "unnest(array['abc', 'b', 'Z']) k")
    execute(postgres, "; ".join(ddl))
    dsn = create_capture_user(postgres, ["shop"])
    tables = {table: ["id"] for table in TABLES} | {"shop.m": ["a", "b"]}
    models = {table.split(".")[1]: table for table in tables}
    for table, (_, mirror_type, _) in TABLES.items():
        project.write_model(table.split(".")[1], f"unique_key='id', source_table='{table}'",
                            "{{ cdc_merge.cdc_columns({'id': '" + mirror_type + "', 'v': 'int'}) }}, "
                            "{{ cdc_merge.cdc_metadata_columns() }}")
    project.write_model("m", "unique_key=['a', 'b'], source_table='shop.m'",
                        "{{ cdc_merge.cdc_columns({'a': 'string', 'b': 'string', 'v': 'int'}) }}, "
                        "{{ cdc_merge.cdc_metadata_columns() }}")
    config = capture_postgres.CaptureConfig(dsn=dsn, tables=tuple(tables), slot="key_equality", out=project.inbox,
                                            state=tmp_path / "capture-state.json", snapshot_mode="online", page_rows=2)

    def apply_and_compare(step: str) -> None:
        capture_postgres.run(config)
        assert "quarantined 0 lines" in project.land(tables).status()
        project.dbt("run", "--select", *models)
        differing = {model: (mirror_rows(project, model, "a, b, v" if model == "m" else "id, v"),
                             source_rows(postgres, table)) for model, table in models.items()}
        differing = {model: pair for model, pair in differing.items() if pair[0] != pair[1]}
        assert not differing, f"{step}: {differing}"

    apply_and_compare("online snapshot")
    execute(postgres, "; ".join(STREAM))
    apply_and_compare("stream")
    for model, table in models.items():  # a range from the second key to the one before the last, as the source writes them
        first = source_rows(postgres, table)
        write_request(config.state, table, list(first[1][:len(tables[table])]), list(first[-2][:len(tables[table])]))
    apply_and_compare("ranges read again")
    # Drift: a row missing from each mirror, then cdc-verify --repair.
    for model in models:
        project.execute(f"delete from {project.schema}.{model} where _cdc_key in "
                        f"(select max(_cdc_key) from {project.schema}.{model})")
    arguments = ["--project-dir", str(project.project_dir), "--profiles-dir", str(PROFILES), "--target", project.target,
                 "--select", *models, "--postgres", dsn]
    assert verify_cli.main(arguments + ["--repair", "--state", str(config.state), "--repair-wait-seconds", "0"]) == 1
    apply_and_compare("repaired")
    assert verify_cli.main(arguments) == 0, project.dbt_log()[-4000:]
