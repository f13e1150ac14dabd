"""Mirror models that type a column otherwise than its source, checked against the real source after
inserts, updates, a key change and a delete, on both engines: a text key of digits as int, a boolean as
int, a numeric or decimal as double, a timestamp with time zone as date, a number as text. On Spark the
JSON reader took a number type only from a JSON number (and a boolean only from true or false), so
the key columns, the booleans and the numerics read null while _cdc_key was right. cdc-verify of such
a mirror says why it does not compare it (its key is not ordered or written as the source's), where it
stopped with a TypeError. A value the model's type cannot hold stops the run on both engines (Spark
made it null: a mirror unlike its source), and the mirror rebuilt with a type that holds it has it."""

from __future__ import annotations

from harness.mariadb_server import create_mariadb_capture_user
from harness.postgres_server import create_capture_user
from python_jobs.capture import mysql as capture_mysql
from python_jobs.capture import postgres as capture_postgres
from test_capture_faults import mariadb, postgres  # noqa: F401 - fixtures
from test_materialization import postgres_line, run_error
from test_online_snapshots import execute
from test_online_snapshots_mariadb import execute as my_execute
from test_verify_types import verify

MODEL_COLUMNS = ("{{ cdc_merge.cdc_columns({'id': 'int', 'flag': 'int', 'at': 'date', 'n': 'string'}) }}, "
                 # cdc_column reads a column as cdc_columns does, by a from_json of its own.
                 "{{ cdc_merge.cdc_column('amount', 'double') }}, {{ cdc_merge.cdc_metadata_columns() }}")
CHANGES = ("update shop.codes set n = 50, amount = 0.1, flag = not flag where id = '2'",
           "update shop.codes set id = '20' where id = '4'", "delete from shop.codes where id = '3'")


def applied(project, capture, tables) -> None:
    capture()
    landed = project.land(tables)
    assert "quarantined 0 lines" in landed.status(), landed.status()
    project.dbt("run", "--select", "codes")


def assert_mirror_is(project, source_rows) -> None:
    mirror = project.query(f"select id, flag, amount, at, n from {project.schema}.codes order by id")
    assert [tuple(row.values()) for row in mirror] == [tuple(row) for row in source_rows]


def assert_not_verified(project, source: list[str], source_type: str) -> None:
    assert verify(project, "codes", source) != 0
    said = project.dbt_log()[-4000:]
    assert f"key column id is {source_type} at the source and " in said, said
    assert "in the mirror (its model casts it): its keys are not ordered or written alike, so the mirror is not compared" in said


def test_postgres_columns_the_model_casts_read_as_the_source_holds_them(postgres, conformance_project, tmp_path):  # noqa: F811
    project = conformance_project
    execute(postgres, "create schema shop; create table shop.codes (id text primary key, flag boolean, amount numeric(10,2), "
                      "at timestamptz, n int); insert into shop.codes select g::text, g % 2 = 0, g * 1.25, "
                      "timestamptz '2026-01-01 23:30:00+05' + g * interval '1 hour', g from generate_series(1, 6) g")
    project.write_model("codes", "unique_key='id', source_table='shop.codes'", MODEL_COLUMNS)
    config = capture_postgres.CaptureConfig(dsn=create_capture_user(postgres, ["shop"]), tables=("shop.codes",),
                                            slot="codes", out=project.inbox, state=tmp_path / "capture-state.json")
    source = ("select id::int, flag::int, amount::float8, (at at time zone 'UTC')::date, n::text "
              "from shop.codes order by 1")
    for changes in ((), CHANGES):
        for change in changes:
            execute(postgres, change)
        applied(project, lambda: capture_postgres.run(config), {"shop.codes": ["id"]})
        connection = postgres.connect()
        with connection.cursor() as cursor:
            cursor.execute(source)
            assert_mirror_is(project, cursor.fetchall())
        connection.close()

    assert_not_verified(project, ["--postgres", postgres.dsn], "text")


