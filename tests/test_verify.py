"""cdc-verify by key ranges against a live source, and --repair (docs/operating.md, "Verify and
repair"): every row of each mirror compared through checksums computed by the source database and
the mirror's engine, drift put into the mirrors found key by key with its kind, recorded in
cdc_merge_verify and failing cdc_verify_clean, then repaired by reading only the differing ranges
again through the running capture. PostgreSQL on both engines, MariaDB on Spark.
Why over 300 lines: the drift its tests put in and the ranges they expect share one set-up per server."""

from __future__ import annotations

import json
import os

from harness.mariadb_server import create_mariadb_capture_user
from harness.postgres_server import create_capture_user
from python_jobs.capture import mysql as capture_mysql
from python_jobs.capture import postgres as capture_postgres
from python_jobs.capture.mysql_pages import SIGNAL_TABLE, SIGNAL_TABLE_DDL
from python_jobs.status.status_files import read_verify_report
from python_jobs.verify import cli as verify_cli
from python_jobs.verify.check import REPORT_FILE
from test_capture_faults import mariadb, postgres  # noqa: F401 - fixtures
from test_online_snapshots import execute
from test_online_snapshots_mariadb import execute as my_execute

PROFILES = verify_cli.Path(__file__).resolve().parent.parent / "profiles"
ITEMS = ("{{ cdc_merge.cdc_columns({'id': 'int', 'code': 'string', 'qty': 'int', 'price': 'decimal(10,2)'}) }}, "
         "{{ cdc_merge.cdc_metadata_columns() }}")
LINES = "{{ cdc_merge.cdc_columns({'order_id': 'int', 'line': 'string', 'qty': 'int'}) }}, {{ cdc_merge.cdc_metadata_columns() }}"
TESTS = """version: 2
models:
  - name: {model}
    data_tests:
      - cdc_verify_clean
"""


def write_models(project) -> None:
    for model, table, columns in (("items", "shop.items", ITEMS), ("order_lines", "shop.order_lines", LINES)):
        key = "'id'" if model == "items" else "['order_id', 'line']"
        project.write_model(model, f"unique_key={key}, source_table='{table}'", columns)
        (project.project_dir / "models" / "mirrors" / f"_{model}.yml").write_text(TESTS.format(model=model))


def land_and_apply(project) -> None:
    landed = project.land({"shop.items": ["id"], "shop.order_lines": ["order_id", "line"]})
    assert "quarantined 0 lines" in landed.status(), landed.status()
    project.dbt("run", "--select", "items", "order_lines")


def verify(project, source: list[str], *options: str) -> int:
    return verify_cli.main(["--project-dir", str(project.project_dir), "--profiles-dir", str(PROFILES),
                            "--target", project.target, "--select", "items", "order_lines", *source, *options])


def put_drift(project) -> dict[str, str]:
    """Changed, missing and extra rows in both mirrors, behind the pipeline's back; each key's report line."""
    schema = project.schema
    project.execute(f"update {schema}.items set qty = 999 where id in (1500, 2999)")
    project.execute(f"update {schema}.items set price = 0.01 where id = 7")
    project.execute(f"delete from {schema}.items where id in (1501, 10)")
    for key in (3001, 4444):
        project.execute(f"insert into {schema}.items (id, code, qty, price, _cdc_key, _cdc_seq, _cdc_source_ts) values "
                        f"({key}, 'extra', 1, 1.00, '[\"{key}\"]', '00000000000000000001', current_timestamp())")
    # A row copied by hand: a key held twice, on which the mirror's runs fail until one row holds it.
    project.execute(f"insert into {schema}.items select * from {schema}.items where id = 20")
    project.execute(f"update {schema}.order_lines set qty = 999 where order_id = 12 and line = 'l3'")
    project.execute(f"delete from {schema}.order_lines where order_id = 40 and line = 'l1'")
    project.execute(f"insert into {schema}.order_lines (order_id, line, qty, _cdc_key, _cdc_seq, _cdc_source_ts) values "
                    f"(15, 'zz', 1, '[\"15\",\"zz\"]', '00000000000000000001', current_timestamp())")
    return {'key ["1500"]: qty': "changed", 'key ["2999"]: qty': "changed", 'key ["7"]: price': "changed",
            'missing from the mirror: key ["1501"]': "missing", 'missing from the mirror: key ["10"]': "missing",
            'extra in the mirror: key ["3001"]': "extra", 'extra in the mirror: key ["4444"]': "extra",
            'extra in the mirror: key ["20"]': "extra", '["20"] (2 rows)': "repeated",
            'key ["12","l3"]: qty': "changed", 'missing from the mirror: key ["40","l1"]': "missing",
            'extra in the mirror: key ["15","zz"]': "extra"}


