"""A throwaway copy of this dbt project with schemas of its own, and helpers to land, run and query it.

The tests (tests/conftest.py: the dbt_project fixture) and benchmarks/verify/verify.py make theirs
with make_project; the copy itself comes from harness/dbt_project.py.
"""

from __future__ import annotations

import datetime as dt
import itertools
import os
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import yaml

from harness.dbt_project import PROFILES_DIR, copy_project, run_dbt
from python_jobs.cluster import thrift
from python_jobs.landing import land
from python_jobs.landing.config import load_config
from python_jobs.landing.summary import LandingSummary

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

    def dbt(self, *args: str, expect_success: bool = True, profiles_dir: Path = PROFILES_DIR,
            artifacts: bool = False):
        """dbt in this process (harness/dbt_project.py); artifacts: write what `dbt retry` and `--state` read."""
        # Another profiles file brings its own default target.
        target = self.target if profiles_dir == PROFILES_DIR else None
        result = run_dbt(self.project_dir, *args, schema=self.schema, raw_schema=self.raw_schema, target=target,
                         profiles_dir=profiles_dir, artifacts=artifacts)
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


# Each copy's schemas are new in this process's warehouse.
_schema_numbers = itertools.count(1)


def make_project(spark, tmp_path: Path, target: str) -> DbtProject:
    """A copy in tmp_path/project on target (schemas mirror_<n>, raw_<n>, numbered in this process), with
    the raw tables created; spark: the session dbt-spark runs on (None for the cluster target)."""
    # For either target: DbtProject.landing_config writes its sink.
    project_dir = copy_project(tmp_path / "project", tmp_path / "landing.yml")
    number = next(_schema_numbers)
    project = DbtProject(spark, project_dir, tmp_path, f"mirror_{number}", f"raw_{number}", target)
    project.dbt("run-operation", "create_raw_tables")
    return project
