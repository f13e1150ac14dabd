"""The first changes to a project cdc-init wrote, as docs/your_project.md says to make them: a column
added at the source and a table added to the capture (cdc-scaffold writes the models, their YAML
entries and the new table's landing key), then the capture and dbt build; and the tables the
capture cannot take refused by cdc-init with what to change."""

from __future__ import annotations

import shlex

import yaml

from harness.postgres_server import create_capture_user
from test_capture_faults import postgres  # noqa: F401 - fixture
from test_starter import PROJECT_DIR, run

SOURCE = """
create schema shop;
create table shop.customers (id int primary key, name text, tags text[]);
insert into shop.customers values (1, 'Ada', '{a,b}'), (2, 'Grace', null);
"""
# A day's changes: a column added, a table that had rows before the capture knew it, rows changed.
CHANGES = """
alter table shop.customers add column tier smallint default 1;
create table shop.parcels (order_id int, carrier text, weight numeric(6,2), primary key (order_id, carrier));
insert into shop.parcels values (10, 'UPS', 1.25), (11, 'DHL', null);
"""
LATER = """
update shop.customers set tier = 3 where id = 2;
delete from shop.customers where id = 1;
update shop.parcels set weight = 2.50 where order_id = 10;
"""


def test_a_column_and_a_table_added_on_day_one_reach_the_mirrors(postgres, tmp_path):
    connection = postgres.connect()
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute(SOURCE)
    dsn = create_capture_user(postgres, ["shop"])
    project, home = tmp_path / "my_shop", tmp_path / "home"
    home.mkdir()
    written = run(["cdc-init", str(project), "--postgres", dsn, "--tables", "Shop.Customers", "--package-local",
                   str(PROJECT_DIR)], tmp_path, home)
    run(["dbt", "deps", "--profiles-dir", "."], project, home)
    # The next steps it prints, the capture's command whole, as the capture folds the table's name.
    (printed,) = [line.strip() for line in written.splitlines() if line.strip().startswith("cdc-capture-postgres")]
    assert shlex.split(printed) == ["cdc-capture-postgres", "--dsn", dsn, "--tables", "shop.customers", "--slot", "my_shop",
                                    "--out", "data/inbox", "--state", "data/capture-state.json"]
    run(shlex.split(printed), project, home)

    def capture(tables: str) -> str:
        return run(["cdc-capture-postgres", "--dsn", dsn, "--tables", tables, "--slot", "my_shop",
                    "--out", "data/inbox", "--state", "data/capture-state.json"], project, home)

    run(["dbt", "build", "--profiles-dir", "."], project, home)
    with connection.cursor() as cursor:
        cursor.execute(CHANGES)

    # As the docs say: the models again (the changed one with --overwrite), then the capture with the new table.
    scaffolded = run(["cdc-scaffold", "--postgres", dsn, "--tables", "shop.customers,shop.parcels", "--out", "models/mirrors",
                      "--yaml", "models/mirrors/_mirrors__models.yml", "--overwrite"], project, home)
    assert f"added shop.parcels to {project / 'landing.yml'}" in scaffolded
    for name in ("landing.yml", "landing-databend.yml"):
        assert yaml.safe_load((project / name).read_text())["tables"] == {
            "shop.customers": {"key": ["id"]}, "shop.parcels": {"key": ["order_id", "carrier"]}}, name
    models = yaml.safe_load((project / "models" / "mirrors" / "_mirrors__models.yml").read_text())["models"]
    assert [model["name"] for model in models] == ["shop_customers", "shop_parcels"]  # replaced, not appended again
    assert [column["name"] for column in models[0]["columns"]] == ["id", "name", "tags", "tier"]
    assert "shop.parcels was added to --tables" in capture("shop.customers,shop.parcels")
    with connection.cursor() as cursor:
        cursor.execute(LATER)
    capture("shop.customers,shop.parcels")
    build = run(["dbt", "build", "--profiles-dir", "."], project, home)
    assert "quarantined 0 lines" in build and "WARN=0" in build, build[-4000:]
    assert "2 mirrors equal PostgreSQL" in run(["cdc-verify", "--profiles-dir", "."], project, home)

    # Tables the capture cannot take are refused when the project is written, saying what to change.
    with connection.cursor() as cursor:
        cursor.execute('create table shop."Crates" (id int primary key); create table shop.audit (at timestamptz, what text)')
    connection.close()
    for table, said in (("shop.Crates", "cannot capture a table whose name needs quotes: rename it in the source"),
                        ('shop."Crates"', "cannot capture a table whose name needs quotes: rename it in the source"),
                        ("shop.audit", "has no primary key: a mirror needs one to merge on; add one, or leave the table "
                                       "out of --tables")):
        refused = run(["cdc-init", str(tmp_path / "other"), "--postgres", dsn, "--tables", table,
                       "--package-local", str(PROJECT_DIR)], tmp_path, home, expect_success=False)
        assert said in refused, refused
