"""One SparkSession (local[2], Iceberg) for the whole run; dbt runs in-process on it."""

from __future__ import annotations

import time
import os
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml
from dbt_common.tests import enable_test_caching

from harness.dbt_project import PROJECT_DIR
from harness.mirror_project import DbtProject, make_project
from python_jobs.landing import io
from python_jobs.landing.io.session import with_views

# The CDC fixtures the tests read, copied from upstream projects: tests/fixtures/SOURCES.md.
FIXTURES = PROJECT_DIR / "tests" / "fixtures"
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
# Each Spark JVM of the suite (a worker's session, a test's dbt or cdc-run process, the cluster's
# driver) gets 2 GB of heap instead of the 6 GB a user's large batches need: the parallel collector
# grows a heap to its limit, and two workers' 6 GB JVMs beside a test's own processes, their
# embedded Databend and the database servers outgrew the machine's 24 GiB (no swap), so the kernel
# killed a worker's JVM half way through the suite. The tests' batches are small.
os.environ.setdefault("CDC_MERGE_DRIVER_MEMORY", "2g")
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


@pytest.fixture
def dbt_project(spark, tmp_path) -> DbtProject:
    """A fresh copy of the project in tmp_path, with the raw tables created."""
    return make_project(spark, tmp_path, "local")


@pytest.fixture
def history_chain_in_one_statement(monkeypatch) -> list:
    """cdc_history's chain on Spark as one statement, as a session that keeps no computed relation
    computes it (a Thrift server's), where this process computes it in steps (python_jobs/apply/history_stages.py):
    the arguments of each batch's question, as it was asked."""
    from python_jobs.apply import history_stages

    asked = []

    def one_statement(*arguments):
        asked.append(arguments)
        return []

    monkeypatch.setattr(history_stages, "chain_stages", one_statement)
    return asked


@pytest.fixture(params=["local", "databend_local"])
def conformance_project(request, spark, tmp_path) -> DbtProject:
    """The same project on each engine: conformance tests must pass on both."""
    if request.param == "databend_local":
        request.getfixturevalue("databend_url")
    return make_project(spark, tmp_path, request.param)