def check_finds_and_repairs(project, source: list[str], capture_again) -> None:
    """Equal at first; the drift found key by key and recorded; repaired by reading only its ranges."""
    assert verify(project, source) == 0
    assert "2 mirrors equal" in project.dbt_log() and "every row" in project.dbt_log()
    project.dbt("test", "--select", "items", "order_lines")

    expected = put_drift(project)
    # No capture runs until capture_again: the requests wait for it.
    state = str(project.work_dir / "state.json")
    assert verify(project, source, "--repair", "--state", state, "--repair-wait-seconds", "0") == 1
    # The report says when the ranges were asked again, for the status page (python_jobs/status/page.py).
    report = project.project_dir / os.environ.get("DBT_TARGET_PATH", "target") / REPORT_FILE
    assert [(check.clean, bool(check.repair_asked_at)) for check in read_verify_report(report)] == [(False, True)] * 2
    log = project.dbt_log()
    for line in expected:
        assert line in log, (line, log[-3000:])
    # A difference is the check's answer, not an error of the project: no dbt "Compilation Error".
    assert "Compilation Error" not in log, log[-3000:]
    assert not project.dbt("test", "--select", "items", expect_success=False).success
    recorded = project.query(f"select method, clean, missing, extra, differing from {project.schema}.cdc_merge_verify "
                             f"where mirror = '{project.schema}.items' order by checked_at")
    assert [(row["method"], row["clean"]) for row in recorded] == [("ranges", True), ("ranges", False)], recorded
    assert (recorded[-1]["missing"], recorded[-1]["extra"], recorded[-1]["differing"]) == (2, 3, 3)
    # The key held twice: its rows deleted before it is read again.
    assert project.query(f"select count(*) as n from {project.schema}.items where id = 20")[0]["n"] == 0
    assert "keys it held more than once: [\"20\"]; they are read again" in log

    reread = capture_again()
    # Only the differing ranges are read again: 10 differences in ranges of about 50 rows.
    assert 0 < reread <= 10 * 2 * 100, reread
    land_and_apply(project)
    assert verify(project, source) == 0, project.dbt_log()[-3000:]
    assert [(check.clean, check.repair_asked_at) for check in read_verify_report(report)] == [(True, None)] * 2
    project.dbt("test", "--select", "items", "order_lines")


