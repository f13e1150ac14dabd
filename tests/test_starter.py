"""A project of its own: cdc-init writes it, `dbt deps` installs this repository as a package with
`local:`, the real capture and landing feed it, `dbt build` applies and tests it; as a new user types
the commands, in processes of their own, reading nothing outside the new folder and this clone."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml

from python_jobs.scaffold import SourceColumn, SourceTable
from harness.mariadb_server import create_mariadb_capture_user
from harness.postgres_server import create_capture_user
from test_capture_faults import mariadb, postgres  # noqa: F401 - fixtures
from python_jobs.starter import init

PROJECT_DIR = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SOURCE_SCHEMA = """
create schema shop;
create table shop.customers (id int primary key, name text, tier smallint);
create table shop.order_lines (order_id int, line_no int, sku text, qty int, price numeric(10,2),
    primary key (order_id, line_no));
insert into shop.customers values (1, 'Ada', 1), (2, 'Grace', 2), (3, 'Edsger', 1);
insert into shop.order_lines values (10, 1, 'a', 2, 1.50), (10, 2, 'b', 1, 20.00), (11, 1, 'c', 5, 0.99);
"""
MIRRORED_ROWS = """
select 'shop.customers' as source, to_json(named_struct('id', id, 'name', name, 'tier', tier, 'email', email)) as image
from mirror.shop_customers
union all
select 'shop.order_lines', to_json(named_struct('order_id', order_id, 'line_no', line_no, 'sku', sku, 'qty', qty,
    'price', cast(price as string)))
