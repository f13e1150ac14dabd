"""One SparkSession (local[2], Iceberg) for the whole run; dbt runs in-process on it."""

from __future__ import annotations

import datetime as dt
import itertools
import time
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlparse

import pytest
import yaml
from dbt_common.tests import enable_test_caching

from python_jobs.cluster import thrift
from python_jobs.landing import io, land
from python_jobs.landing.io.session import with_views
from python_jobs.landing.config import load_config
from python_jobs.landing.summary import LandingSummary

PROJECT_DIR = Path(__file__).resolve().parent.parent
# The CDC fixtures the tests read, copied from upstream projects: tests/fixtures/SOURCES.md.
FIXTURES = PROJECT_DIR / "tests" / "fixtures"
_schema_numbers = itertools.count(1)
MIRROR_MODEL = """
{{{{ config({config}) }}}}

with

events as (

    select * from {{{{ cdc_merge.cdc_events(ref('raw_events')) }}}}

),

final as (

    select
        {columns}
    from events

)

select * from final
"""
# The modules whose tests start servers of their own and run longest go out to the workers first, so
# short tests fill the end of the run instead of one worker finishing a long test alone.
FIRST_MODULES = ("test_cluster.py", "test_starter.py")


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: item.path.name not in FIRST_MODULES)


# dbt's Jinja parses of a source text are kept for the process, as in dbt's own test fixtures
# (dbt.tests.fixtures.project): each test's copy of the project parses the same 900 macros again.
enable_test_caching()
# As in CI anywhere: dbt sends no usage events (each invocation posted several from this process).
os.environ.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
# PySpark hands timestamps to Python in the process's local zone; the tables hold UTC.
os.environ["TZ"] = "UTC"
time.tzset()