def test_postgres_mirrors_verified_by_ranges_and_repaired(postgres, conformance_project, monkeypatch):
    project = conformance_project
    execute(postgres, "create schema shop; create table shop.items (id int primary key, code text, qty int, price numeric(10,2));"
                      "insert into shop.items select g, 'c' || g, g, g * 1.25 from generate_series(1, 3000) g;"
                      "create table shop.order_lines (order_id int, line text, qty int, primary key (order_id, line));"
                      "insert into shop.order_lines select g / 10, 'l' || (g % 10), g from generate_series(1, 600) g")
    dsn = create_capture_user(postgres, ["shop"])
    config = capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.items", "shop.order_lines"), slot="verify",
                                            out=project.inbox, state=project.work_dir / "state.json",
                                            snapshot_mode="online", page_rows=1000)
    write_models(project)
    capture_postgres.run(config)
    land_and_apply(project)
    check_finds_and_repairs(project, ["--postgres", dsn], lambda: capture_postgres.run(config).snapshot_rows)

    # A soft-delete mirror by its live rows, a history mirror by its current versions, after deletes
    # and updates at the source.
    project.write_model("items_soft", "materialized='cdc_merge', unique_key='id', source_table='shop.items', "
                                      "deletes='soft'", ITEMS)
    project.write_model("items_history", "materialized='cdc_history', unique_key='id', source_table='shop.items'", ITEMS)
    # And a model that rounds the source's prices: equal at its own scale, which the check says.
    project.write_model("items_rounded", "materialized='cdc_merge', unique_key='id', source_table='shop.items'",
                        ITEMS.replace("decimal(10,2)", "decimal(10,1)"))
    project.dbt("run", "--select", "items_soft", "items_history", "items_rounded")
    execute(postgres, "delete from shop.items where id <= 5; update shop.items set qty = qty + 1 where id between 6 and 10")
    capture_postgres.run(config)
    land_and_apply(project)
    project.dbt("run", "--select", "items_soft", "items_history", "items_rounded")
    assert verify_cli.main(["--project-dir", str(project.project_dir), "--profiles-dir", str(PROFILES),
                            "--target", project.target, "--postgres", dsn]) == 0, project.dbt_log()[-3000:]
    for model in ("items_soft", "items_history", "items_rounded"):
        assert f"{project.schema}.{model} vs shop.items: equal: 2995 rows" in project.dbt_log()
    assert "compared at the mirror's scale, smaller than the source's" in project.dbt_log()
    assert "price (source numeric(10,2), mirror " in project.dbt_log()


def test_mariadb_mirrors_verified_by_ranges_and_repaired(mariadb, dbt_project, monkeypatch):
    project = dbt_project
    my_execute(mariadb, "create database shop", "use shop",
               "create table shop.items (id int primary key, code varchar(20), qty int, price decimal(10,2))",
               "insert into shop.items select seq, concat('c', seq), seq, seq * 1.25 from seq_1_to_3000",
               "create table shop.order_lines (order_id int, line varchar(8), qty int, primary key (order_id, line))",
               "insert into shop.order_lines select seq div 10, concat('l', seq mod 10), seq from seq_1_to_600",
               "create database cdc_merge", SIGNAL_TABLE_DDL.format(table=SIGNAL_TABLE))
    user, password = create_mariadb_capture_user(mariadb, ["shop"])
    my_execute(mariadb, f"grant insert on {SIGNAL_TABLE} to {user}@'%'")
    monkeypatch.setenv("MYSQL_PWD", password)
    config = capture_mysql.CaptureConfig(host="127.0.0.1", port=mariadb.port, user=user, password=password,
                                         tables=("shop.items", "shop.order_lines"), out=project.inbox,
                                         state=project.work_dir / "state.json", snapshot_mode="online", page_rows=1000)
    write_models(project)
    capture_mysql.run(config)
    land_and_apply(project)
    check_finds_and_repairs(project, ["--mysql", f"{user}@127.0.0.1:{mariadb.port}"],
                            lambda: capture_mysql.run(config).snapshot_rows)
    assert json.loads((project.work_dir / "state.json").read_text())["snapshots"] == []


