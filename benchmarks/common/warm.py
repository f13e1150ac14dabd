"""A warm process for the benchmarks that run dbt again and again (the soak, many_mirrors, consistent_cuts
and status suites), as `cdc-run` does (python_jobs/scheduler/run_loop.py): one SparkSession, dbt
invoked in-process each time.

- session(): the project's Iceberg session (python_jobs/landing/io/) on a warehouse of its own.
- key_index_kept(): each mirror's key index kept between runs, as cdc-run keeps it, or not.
- invoke(): one dbt command through run_loop.invoke_dbt, with the benchmark project's schemas.
- SparkReads: bytes Spark's scans read (completed stages' input bytes, Spark's status store).
- resident(): resident memory of this Python process and of the JVM, now.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from benchmarks.common.measure import _rss_bytes
from benchmarks.common.project import BenchProject
from harness.dbt_project import PROFILES_DIR
from python_jobs.scheduler.dbt_artifacts import JsonArtifacts


def session(warehouse: Path, driver_memory: str = "6g", retained_stages: int | None = None):
    from pyspark.sql import SparkSession
    from python_jobs.landing import io

    os.environ["CDC_MERGE_WAREHOUSE"] = str(warehouse)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName("cdc_merge_warm_bench").master(os.environ.get("CDC_MERGE_SPARK_MASTER", "local[2]"))
    for name, value in io.iceberg_spark_conf(str(warehouse)).items():
        builder = builder.config(name, value)
    if retained_stages:
        builder = builder.config("spark.ui.retainedStages", str(retained_stages))
    spark = builder.config("spark.driver.memory", driver_memory).config("spark.ui.showConsoleProgress", "false").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


# Each project's dbt JSON artifacts, written where they change as in cdc-run (scheduler/dbt_artifacts.py).
_ARTIFACTS: dict[Path, JsonArtifacts] = {}


@contextlib.contextmanager
def key_index_kept(on: bool):
    """Lookups of stored rows answered from each table's key index (as in cdc-run), or read from its files."""
    from python_jobs.apply import key_index

    before = os.environ.get(key_index.KEY_INDEX_MAX_KEYS_ENV)
    os.environ[key_index.KEY_INDEX_MAX_KEYS_ENV] = str(key_index.SERVICE_MAX_KEYS if on else 0)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(key_index.KEY_INDEX_MAX_KEYS_ENV)
        else:
            os.environ[key_index.KEY_INDEX_MAX_KEYS_ENV] = before


def invoke(project: BenchProject, *args: str, threads: int | None = None):
    """One dbt command in this process, as cdc-run runs it; its RunOutcome (python_jobs/scheduler/run_loop.py)."""
    from python_jobs.scheduler import run_loop

    os.environ["CDC_MERGE_SCHEMA"] = project.schema
    os.environ["CDC_MERGE_RAW_SCHEMA"] = project.raw_schema
    extra = ["--threads", str(threads)] if threads else []
    outcome = run_loop.invoke_dbt([*args, *extra, "--project-dir", str(project.dir),
                                   "--profiles-dir", str(PROFILES_DIR), "--quiet"],
                                  _ARTIFACTS.setdefault(project.dir, JsonArtifacts()))
    if not outcome.success:
        raise RuntimeError(f"dbt {' '.join(args)} failed: {outcome.error}")
    return outcome


class SparkReads:
    """Bytes read by Spark's scans (input bytes of completed stages) since the last mark(). Spark's
    status store keeps spark.ui.retainedStages stages (session(retained_stages=...)): read often."""

    def __init__(self, spark):
        self._spark = spark
        self._store = spark.sparkContext._jsc.sc().statusStore()
        self._seen: set[tuple[int, int]] = set()
        self.mark()

    def _new_bytes(self) -> int:
        jvm = self._spark._jvm
        # AppStatusStore.stageList(statuses, details, withSummaries, unsortedQuantiles, taskStatus): all stages, no details.
        no_quantiles = self._spark.sparkContext._gateway.new_array(jvm.double, 0)
        listed = self._store.stageList(None, False, False, no_quantiles, jvm.java.util.ArrayList())
        stages = jvm.scala.collection.JavaConverters.seqAsJavaList(listed)
        total = 0
        for stage in stages:
            key = (stage.stageId(), stage.attemptId())
            if key not in self._seen:
                self._seen.add(key)
                total += stage.inputBytes()
        return total

    def mark(self) -> None:
        self._new_bytes()

    def read(self) -> int:
        """Bytes read since the last mark() or read()."""
        return self._new_bytes()


def resident(jvm_pid: int) -> dict[str, int]:
    return {"python_rss": _rss_bytes(os.getpid()), "jvm_rss": _rss_bytes(jvm_pid)}


def jvm_pid(spark) -> int:
    return int(spark._jvm.java.lang.ProcessHandle.current().pid())


def directory_bytes(path: Path) -> int:
    return sum(file.stat().st_size for file in path.rglob("*") if file.is_file())


def median(values: list[float]) -> float | None:
    ordered = sorted(values)
    if not ordered:
        return None
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def percentile(values: list[float], fraction: float) -> float | None:
    ordered = sorted(values)
    if not ordered:
        return None
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]