@pytest.fixture(scope="session")
def warehouse(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("warehouse")
    os.environ["CDC_MERGE_WAREHOUSE"] = str(path)
    return path


@pytest.fixture(scope="session")
def spark(warehouse):
    session = io.spark_session("cdc_merge_tests", str(warehouse))
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def catalog_settings_kept(request):
    """A test that turns the Iceberg helpers off (CDC_MERGE_ICEBERG_JVM_JAR empty) runs dbt with the
    profile's `type: hadoop` catalog, which dbt-spark sets on this process's session beside the
    catalog-impl of the helpers' catalog with views (io.with_views); Spark then cannot make the
    catalog again in a clone of the session (as CACHE TABLE makes one). A user's process has one or
    the other: here the type goes once such a test ends."""
    yield
    if "spark" in request.fixturenames:
        session = request.getfixturevalue("spark")
        settings = {row["key"] for row in session.sql("set").collect()}
        for impl in [key for key in settings if key.startswith("spark.sql.catalog.") and key.endswith(".catalog-impl")]:
            if impl.removesuffix(".catalog-impl") + ".type" in settings:
                session.conf.unset(impl.removesuffix(".catalog-impl") + ".type")


@pytest.fixture(scope="session")
def databend_url(tmp_path_factory):
    """The local Databend endpoint (python_jobs/devtools/databend_local/) on the embedded engine."""
    from python_jobs.devtools.databend_local import serve

    with serve(tmp_path_factory.mktemp("databend")) as url:
        address = urlparse(url)
        os.environ["CDC_MERGE_DATABEND_HOST"] = address.hostname
        os.environ["CDC_MERGE_DATABEND_PORT"] = str(address.port)
        # format_null_as_str=0: NULL arrives as None, not as the string 'NULL'.
        os.environ["CDC_MERGE_DATABEND_DSN"] = (
            f"databend://root:@{address.hostname}:{address.port}/?sslmode=disable&format_null_as_str=0"
        )
        yield url


def plain_spark_output() -> dict:
    """The `local` target as a plain dbt-spark output (type spark). Its catalog is set as this process's
    session has it (with views, io.with_views): plain dbt-spark would set the profile's `type: hadoop`
    on that session, and a catalog with both a type and a catalog-impl cannot be made by the later
    tests in the process. A user's plain dbt-spark has a process of its own."""
    local = yaml.safe_load((PROJECT_DIR / "profiles" / "profiles.yml").read_text())["cdc_merge"]["outputs"]["local"]
    return {**local, "type": "spark", "server_side_parameters": with_views(local["server_side_parameters"])}


@dataclass
class DbtProject:
    """A copy of this dbt project with its own schemas, and helpers to land and run it.

    target is a profile target: `local` (Spark + Iceberg), `databend_local`, or `cluster` (a
    Thrift server started by cdc-cluster, tests/test_cluster.py). Landing always runs on Spark;
    with databend_local it loads into Databend (sink: databend).
    """

    spark: object
    project_dir: Path
    work_dir: Path
    schema: str
    raw_schema: str
    target: str = "local"

    @property
    def on_databend(self) -> bool:
        return self.target == "databend_local"

    def dbt(self, *args: str, expect_success: bool = True, profiles_dir: Path = PROJECT_DIR / "profiles",
            artifacts: bool = False):
        """dbt in this process. artifacts: write target/manifest.json and run_results.json, which `dbt retry`
        and `--state` read; unasked, writing them twice a run took 0.3-0.4 s of every invocation."""
        from dbt.cli.main import dbtRunner

        os.environ["CDC_MERGE_SCHEMA"] = self.schema
        os.environ["CDC_MERGE_RAW_SCHEMA"] = self.raw_schema
        # Another profiles file brings its own default target.
        target = ["--target", self.target] if profiles_dir == PROJECT_DIR / "profiles" else []
        result = dbtRunner().invoke(
            [*args, "--project-dir", str(self.project_dir), "--profiles-dir", str(profiles_dir), *target,
             *([] if artifacts else ["--no-write-json"])]
        )
        if expect_success and not result.success:
            raise AssertionError(f"dbt {' '.join(args)} failed: {result.exception}")
        return result

    def landing_config(self, tables: dict[str, list[str]], **settings):
        document = {
            "input": str(self.work_dir / "inbox"),
            "checkpoint": str(self.work_dir / "checkpoint"),
            "raw_table": f"{self.raw_schema}.raw_events",
            "quarantine_table": f"{self.raw_schema}.quarantine",
            "tables": {table: {"key": key} for table, key in tables.items()},
            **({"sink": "databend", "databend_stage_dir": str(self.work_dir / "stage")} if self.on_databend else {}),
            **settings,
        }
        path = self.work_dir / "landing.yml"
        path.write_text(yaml.safe_dump(document))
        return load_config(path)

    @property
    def inbox(self) -> Path:
        path = self.work_dir / "inbox"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def land(self, tables: dict[str, list[str]], **settings) -> LandingSummary:
        self.inbox
        return land.run(self.landing_config(tables, **settings))

    def dbt_log(self) -> str:
        """Everything dbt logged in this project so far, statements included."""
        return (self.project_dir / "logs" / "dbt.log").read_text()

    def write_model(self, name: str, config: str, columns: str) -> None:
        """A cdc_merge model under models/mirrors, e.g. config="unique_key='id', source_table='a.b'"."""
        sql = MIRROR_MODEL.format(config=config, columns=columns)
        (self.project_dir / "models" / "mirrors" / f"{name}.sql").write_text(sql)

    def rows(self, relation: str, order_by: str = "1") -> list:
        """Rows with attribute access (row.reason), from either engine."""
        return [SimpleNamespace(**row) for row in self.query(f"select * from {relation} order by {order_by}")]

    @property
    def on_cluster(self) -> bool:
        return self.target == "cluster"

    def query(self, sql: str) -> list[dict]:
        """Rows of a query on the target's engine, as dicts."""
        if self.on_cluster:
            return thrift.rows(sql)
        if not self.on_databend:
            return [row.asDict() for row in self.spark.sql(sql).collect()]
        import databend_driver

        connection = databend_driver.BlockingDatabendClient(os.environ["CDC_MERGE_DATABEND_DSN"]).get_conn()
        try:
            rows = connection.query_iter(sql)
            names = [field.name for field in rows.schema().fields()]
            return [dict(zip(names, map(_naive_utc, row.values()))) for row in rows]
        finally:
            connection.close()

    def execute(self, sql: str) -> None:
        """A statement that returns no rows (DML, DDL) on the target's engine."""
        if self.on_cluster:
            thrift.rows(sql)
            return
        if not self.on_databend:
            self.spark.sql(sql)
            return
        import databend_driver

        connection = databend_driver.BlockingDatabendClient(os.environ["CDC_MERGE_DATABEND_DSN"]).get_conn()
        try:
            connection.exec(sql)
        finally:
            connection.close()

    def expire_history(self, relation: str) -> None:
        """Forget every snapshot of a table but its current one."""
        if not self.on_databend:
            self.spark.sql(f"call system.expire_snapshots(table => '{relation}', "
                           "older_than => timestamp '2999-01-01 00:00:00', retain_last => 1)")
            return
        import databend_driver

        current = self.table_version(relation)
        connection = databend_driver.BlockingDatabendClient(os.environ["CDC_MERGE_DATABEND_DSN"]).get_conn()
        try:
            connection.exec("set data_retention_time_in_days = 0")
            connection.exec(f"optimize table {relation} purge before (snapshot => '{current}')")
        finally:
            connection.close()

    def history_length(self, relation: str) -> int:
        """How many snapshots of a table can still be read."""
        if not self.on_databend:
            return self.query(f"select count(*) as snapshots from {relation}.snapshots")[0]["snapshots"]
        schema, name = relation.split(".")
        return self.query(f"select count(*) as snapshots from fuse_snapshot('{schema}', '{name}')")[0]["snapshots"]

    def table_version(self, relation: str) -> str:
        """The current snapshot of a table: it changes with every commit that writes it."""
        if not self.on_databend:
            return self.query(f"select cast(snapshot_id as string) as version from {relation}.refs where name = 'main'")[0]["version"]
        schema, name = relation.split(".")
        snapshots = f"fuse_snapshot('{schema}', '{name}')"
        return self.query(
            f"select snapshot_id as version from {snapshots} where snapshot_id not in "
            f"(select previous_snapshot_id from {snapshots} where previous_snapshot_id is not null)"
        )[0]["version"]


def _naive_utc(value):
    """Timestamps as Spark hands them over here (naive, UTC), so rows compare across engines."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value


@pytest.fixture
def dbt_project(spark, tmp_path) -> DbtProject:
    """A fresh copy of the project in tmp_path, with the raw tables created."""
    return make_project(spark, tmp_path, "local")


@pytest.fixture(params=["local", "databend_local"])
def conformance_project(request, spark, tmp_path) -> DbtProject:
    """The same project on each engine: conformance tests must pass on both."""
    if request.param == "databend_local":
        request.getfixturevalue("databend_url")
    return make_project(spark, tmp_path, request.param)


def make_project(spark, tmp_path: Path, target: str) -> DbtProject:
    project_dir = tmp_path / "project"
    project_dir.mkdir()
    for name in ("dbt_project.yml", "models", "macros", "tests"):
        source = PROJECT_DIR / name
        if source.is_dir():
            skipped = ("test_*.py", "conftest.py", "__pycache__") if name == "tests" else ("__pycache__",)
            shutil.copytree(source, project_dir / name, ignore=shutil.ignore_patterns(*skipped))
        else:
            shutil.copy(source, project_dir / name)
    # The landing model reads the landing config that DbtProject.landing_config writes.
    project_yml = project_dir / "dbt_project.yml"
    landing = repr(str(tmp_path / "landing.yml"))  # for either target: landing_config() writes its sink
    project_yml.write_text(project_yml.read_text().replace("'landing.yml'", landing).replace("'landing-databend.yml'", landing))
    number = next(_schema_numbers)
    project = DbtProject(spark, project_dir, tmp_path, f"mirror_{number}", f"raw_{number}", target)
    project.dbt("run-operation", "create_raw_tables")
    return project