def test_keys_in_flight_are_left_out_of_the_source_side_on_both_servers(postgres, mariadb, monkeypatch):  # noqa: F811
    """The source's side of a range check without the keys changed after its position (in_flight.py):
    a composite key of a number and text, 15,000 keys left out, every query of the side."""
    from python_jobs.verify.ranges import KeyRange
    from python_jobs.verify.sources import MysqlSource, PostgresSource

    execute(postgres, "create schema shop; create table shop.lines (order_id int, line text, qty int, primary key (order_id, line));"
                      "insert into shop.lines select g / 10, 'l' || (g % 10), g from generate_series(1, 50000) g")
    my_execute(mariadb, "create database shop", "use shop", "create table shop.lines (order_id int, line varchar(10), qty int, "
                        "primary key (order_id, line))", "insert into shop.lines select seq div 10, concat('l', seq mod 10), "
                        "seq from seq_1_to_50000")
    user, password = create_mariadb_capture_user(mariadb, ["shop"])
    monkeypatch.setenv("MYSQL_PWD", password)
    columns = [["order_id", "int"], ["line", "string"], ["qty", "int"]]
    left_out = [[str(order), f"l{line}"] for order in range(100, 3100) for line in range(0, 10, 2)]  # 15,000 keys
    for source in (PostgresSource(create_capture_user(postgres, ["shop"])), MysqlSource(f"{user}@127.0.0.1:{mariadb.port}")):
        side = source.ranges("shop.lines", columns)
        (everything,) = side.segment_stats(KeyRange(), []).values()
        side.exclude(left_out)
        (stats,) = side.segment_stats(KeyRange(), []).values()
        assert stats.rows == everything.rows - 15_000, source.name
        around = KeyRange(after=(99, "l9"), through=(101, "l9"))
        assert sorted(side.rows(around)) == sorted(f'["{order}","l{line}"]' for order in (100, 101) for line in (1, 3, 5, 7, 9))
        assert len(side.sample_keys(KeyRange(), 50)) == 50
        source.close()


# Doubles the checksums once rendered alike (6 decimals, NULL from 1e31): each pair must differ.
DOUBLES = ["0", "-0", "1.0000001", "1.0000004", "1e35", "2e35", "0.1", "0.1000003", "0.30000000000000004", "-2.5", "1",
           "2", "1024", "1.4142135623730951", "123456789012345678", "1.7976931348623157e308", "-5e-324", "2.2250738585072014e-308"]


def test_floats_are_rendered_exactly_and_alike_on_every_engine(postgres, mariadb, spark):  # noqa: F811
    """row_hash.float_sql: the checksums of PostgreSQL, MariaDB, Spark and Databend (in the steps its
    planner needs: staged_float_sql, as a mirror's range query has them) see any two doubles (or
    floats) apart, and one value alike."""
    import databend

    from python_jobs.verify.mirror_ranges import stages_sql
    from python_jobs.verify.row_hash import as_double_sql, staged_float_sql, value_sql

    embedded = databend.SessionContext()
    embedded.sql("create table v (i int, d double null, f float null)").collect()
    embedded.sql("insert into v (i, d) values " + ", ".join(f"({index}, {value})" for index, value in enumerate(DOUBLES))).collect()
    embedded.sql("update v set f = d").collect()  # a mirror's float column: the double rounded to 32 bits

    my_execute(mariadb, "create database floats", "create table floats.v (i int primary key, v double)",
               "insert into floats.v values " + ", ".join(f"({index}, {value})" for index, value in enumerate(DOUBLES)))
    pg = postgres.connect()
    for family in ("double", "float"):
        with pg.cursor() as cursor:
            cursor.execute(f"select {value_sql('postgres', 'v::float8', family)} from unnest(%s::text[]) with ordinality "
                           "as u(v, i) order by i", (DOUBLES,))
            rendered = {"postgres": [row[0] for row in cursor.fetchall()]}
        connection = mariadb.connect()
        with connection.cursor() as cursor:
            cursor.execute(f"select {value_sql('mysql', 'v', family)} from floats.v order by i")
            rendered["mysql"] = [row[0] for row in cursor.fetchall()]
        connection.close()
        rendered["spark"] = list(spark.sql("select " + ", ".join(value_sql("spark", f"cast('{value}' as double)", family)
                                                                 for value in DOUBLES)).collect()[0])
        stages, text = staged_float_sql("databend", as_double_sql("databend", family[0], family), "f0")
        rendered["databend"] = [None if value != value else value for value in embedded.sql(
            f"with live as (select * from v), {stages_sql(stages)} ranged as (select i, {text} as t from staged) "
            "select t from ranged order by i").to_pandas()["t"]]
        for engine, texts in rendered.items():
            assert texts == rendered["postgres"], (family, engine, list(zip(DOUBLES, texts, rendered["postgres"])))
        texts = rendered["postgres"]
        assert texts[0] == texts[1] == "0"
        if family == "double":
            assert len(set(texts[1:])) == len(DOUBLES) - 1, texts
        else:  # the doubles beyond 32 bits are NULL; the rest differ as 32-bit floats do
            assert texts[15] is None and texts[16] == texts[17] == "0" and texts[6] != texts[7], texts
    pg.close()