from mirror.shop_order_lines
union all
select 'counted', to_json(named_struct('source_table', source_table, 'mirrored_rows', mirrored_rows))
from {{ ref('mirror_row_counts') }}
"""
CHANGES = """
update shop.customers set tier = 3, name = 'Ada L.' where id = 1;
delete from shop.customers where id = 2;
insert into shop.customers values (4, 'Barbara', 2);
update shop.order_lines set qty = 7 where order_id = 10 and line_no = 2;
delete from shop.order_lines where order_id = 11;
insert into shop.order_lines values (12, 1, 'd', 1, 3.25);
"""


def run(command: list[str], cwd: Path, home: Path, expect_success: bool = True, **environment: str) -> str:
    """A command as a user types it: its own process, a clean environment, this venv's bin on PATH;
    what it printed (its standard output, then its standard error)."""
    environment = {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8", "TZ": "UTC",
                   "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", **environment}
    if "JAVA_HOME" in os.environ:
        environment["JAVA_HOME"] = os.environ["JAVA_HOME"]
    result = subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=900)
    output = result.stdout + result.stderr
    assert (result.returncode == 0) == expect_success, f"{' '.join(command)} exited {result.returncode}:\n{output[-8000:]}"
    return output


def source_rows(server) -> list[tuple]:
    connection = server.connect()
    with connection.cursor() as cursor:
        cursor.execute("select 'shop.customers', id, name, tier, email from shop.customers")
        rows = [tuple(row) for row in cursor.fetchall()]
        cursor.execute("select 'shop.order_lines', order_id, line_no, sku, qty, price::text from shop.order_lines")
        rows += [tuple(row) for row in cursor.fetchall()]
    connection.close()
    return rows


def test_a_new_project_mirrors_two_postgres_tables_with_cdc_merge_as_a_package(postgres, databend_url, tmp_path):
    connection = postgres.connect()
    with connection.cursor() as cursor:
        cursor.execute(SOURCE_SCHEMA)
    connection.commit()
    dsn = create_capture_user(postgres, ["shop"])  # REPLICATION and SELECT only, as the docs prescribe
    project, home = tmp_path / "my_shop", tmp_path / "home"
    home.mkdir()
    tables = "shop.customers,shop.order_lines"

    run(["cdc-init", str(project), "--postgres", dsn, "--tables", tables, "--package-local", str(PROJECT_DIR)], tmp_path, home)
    assert yaml.safe_load((project / "packages.yml").read_text()) == {"packages": [{"local": str(PROJECT_DIR)}]}
    run(["dbt", "deps", "--profiles-dir", "."], project, home)
    capture = ["cdc-capture-postgres", "--dsn", dsn, "--tables", tables, "--slot", "my_shop",
               "--out", "data/inbox", "--state", "data/capture-state.json"]
    run(capture, project, home)  # the snapshot
    # From the folder above, as a scheduler may run it: the project's paths are its own, not the current folder's.
    first_build = run(["dbt", "build", "--project-dir", "my_shop", "--profiles-dir", "my_shop"], tmp_path, home)
    assert "Traceback" not in first_build and "Exception" not in first_build, first_build[-6000:]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["home", "my_shop"]
    with connection.cursor() as cursor:
        cursor.execute(CHANGES)
        # A column added at the source, with a default every existing row takes; then to the model.
        cursor.execute("alter table shop.customers add column email text default 'none'")
        cursor.execute("update shop.customers set email = 'ada@example.com' where id = 1")
    connection.commit()
    connection.close()
    run(capture, project, home)  # the changes
    run(["cdc-scaffold", "--postgres", dsn, "--tables", "shop.customers", "--out", "models/mirrors", "--overwrite"],
        project, home)
    run(["dbt", "build", "--profiles-dir", "."], project, home)

    results = json.loads((project / "target" / "run_results.json").read_text())["results"]
    ran = {result["unique_id"]: result["status"] for result in results}
    assert {uid for uid in ran if uid.startswith("model.")} == {
        "model.my_shop.raw_events", "model.my_shop.shop_customers", "model.my_shop.shop_order_lines",
        "model.my_shop.mirror_row_counts"}
    assert all(status in ("success", "pass") for status in ran.values()), ran
    assert sum(uid.startswith("test.my_shop.") and "cdc_mirror_matches_log" in uid for uid in ran) == 2

    # The user's own check against the source (the project's var cdc_merge_source, which cdc-init wrote).
    assert "2 mirrors equal PostgreSQL" in run(["cdc-verify", "--profiles-dir", "."], project, home)
    # Read back as a user would, with dbt show from another folder.
    shown = run(["dbt", "--quiet", "show", "--output", "json", "--limit", "1000", "--inline", MIRRORED_ROWS,
                 "--project-dir", str(project), "--profiles-dir", str(project)], home, home)
    shown = json.JSONDecoder().raw_decode(shown)[0]  # dbt's JSON, before what the JVM printed to stderr
    mirrored = sorted((row["source"], *json.loads(row["image"]).values()) for row in shown["show"])
    # A view downstream of the mirrors, dbt's default materialization, on the embedded catalog too.
    assert [row[1:] for row in mirrored if row[0] == "counted"] == [("shop.customers", 3), ("shop.order_lines", 3)]
    assert [row for row in mirrored if row[0] != "counted"] == sorted(source_rows(postgres))
    # Each table's metadata names its folder absolutely: any process, in any folder, reads the table.
    (metadata,) = sorted((project / "warehouse" / "mirror" / "shop_customers" / "metadata").glob("*.metadata.json"))[-1:]
    assert json.loads(metadata.read_text())["location"] == str(project / "warehouse" / "mirror" / "shop_customers")

    # A mirror of a table the landing does not capture fails before any SQL, naming the landing config.
    orders = project / "models" / "mirrors" / "shop_orders.sql"
    orders.write_text((project / "models" / "mirrors" / "shop_customers.sql").read_text().replace("shop.customers", "shop.orders"))
    refused = run(["dbt", "run", "--select", "shop_orders", "--profiles-dir", "."], project, home, expect_success=False)
    assert f"source_table shop.orders is not captured by the landing config {project / 'landing.yml'}" in refused
    orders.unlink()

    # Databend as the docs say: the same command with --target databend lands (a checkpoint of its own),
    # applies and runs every test, and the mirrors equal the source there too.
    address = urlparse(databend_url)
    databend = {"CDC_MERGE_DATABEND_HOST": address.hostname, "CDC_MERGE_DATABEND_PORT": str(address.port)}
    built = run(["dbt", "build", "--target", "databend", "--profiles-dir", "."], project, home, **databend)
    # Neither a dependency's deprecation (databend-sqlalchemy's pkg_resources) nor Spark's warnings reach the user.
    assert "pkg_resources" not in built and " WARN " not in built, built[-3000:]
    on_databend = {result["unique_id"]: result["status"]
                   for result in json.loads((project / "target" / "run_results.json").read_text())["results"]}
    assert on_databend == ran
    assert "2 mirrors equal PostgreSQL" in run(["cdc-verify", "--target", "databend", "--profiles-dir", "."],
                                                  project, home, **databend)

    # Nothing outside the new folder and this clone: every file dbt parsed is under one of them.
    manifest = json.loads((project / "target" / "manifest.json").read_text())
    for node in [*manifest["nodes"].values(), *manifest["macros"].values()]:
        if node["package_name"] in ("my_shop", "cdc_merge"):
            path = (project / node["original_file_path"]) if node["package_name"] == "my_shop" else (
                project / "dbt_packages" / "cdc_merge" / node["original_file_path"])
            assert path.resolve().is_relative_to(project) or path.resolve().is_relative_to(PROJECT_DIR), path


def test_a_new_project_mirrors_a_mariadb_table_as_the_docs_say(mariadb, tmp_path):
    """docs/your_project.md's MySQL/MariaDB steps as written: the user with REPLICATION SLAVE,
    REPLICATION CLIENT and SELECT only, cdc-init --mysql, the capture, dbt build, cdc-verify."""
    connection = mariadb.connect(autocommit=True)
    with connection.cursor() as cursor:
        cursor.execute("create database shop character set utf8mb4")
        cursor.execute("create table shop.customers (id int primary key, name varchar(50), score float, "
                       "since date, tags set('a','b'))")
        cursor.execute("insert into shop.customers values (1, 'Ada', 1.1, '2026-01-02', ''), (2, 'Grace', 2.5, null, 'a,b')")
    user, password = create_mariadb_capture_user(mariadb, ["shop"])
    project, home = tmp_path / "my_shop", tmp_path / "home"
    home.mkdir()
    source, secret = f"{user}@127.0.0.1:{mariadb.port}", {"MYSQL_PWD": password}
    run(["cdc-init", str(project), "--mysql", source, "--tables", "shop.customers", "--package-local", str(PROJECT_DIR)],
        tmp_path, home, **secret)
    run(["dbt", "deps", "--profiles-dir", "."], project, home)
    capture = ["cdc-capture-mysql", "--host", "127.0.0.1", "--port", str(mariadb.port), "--user", user,
               "--tables", "shop.customers", "--out", "data/inbox", "--state", "data/capture-state.json"]
    run(capture, project, home, **secret)  # the snapshot, without a lock
    with connection.cursor() as cursor:
        cursor.execute("update shop.customers set score = 3.25, tags = '' where id = 2")
        cursor.execute("insert into shop.customers values (3, 'Edsger', 0.1, '2026-03-04', 'b')")
    connection.close()
    run(capture, project, home, **secret)  # the binlog since
    build = run(["dbt", "build", "--profiles-dir", "."], project, home)
    assert "Traceback" not in build and "Exception" not in build, build[-6000:]
    assert "1 mirrors equal " in run(["cdc-verify", "--profiles-dir", "."], project, home, **secret)


def test_the_tests_read_their_fixtures_inside_the_clone():
    """The fixtures live in the repository (tests/fixtures/SOURCES.md, with their provenance), and
    every file a test opens by name under them is there."""
    from conftest import FIXTURES

    assert FIXTURES.resolve().is_relative_to(PROJECT_DIR)
    assert (FIXTURES / "SOURCES.md").is_file()
    named = set()
    for path in (PROJECT_DIR / "tests").glob("*.py"):
        named |= set(re.findall(r'FIXTURES / "([^"]+)" / "([^"]+)"', path.read_text()))
    assert named, "no test names a fixture file: this check would pass whatever the tests read"
    assert [f"{folder}/{name}" for folder, name in sorted(named) if not (FIXTURES / folder / name).exists()] == []


def test_the_starter_writes_a_project_in_the_demo_projects_shape(tmp_path):
    table = SourceTable("shop", "items", (SourceColumn("id", "bigint", 64, 0), SourceColumn("name", "text", None, None)),
                        ("id",))
    files = init.project_files("my_shop", "local: '/src/cdc_merge'", [table], {"postgres": "host=db dbname=shop user=cdc"})
    assert (files["models/landing/raw_events.py"]
            == (PROJECT_DIR / "models" / "landing" / "raw_events.py").read_text())
    assert yaml.safe_load(files["landing.yml"])["tables"] == {"shop.items": {"key": ["id"]}}
    profile = yaml.safe_load(files["profiles.yml"])["my_shop"]["outputs"]
    ours = yaml.safe_load((PROJECT_DIR / "profiles" / "profiles.yml").read_text())["cdc_merge"]["outputs"]
    # The starter's targets are this project's; neither names a path of one machine (the adapter finds the jars).
    assert profile["local"]["server_side_parameters"] == ours["local"]["server_side_parameters"]
    assert profile["databend"] == ours["databend_local"]
    assert yaml.safe_load(files["dbt_project.yml"])["vars"] == {"cdc_merge_source": {"postgres": "host=db dbname=shop user=cdc"}}
    assert "profile = my_shop" in files[".sqlfluff"] and "cdc_raw" in files["models/landing/_landing__sources.yml"]
    assert {path for path in files if path.startswith("models/mirrors/")} == {
        "models/mirrors/shop_items.sql", "models/mirrors/_mirrors__models.yml"}

    init.write_project(tmp_path / "p", files)
    with pytest.raises(init.ScaffoldError, match="not empty"):
        init.write_project(tmp_path / "p", files)
    assert init.main([str(tmp_path / "cdc_merge"), "--postgres", "x", "--tables", "a.b"]) == 2
    assert init.main([str(tmp_path / "q"), "--postgres", "x", "--tables", "a.b", "--package-local",
                      str(tmp_path)]) == 2


def test_the_wheel_carries_the_commands_the_adapters_the_jars_and_the_starter(tmp_path):
    """pip install of the built wheel is all the Python side needs: nothing is read from this checkout."""
    source = tmp_path / "source"
    source.mkdir()
    shutil.copy(PROJECT_DIR / "pyproject.toml", source)
    for name in ("python_jobs", "adapter"):
        shutil.copytree(PROJECT_DIR / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "-w", str(tmp_path / "dist"), str(source)], check=True, capture_output=True)
    (wheel,) = (tmp_path / "dist").glob("cdc_merge-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("python_jobs/jars/cdc-merge-parsers.jar", "python_jobs/jars/cdc-merge-iceberg.jar",
                   "python_jobs/jars/cdc-merge-local-fs.jar",
                   "dbt/include/cdc_spark/dbt_project.yml", "dbt/include/cdc_databend/dbt_project.yml",
                   "dbt/include/cdc_databend/macros/snapshot.sql",
                   "python_jobs/starter/templates/profiles.yml", "python_jobs/landing/land.py",
                   "python_jobs/devtools/databend_local/__main__.py"):
        assert needed in names, needed
    # Every package of the checkout: the adapters import python_jobs.status, and dbt failed to load
    # them (No module named 'python_jobs.status') when pyproject.toml's list left it out.
    for package in sorted(PROJECT_DIR.glob("python_jobs/**/__init__.py")):
        assert package.relative_to(PROJECT_DIR).as_posix() in names, package
    for package in sorted((PROJECT_DIR / "adapter").glob("dbt/**/__init__.py")):
        assert package.relative_to(PROJECT_DIR / "adapter").as_posix() in names, package
    (entry_points,) = [name for name in names if name.endswith(".dist-info/entry_points.txt")]
    commands = zipfile.ZipFile(wheel).read(entry_points).decode()
    for command in ("cdc-init", "cdc-land", "cdc-run", "cdc-scaffold", "cdc-capture-postgres", "cdc-capture-mysql",
                    "cdc-cluster", "cdc-generate-demo"):
        assert f"{command} =" in commands, command

    installed = tmp_path / "installed"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(installed),
                    str(wheel)], check=True, capture_output=True)
    # Without site-packages (-S), so that the checkout's editable install cannot answer instead.
    script = ("import sys; sys.path.insert(0, sys.argv[1]); import python_jobs; from python_jobs.starter import init;"
              "assert python_jobs.__file__.startswith(sys.argv[1]), python_jobs.__file__;"
              "print(len(init.project_files('my_shop', \"local: '/x'\", [])))")
    result = subprocess.run([sys.executable, "-S", "-c", script, str(installed)], cwd=tmp_path,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) == len(init.PROJECT_FILES) + 1  # and the mirrors' YAML
