"""`dbt source freshness` of the raw log on a Databend target: Databend's client hands timestamps over as
text, which dbt's freshness check refused ('Expected a timestamp value ... received value of type
str'), so the command failed with a database error whatever the raw log held. Spark's run is in
tests/test_maintenance.py."""

from __future__ import annotations

import shutil

import pytest

from conftest import FIXTURES
from harness.mirror_project import make_project

pytestmark = pytest.mark.xdist_group("databend_local")
PRODUCTS = {"inventory.products": ["id"]}
FLINK_MYSQL = FIXTURES / "flink" / "debezium-data-schema-exclude.txt"


@pytest.fixture
def databend_project(spark, tmp_path, databend_url):
    return make_project(spark, tmp_path, "databend_local")


def freshness(project, **kwargs):
    result = project.dbt("source", "freshness", "--select", "source:cdc_raw.raw_events", **kwargs)
    (source,) = result.result.results
    return result, source


def test_source_freshness_reads_the_raw_logs_newest_landing_on_databend(databend_project):
    project = databend_project
    shutil.copy(FLINK_MYSQL, project.inbox / "part-1.json")
    project.land(PRODUCTS)
    _, fresh = freshness(project)
    assert str(fresh.status) == "pass", fresh.message
    assert 0 <= fresh.age < 600  # seconds since it landed, both sides read in UTC

    project.execute(f"update {project.raw_schema}.raw_events set landed_at = add_hours(landed_at, -2)")
    result, stale = freshness(project, expect_success=False)
    assert not result.success
    assert str(stale.status) == "error", stale.message  # the check's verdict, not a database error
    assert 7200 <= stale.age < 7800