KEYED_TABLES = {  # a table whose key the mirror orders otherwise than the source, or cannot range
    "shop.nums": ("id numeric primary key, v int", "select g * 1.25, g from generate_series(1, 120) g",
                  {"id": "string", "v": "int"}),
    "shop.days": ("id date primary key, v int", "select date '2024-01-01' + g, g from generate_series(1, 50) g",
                  {"id": "date", "v": "int"}),
    "shop.dollars": ("id text primary key, v int", "select k, ord from unnest(array[' a', '!', '${x}', '${y}z', 'a', "
                     "'b', 'c', 'd']) with ordinality as u(k, ord)", {"id": "string", "v": "int"}),
}


def test_keys_in_text_order_by_sample_and_with_dollars_are_verified_and_repaired(postgres, dbt_project):  # noqa: F811
    """A numeric key mirrored as text is ranged in text order on both sides; a date key, checked by a
    sample, has its differing keys read again; text keys with ${...} reach Spark whole."""
    project = dbt_project
    for table, (columns, rows, _) in KEYED_TABLES.items():
        execute(postgres, f"create schema if not exists shop; create table {table} ({columns}); insert into {table} {rows}")
    dsn = create_capture_user(postgres, ["shop"])
    config = capture_postgres.CaptureConfig(dsn=dsn, tables=tuple(KEYED_TABLES), slot="keyed", out=project.inbox,
                                            state=project.work_dir / "state.json", snapshot_mode="online", page_rows=1000)
    models = [table.split(".")[1] for table in KEYED_TABLES]
    for (table, (_, _, columns)), model in zip(KEYED_TABLES.items(), models):
        project.write_model(model, f"unique_key='id', source_table='{table}'",
                            "{{ cdc_merge.cdc_columns(" + json.dumps(columns) + ") }}, {{ cdc_merge.cdc_metadata_columns() }}")

    def capture_and_apply() -> None:
        capture_postgres.run(config)
        landed = project.land({table: ["id"] for table in KEYED_TABLES})
        assert "quarantined 0 lines" in landed.status(), landed.status()
        project.dbt("run", "--select", *models)

    def check(*options: str) -> int:
        return verify_cli.main(["--project-dir", str(project.project_dir), "--profiles-dir", str(PROFILES), "--target",
                                project.target, "--select", *models, "--postgres", dsn, "--segments", "8",
                                "--leaf-rows", "10", *options])

    capture_and_apply()
    assert check() == 0, project.dbt_log()[-3000:]
    schema = project.schema
    project.execute(f"delete from {schema}.nums where id in ('1.25', '150.00')")
    project.execute(f"update {schema}.nums set v = -1 where id = '10.00'")
    project.execute(f"delete from {schema}.days where v = 20")
    project.execute(f"update {schema}.days set v = -1 where v = 21")
    # Spark would substitute ${y} in this statement too: its $ as the literal's escape.
    project.execute(f"update {schema}.dollars set v = -1 where id in ('c', '\\u0024{{y}}z')")
    assert check("--repair", "--state", str(config.state), "--repair-wait-seconds", "0") == 1
    log = project.dbt_log()
    for line in ('missing from the mirror: key ["1.25"]', 'missing from the mirror: key ["150.00"]', 'key ["10.00"]: v',
                 'missing from the mirror: key ["2024-01-21"]', 'key ["2024-01-22"]: v', 'key ["c"]: v', 'key ["${y}z"]: v'):
        assert line in log, (line, log[-3000:])
    capture_and_apply()
    assert check() == 0, project.dbt_log()[-3000:]


