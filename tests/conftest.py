"""One SparkSession (local[2], Iceberg) for the whole run; dbt runs in-process on it."""

from __future__ import annotations

import itertools
import time
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from python_jobs import io, land
from python_jobs.config import load_config

PROJECT_DIR = Path(__file__).resolve().parent.parent
FIXTURES = PROJECT_DIR.parent / "shared" / "fixtures"
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


@dataclass
class DbtProject:
    """A copy of this dbt project with its own schemas, and helpers to land and run it."""

    spark: object
    project_dir: Path
    work_dir: Path
    schema: str
    raw_schema: str

    def dbt(self, *args: str, expect_success: bool = True, profiles_dir: Path = PROJECT_DIR / "profiles"):
        from dbt.cli.main import dbtRunner

        os.environ["CDC_MERGE_SCHEMA"] = self.schema
        os.environ["CDC_MERGE_RAW_SCHEMA"] = self.raw_schema
        result = dbtRunner().invoke(
            [*args, "--project-dir", str(self.project_dir), "--profiles-dir", str(profiles_dir)]
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

    def land(self, tables: dict[str, list[str]], **settings) -> land.LandingSummary:
        self.inbox
        return land.run(self.landing_config(tables, **settings))

    def write_model(self, name: str, config: str, columns: str) -> None:
        """A cdc_merge model under models/mirrors, e.g. config="unique_key='id', source_table='a.b'"."""
        sql = MIRROR_MODEL.format(config=config, columns=columns)
        (self.project_dir / "models" / "mirrors" / f"{name}.sql").write_text(sql)

    def rows(self, relation: str, order_by: str = "1") -> list:
        return self.spark.sql(f"select * from {relation} order by {order_by}").collect()


@pytest.fixture
def dbt_project(spark, tmp_path) -> DbtProject:
    """A fresh copy of the project in tmp_path, with the raw tables created."""
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
    project_yml.write_text(project_yml.read_text().replace("'landing.yml'", repr(str(tmp_path / "landing.yml"))))
    number = next(_schema_numbers)
    project = DbtProject(spark, project_dir, tmp_path, f"mirror_{number}", f"raw_{number}")
    project.dbt("run-operation", "create_raw_tables")
    return project