def test_mariadb_columns_the_model_casts_read_as_the_source_holds_them(mariadb, conformance_project, tmp_path, monkeypatch):  # noqa: F811
    project = conformance_project
    my_execute(mariadb, "create database shop", "create table shop.codes (id varchar(10) primary key, flag tinyint(1), "
                        "amount decimal(10,2), at timestamp(6) null, n bigint)",
               *[f"insert into shop.codes values ('{g}', {g % 2}, {g * 1.25}, '2026-01-01 21:30:00' + interval {g} hour, {g})"
                 for g in range(1, 7)])
    project.write_model("codes", "unique_key='id', source_table='shop.codes'", MODEL_COLUMNS)
    user, password = create_mariadb_capture_user(mariadb, ["shop"])
    monkeypatch.setenv("MYSQL_PWD", password)
    config = capture_mysql.CaptureConfig(host="127.0.0.1", port=mariadb.port, user=user, password=password,
                                         tables=("shop.codes",), out=project.inbox, state=tmp_path / "capture-state.json")
    source = ("select cast(id as signed), flag, cast(amount as double), date(at), cast(n as char) "
              "from shop.codes order by 1")
    for changes in ((), [change.replace("not flag", "1 - flag") for change in CHANGES]):
        my_execute(mariadb, *changes)
        applied(project, lambda: capture_mysql.run(config), {"shop.codes": ["id"]})
        connection = mariadb.connect()
        with connection.cursor() as cursor:
            cursor.execute("set time_zone = '+00:00'")
            cursor.execute(source)
            assert_mirror_is(project, cursor.fetchall())
        connection.close()

    assert_not_verified(project, ["--mysql", f"{user}@127.0.0.1:{mariadb.port}"], "varchar(10)")


def test_a_value_the_models_type_cannot_hold_stops_the_run_until_the_model_holds_it(conformance_project):
    project = conformance_project

    def run_with(qty_type: str, lines: list[str], name: str, *args: str):
        (project.inbox / name).write_text("\n".join(lines) + "\n")
        project.land({"public.docs": ["id"]})
        project.write_model("docs", "unique_key='id', source_table='public.docs'",
                            f"{{{{ cdc_merge.cdc_columns({{'id': 'int', 'qty': '{qty_type}'}}) }}}}, {{{{ cdc_merge.cdc_metadata_columns() }}}}")
        return project.dbt("run", "--select", "docs", *args, expect_success=False)

    def mirror() -> list[tuple]:
        return [tuple(row.values()) for row in project.query(f"select id, qty from {project.schema}.docs order by id")]

    assert run_with("int", [postgres_line("c", 100, {"id": 1, "qty": 2}), postgres_line("c", 101, {"id": 2, "qty": 3})], "1.json").success
    result = run_with("int", [postgres_line("u", 110, {"id": 1, "qty": 1.5})], "2.json")
    assert not result.success
    if not project.on_databend:
        assert ("JSON field 'qty' holds 1.5, which int cannot hold (model 'docs'): type the column so that it holds every"
                " value of the source's (cdc-scaffold --overwrite writes the source's types" in run_error(result))
    assert mirror() == [(1, 2), (2, 3)]
    # The model's type made to hold it (a rebuild, as the run says for a type it cannot widen in place):
    # nothing the failed run could not apply is lost.
    assert run_with("double", [postgres_line("u", 120, {"id": 2, "qty": 4})], "3.json", "--full-refresh").success
    assert mirror() == [(1, 1.5), (2, 4.0)]