MEASURES = ("{{ cdc_merge.cdc_columns({'id': 'int', 'amount': 'decimal(38,10)', 'note': 'string', 'ratio': 'float', "
            "'portion': 'double'}) }}, "
            "{{ cdc_merge.cdc_metadata_columns() }}")


def test_wide_decimals_and_control_characters_are_compared_row_by_row_as_they_are(postgres, conformance_project):  # noqa: F811
    """Rows compared one by one (a sampled check; a range check's range that differs elsewhere) read each
    mirror row as the engine's JSON: a decimal(38,10) must come as its text (Databend's json_object made
    it a double, 12345678901234567890.0123456789 a false difference) and a text's control characters,
    which Databend leaves unescaped in the JSON, must be read. Equal rows are equal; changed ones reported.
    Its float and double columns are in the ranges' checksums (on Databend in the steps its planner needs)."""
    project = conformance_project
    execute(postgres, "create schema shop; create table shop.measures (id int primary key, amount numeric(38,10), note text, "
                      "ratio real, portion double precision);"
                      "insert into shop.measures select g, (array[12345678901234567890.0123456789, -0.0000000001, "
                      "9999999999999999999999999000.9999999999, -12345678901234567890.0123456789])[g % 4 + 1] + g, "
                      "'n' || g || chr(1) || chr(9) || chr(10) || chr(31) || 'end', g / 3.0, g * 1.1 from generate_series(1, 40) g")
    dsn = create_capture_user(postgres, ["shop"])
    config = capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.measures",), slot="measures", out=project.inbox,
                                            state=project.work_dir / "state.json", snapshot_mode="online", page_rows=1000)
    project.write_model("measures", "unique_key='id', source_table='shop.measures'", MEASURES)
    capture_postgres.run(config)
    assert "quarantined 0 lines" in project.land({"shop.measures": ["id"]}).status()
    project.dbt("run", "--select", "measures")
    assert project.query(f"select note from {project.schema}.measures where id = 3") == [{"note": "n3\x01\t\n\x1fend"}]

    def check(*options: str) -> int:
        return verify_cli.main(["--project-dir", str(project.project_dir), "--profiles-dir", str(PROFILES),
                                "--target", project.target, "--select", "measures", "--postgres", dsn, *options])

    def recorded_differences() -> int:
        return project.query(f"select differing from {project.schema}.cdc_merge_verify order by checked_at")[-1]["differing"]

    # --segments 1: a range check's one range, all 40 rows, compared row by row once it differs.
    for options in (["--sample", "100"], ["--segments", "1"]):
        assert check(*options) == 0, project.dbt_log()[-3000:]
        assert recorded_differences() == 0
    assert f"{project.schema}.measures vs shop.measures: equal: 40 rows" in project.dbt_log()

    # Two rows changed behind the pipeline's back: those two reported, none of the 38 equal rows beside them.
    project.execute(f"update {project.schema}.measures set amount = 12345678901234567897.0123456788 where id = 4")
    project.execute(f"update {project.schema}.measures set note = 'changed' where id = 9")
    for options, compared in ((["--sample", "100"], "40 sampled rows"), (["--segments", "1"], "40 rows compared one by one")):
        assert check(*options) == 1, project.dbt_log()[-3000:]
        log = project.dbt_log()
        assert f"{compared}: 0 missing, 0 extra, 2 with other values" in log, log[-3000:]
        assert "key [\"4\"]: amount: source '12345678901234567894.0123456789', mirror " in log, log[-3000:]
        assert "key [\"9\"]: note: source 'n9\\x01\\t\\n\\x1fend', mirror 'changed'" in log, log[-3000:]
        assert recorded_differences() == 2, log[-3000:]
