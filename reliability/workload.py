"""A throwaway copy of the project that the reliability suite runs, kills and checks.

It copies the landing model and the shop mirrors into a work folder with its own warehouse,
inbox and checkpoint; runs `dbt run` or `cdc-run` as a process of its own (its own process
group, so a kill -9 reaches its JVM too); delivers the demo generator's waves of Debezium files;
and compares every mirror with the oracle, the generator's replay of the delivered events in
source order.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from harness.dbt_project import PROFILES_DIR, PROJECT_DIR, copy_project
from python_jobs.demo import generate
from python_jobs.demo.shop_source import KEYS
from python_jobs.landing.io import iceberg_jar

BIN = Path(sys.executable).parent
MIRRORS = {"shop.customers": "shop_customers", "shop.orders": "shop_orders", "shop.order_lines": "shop_order_lines"}
LANDING_AND_MIRRORS = ["--select", "raw_events", *MIRRORS.values()]
# With --vars '{reliability_maintain: true}' this mirror is maintained (any small file crosses
# maintenance_max_files), so the `maintenance` crash point is reached; other runs skip that work.
MAINTAINED_MIRROR = "shop_orders"
MAINTAIN = ["--vars", "{reliability_maintain: true}"]


@dataclass
class Outcome:
    """One process: how it ended and what it printed."""

    returncode: int | None
    seconds: float
    output: str
    killed: bool = False


@dataclass
class Comparison:
    """A mirror against the oracle: rows lost, duplicated, wrong (stale values, or keys that should not exist)."""

    lost: int = 0
    duplicated: int = 0
    wrong: int = 0
    details: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.lost or self.duplicated or self.wrong)


class Workload:
    def __init__(self, work_dir: Path, seed: int = 27, events_per_wave: int = 400, waves: int = 80,
                 warehouse: Path | None = None, schema: str = "mirror", raw_schema: str = "cdc_raw",
                 history: bool = False) -> None:
        """warehouse: another than the work folder's own, e.g. a test session's, so that run_here can
        rerun in that session; schema, raw_schema: the mirrors' and the raw table's; history: the
        project's history models too (run only when selected)."""
        self.history = history
        self.work_dir = work_dir
        self.project_dir = work_dir / "project"
        self.warehouse = warehouse or work_dir / "warehouse"
        self.schema, self.raw_schema = schema, raw_schema
        self.inbox = work_dir / "inbox"
        _, self.waves = generate.build_waves(seed=seed, events=events_per_wave * waves, waves=waves, snapshot_rows=30)
        self.delivered_waves = 0
        self._spark = None
        self._own_session = False
        # The mirrors are read through a catalog of their own: a test's session has another warehouse.
        self.catalog = "reliability_" + hashlib.sha1(str(self.warehouse).encode()).hexdigest()[:10]
        self._copy_project()

    def _copy_project(self) -> None:
        shutil.rmtree(self.work_dir, ignore_errors=True)
        copy_project(self.project_dir, self.work_dir / "landing.yml", mirrors=MIRRORS.values(), history=self.history,
                     data_tests=False)
        project_yml = self.project_dir / "dbt_project.yml"
        project = yaml.safe_load(project_yml.read_text())
        project["models"]["cdc_merge"]["mirrors"][MAINTAINED_MIRROR] = {
            "+maintenance_max_files": "{{ (1 if var('reliability_maintain', false) else 100) | int }}"
        }
        project_yml.write_text(yaml.safe_dump(project, sort_keys=False))
        landing = yaml.safe_load((PROJECT_DIR / "landing.yml").read_text())
        landing.update(input=str(self.inbox), checkpoint=str(self.work_dir / "checkpoint"), max_files_per_batch=2,
                       raw_table=f"{self.raw_schema}.raw_events", quarantine_table=f"{self.raw_schema}.quarantine")
        landing["tables"] = {table: {"key": list(KEYS[table])} for table in MIRRORS}
        (self.work_dir / "landing.yml").write_text(yaml.safe_dump(landing))
        self.inbox.mkdir()

    def env(self, crash_at: str | None = None) -> dict[str, str]:
        env = {
            **os.environ,
            "CDC_MERGE_WAREHOUSE": str(self.warehouse),
            "CDC_MERGE_SCHEMA": self.schema,
            "CDC_MERGE_RAW_SCHEMA": self.raw_schema,
            "CDC_MERGE_DRIVER_MEMORY": os.environ.get("CDC_MERGE_DRIVER_MEMORY", "2g"),
            "DBT_PROFILES_DIR": str(PROFILES_DIR),
            # The profile's default jar path is relative to the project this copies.
            "CDC_MERGE_ICEBERG_JAR": iceberg_jar(),
            "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
            "TZ": "UTC",
        }
        env.pop("CDC_MERGE_CRASH_AT", None)
        if crash_at:
            env["CDC_MERGE_CRASH_AT"] = crash_at
        return env

    def command(self, driver: str, dbt_args: list[str]) -> list[str]:
        dbt = [*dbt_args, "--project-dir", str(self.project_dir)]
        if driver == "cdc-run":
            return [str(BIN / "cdc-run"), "--every", "0", "--runs", "1", "--", *dbt]
        return [str(BIN / "dbt"), *dbt]

    def start(self, driver: str, dbt_args: list[str], crash_at: str | None = None) -> subprocess.Popen:
        return subprocess.Popen(
            self.command(driver, dbt_args), cwd=self.project_dir, env=self.env(crash_at), start_new_session=True,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )

    def run(self, driver: str, dbt_args: list[str], crash_at: str | None = None, kill_after: float | None = None,
            timeout: float = 900) -> Outcome:
        """Run to its end, or kill -9 its process group after kill_after seconds."""
        started = time.monotonic()
        process = self.start(driver, dbt_args, crash_at)
        killed = False
        try:
            output, _ = process.communicate(timeout=kill_after if kill_after is not None else timeout)
        except subprocess.TimeoutExpired:
            killed = kill_group(process)
            output, _ = process.communicate()
        _kill_stragglers(process)
        return Outcome(process.returncode, time.monotonic() - started, output, killed)

    def run_here(self, dbt_args: list[str]) -> Outcome:
        """dbt in this process, on this process's SparkSession (as cdc-run runs it): a rerun without
        a JVM to start. Only where this process's session is this warehouse's (its own, or a test
        session's given as warehouse). The process's environment is put back after."""
        from python_jobs.scheduler.run_loop import invoke_dbt

        self.spark()
        saved = dict(os.environ)
        os.environ.update(self.env())
        try:
            outcome = invoke_dbt([*dbt_args, "--project-dir", str(self.project_dir)])
        finally:
            os.environ.clear()
            os.environ.update(saved)
        return Outcome(0 if outcome.success else 1, outcome.seconds, outcome.error or "")

    def deliver(self, waves: int = 1) -> None:
        for wave in self.waves[self.delivered_waves : self.delivered_waves + waves]:
            generate.write_wave(wave, self.inbox)
        self.delivered_waves = min(len(self.waves), self.delivered_waves + waves)

    def spark(self):
        """A SparkSession (this process's, or a new one) with this warehouse as catalog self.catalog."""
        if self._spark is None:
            from pyspark.sql import SparkSession

            from python_jobs.landing import io

            self._own_session = SparkSession.getActiveSession() is None
            memory = os.environ.get("CDC_MERGE_DRIVER_MEMORY")
            if self._own_session:  # the suite's own JVM: its tables are small
                os.environ.setdefault("CDC_MERGE_DRIVER_MEMORY", "2g")
            try:
                self._spark = io.spark_session("cdc_merge_reliability", str(self.warehouse))
            finally:  # the setting is for this session only, not for what runs later in the process
                if memory is None:
                    os.environ.pop("CDC_MERGE_DRIVER_MEMORY", None)
            for name, value in {"": "org.apache.iceberg.spark.SparkCatalog", ".type": "hadoop",
                                ".warehouse": str(self.warehouse), ".cache-enabled": "false"}.items():
                self._spark.conf.set(f"spark.sql.catalog.{self.catalog}{name}", value)
        return self._spark

    def table(self, name: str) -> str:
        return f"{self.catalog}.{name}"

    def compare(self) -> dict[str, Comparison]:
        """Every mirror against the oracle of every delivered event."""
        expected = generate.replay(e for wave in self.waves[: self.delivered_waves] for e in wave.delivered)
        spark = self.spark()
        result = {}
        for table, model in MIRRORS.items():
            comparison = Comparison()
            keys = list(KEYS[table])
            try:
                rows = spark.sql(f"select * from {self.table(f'{self.schema}.{model}')}").collect()
            except Exception as error:  # a mirror that a rerun did not bring back is all lost
                rows = []
                comparison.details.append(f"{model}: cannot read: {str(error).splitlines()[0]}")
            actual: dict[tuple, dict] = {}
            for row in rows:
                key = tuple(row[c] for c in keys)
                values = {k: v for k, v in row.asDict().items() if not k.startswith("_cdc_")}
                if key in actual:
                    comparison.duplicated += 1
                actual[key] = values
            want = expected[table]
            comparison.lost = len(want.keys() - actual.keys())
            comparison.wrong = len(actual.keys() - want.keys()) + sum(
                1 for key in want.keys() & actual.keys() if want[key] != actual[key]
            )
            if not comparison.ok:
                comparison.details.append(
                    f"{model}: {comparison.lost} lost, {comparison.duplicated} duplicated, {comparison.wrong} wrong"
                )
            result[model] = comparison
        return result

    def offsets(self) -> list[dict]:
        return [row.asDict() for row in self.spark().sql(f"select * from {self.table(f'{self.schema}.cdc_merge_offsets')}").collect()]

    def close(self) -> None:
        if self._spark is not None and self._own_session:
            self._spark.stop()
        self._spark = None


def kill_group(process: subprocess.Popen) -> bool:
    """kill -9 the process and everything in its group (its JVM, Python workers); True if it was still running."""
    if process.poll() is not None:
        return False
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    process.wait()
    return True


def _kill_stragglers(process: subprocess.Popen) -> None:
    """A process killed at a crash point may leave its group's Python workers for a moment."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def to_json(value) -> str:
    return json.dumps(value, indent=2, sort_keys=True, default=str)