def test_a_decimal_too_wide_for_the_models_type_stops_the_run_and_the_rebuild(conformance_project):
    """Spark's reader made 12345.67 as decimal(5,2) null, in a run and in a --full-refresh made to narrow the
    column (the change in place is refused): a mirror unlike its source. It fails as Databend's cast fails."""
    project = conformance_project

    def run_with(amount_type: str, *args: str):
        project.write_model("docs", "unique_key='id', source_table='public.docs'",
                            f"{{{{ cdc_merge.cdc_columns({{'id': 'int', 'amount': '{amount_type}'}}) }}}}, {{{{ cdc_merge.cdc_metadata_columns() }}}}")
        return project.dbt("run", "--select", "docs", *args, expect_success=False)

    def land(name: str, lines: list[str]) -> None:
        (project.inbox / name).write_text("\n".join(lines) + "\n")
        project.land({"public.docs": ["id"]})

    def mirror() -> list[tuple]:
        return [(row["id"], str(row["amount"])) for row in project.query(f"select id, amount from {project.schema}.docs order by id")]

    land("1.json", [postgres_line("c", 100, {"id": 1, "amount": "12.50"}), postgres_line("c", 101, {"id": 2, "amount": 12345.67})])
    assert run_with("decimal(10,2)").success
    assert mirror() == [(1, "12.50"), (2, "12345.67")]
    result = run_with("decimal(5,2)")  # the change in place is refused before anything is written
    assert not result.success
    assert mirror() == [(1, "12.50"), (2, "12345.67")]
    # A rebuild reads every value again. It stops, never holding a null for 12345.67, and the mirror it built
    # aside leaves the stored one as it was (docs/mirror_models.md, "Changing a model").
    result = run_with("decimal(5,2)", "--full-refresh")
    assert not result.success
    if not project.on_databend:
        error = run_error(result)
        assert "JSON field 'amount' holds 12345.67, which decimal(5,2) cannot hold (model 'docs')" in error
        # The message, not Py4J's call and the Java stack under it (the rows were computed in the driver).
        assert "An error occurred while calling" not in error and "\tat org.apache" not in error, error
    assert mirror() == [(1, "12.50"), (2, "12345.67")]
    # A history reads the value in a Spark job: its error is the same message, without the task's Java frames.
    project.write_model("docs_versions", "materialized='cdc_history', unique_key='id', source_table='public.docs'",
                        "{{ cdc_merge.cdc_columns({'id': 'int', 'amount': 'decimal(5,2)'}) }}, {{ cdc_merge.cdc_metadata_columns() }}")
    result = project.dbt("run", "--select", "docs_versions", expect_success=False)
    assert not result.success
    if not project.on_databend:
        error = run_error(result)
        assert "JSON field 'amount' holds 12345.67, which decimal(5,2) cannot hold (model 'docs_versions')" in error
        assert "\tat org.apache" not in error and "Driver stacktrace" not in error, error
    (project.project_dir / "models" / "mirrors" / "docs_versions.sql").unlink()
    land("2.json", [postgres_line("u", 110, {"id": 1, "amount": "123456.7"})])
    assert run_with("decimal(10,2)").success
    assert mirror() == [(1, "123456.70"), (2, "12345.67")]


def test_a_decimal_that_rounds_past_the_models_precision_stops_the_run_on_both_engines(conformance_project):
    """999.995 as decimal(5,2) rounds to 1000.00, which the type does not hold: Databend's cast kept it in the
    mirror's decimal(5,2) column, where Spark stopped the run. Both stop it now; 999.994 fits as 999.99."""
    project = conformance_project
    (project.inbox / "1.json").write_text("\n".join([
        postgres_line("c", 100, {"id": 1, "amount": "999.994"}), postgres_line("c", 101, {"id": 2, "amount": 999.995}),
    ]) + "\n")
    project.land({"public.docs": ["id"]})

    def run_with(amount_type: str):
        project.write_model("docs", "unique_key='id', source_table='public.docs'",
                            f"{{{{ cdc_merge.cdc_columns({{'id': 'int', 'amount': '{amount_type}'}}) }}}}, {{{{ cdc_merge.cdc_metadata_columns() }}}}")
        return project.dbt("run", "--select", "docs", expect_success=False)

    result = run_with("decimal(5,2)")
    assert not result.success
    error = run_error(result)
    assert ("Decimal overflow" in error) if project.on_databend else (
        "JSON field 'amount' holds 999.995, which decimal(5,2) cannot hold (model 'docs')" in error), error
    assert run_with("decimal(6,2)").success
    rows = project.query(f"select id, amount from {project.schema}.docs order by id")
    assert [(row["id"], str(row["amount"])) for row in rows] == [(1, "999.99"), (2, "1000.00")]


def test_a_boolean_from_a_number_or_a_text_reads_alike_on_both_engines(conformance_project):
    """MySQL's tinyint(1) (1 and 0) or a text in a model's boolean column: as Spark's cast reads it."""
    project = conformance_project
    values = [1, 0, True, False, "1", "no", " Yes "]
    (project.inbox / "1.json").write_text("\n".join(
        postgres_line("c", 100 + key, {"id": key, "flag": flag}) for key, flag in enumerate(values)) + "\n")
    project.land({"public.docs": ["id"]})
    project.write_model("docs", "unique_key='id', source_table='public.docs'",
                        "{{ cdc_merge.cdc_columns({'id': 'int', 'flag': 'boolean'}) }}, {{ cdc_merge.cdc_metadata_columns() }}")
    project.dbt("run", "--select", "docs")
    rows = project.query(f"select id, flag from {project.schema}.docs order by id")
    assert [row["flag"] for row in rows] == [True, False, True, False, True, False, True]
