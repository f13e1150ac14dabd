"""The landing job's Spark session with the Iceberg catalog (profiles/profiles.yml sets the same),
session settings held for a block of work, and rows of the driver as a local relation."""

from __future__ import annotations

import contextlib
import glob
import os
import re
from pathlib import Path
import shutil
import subprocess
import sys
from typing import Iterator, Mapping, Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from python_jobs.landing.io.errors import LandingError
from python_jobs.landing.io.py4j_lookups import keep_jvm_lookups

CATALOG = "lake"
ICEBERG_JAR_NAME = "iceberg-spark-runtime-3.5_2.12-1.10.2.jar"
ICEBERG_MAVEN_COORDINATES = "org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.2"


def require_java() -> None:
    """Spark 3.5 needs Java 17+ here; say so before the JVM fails obscurely."""
    java_home = os.environ.get("JAVA_HOME")
    java = shutil.which("java", path=os.path.join(java_home, "bin")) if java_home else shutil.which("java")
    if java is None:
        raise LandingError("Java 17 or newer is required (no 'java' on PATH or in JAVA_HOME)")
    version = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    major = version.split('"')[1].split(".")[0] if '"' in version else "0"
    if not major.isdigit() or int(major) < 17:
        raise LandingError(f"Java 17 or newer is required, found: {version.splitlines()[0] if version else java}")


def iceberg_jar() -> str:
    """The Iceberg runtime jar: $CDC_MERGE_ICEBERG_JAR, else the one shipped by snowpark-connect-deps-iceberg."""
    configured = os.environ.get("CDC_MERGE_ICEBERG_JAR")
    if configured:
        return configured
    import snowpark_connect_deps_iceberg

    package_dir = os.path.dirname(snowpark_connect_deps_iceberg.__file__)
    found = glob.glob(os.path.join(package_dir, "jars", ICEBERG_JAR_NAME))
    if not found:
        raise LandingError(
            f"{ICEBERG_JAR_NAME} not found under {package_dir}; install snowpark-connect-deps-iceberg==1.0.2 "
            f"or set CDC_MERGE_ICEBERG_JAR (or CDC_MERGE_ICEBERG_PACKAGES={ICEBERG_MAVEN_COORDINATES})"
        )
    return found[0]


# The apply's Java helpers (jvm/iceberg/, `make jvm`) and the local file system (jvm/hadoop/), in
# this package's jars/ beside the landing's parsers.
ICEBERG_HELPER_JAR = "cdc-merge-iceberg.jar"
LOCAL_FILE_SYSTEM_JAR = "cdc-merge-local-fs.jar"
LOCAL_FILE_SYSTEM_CLASS = "cdc_merge.hadoop.LocalFileSystem"
# The landing's streaming checkpoint written through FileSystem (so LOCAL_FILE_SYSTEM_CLASS), not
# FileContext, whose local file system forks `readlink` and `chmod` for each log file it writes.
CHECKPOINT_FILE_MANAGER_SETTING = "spark.sql.streaming.checkpointFileManagerClass"
CHECKPOINT_FILE_MANAGER_CLASS = "org.apache.spark.sql.execution.streaming.FileSystemBasedCheckpointFileManager"
JARS_FOLDER = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "jars")


def _project_jar(name: str, variable: str) -> str:
    """$variable (empty turns it off), else the jar of that name in python_jobs/jars/."""
    configured = os.environ.get(variable)
    if configured is not None:
        return configured
    return os.path.join(JARS_FOLDER, name)


def iceberg_helper_jar() -> str:
    """The apply's Iceberg helpers: $CDC_MERGE_ICEBERG_JVM_JAR (empty turns them off), else python_jobs/jars/'s."""
    return _project_jar(ICEBERG_HELPER_JAR, "CDC_MERGE_ICEBERG_JVM_JAR")


def local_file_system_jar() -> str:
    """The local file system's jar: $CDC_MERGE_LOCAL_FS_JAR (empty: Hadoop's own), else python_jobs/jars/'s."""
    return _project_jar(LOCAL_FILE_SYSTEM_JAR, "CDC_MERGE_LOCAL_FS_JAR")


# Iceberg's Hadoop catalog with views (jvm/iceberg/cdc_merge/iceberg/CdcMergeHadoopCatalog.java).
HADOOP_CATALOG_WITH_VIEWS = "cdc_merge.iceberg.CdcMergeHadoopCatalog"


def with_views(conf: dict[str, str]) -> dict[str, str]:
    """conf (a session's settings), its Hadoop catalogs (type hadoop) given views: the same warehouse
    through CdcMergeHadoopCatalog, whose jar joins spark.jars (the class loader of Iceberg's own).
    Unchanged where that jar is missing or turned off (CDC_MERGE_ICEBERG_JVM_JAR empty)."""
    jar = iceberg_helper_jar()
    hadoop_catalogs = [name for name, value in conf.items()
                       if re.fullmatch(r"spark\.sql\.catalog\.[^.]+\.type", name) and value == "hadoop"]
    if not hadoop_catalogs or not jar or not os.path.isfile(jar):
        return dict(conf)
    converted = {name: value for name, value in conf.items() if name not in hadoop_catalogs}
    for name in hadoop_catalogs:
        converted[name.removesuffix(".type") + ".catalog-impl"] = HADOOP_CATALOG_WITH_VIEWS
    jars = [entry for entry in (conf.get("spark.jars") or "").split(",") if entry]
    converted["spark.jars"] = ",".join(jars + ([os.path.abspath(jar)] if os.path.abspath(jar) not in jars else []))
    return converted


SPARK_LOG_CONFIG = Path(__file__).with_name("spark-log4j2.properties")


# Iceberg plans a scan's manifests on its shared worker pool and polls that pool's tasks every 10 ms
# (Iceberg's Tasks.waitFor, ParallelIterable): most of a small table's planning was that wait.
ICEBERG_PLAN_IN_WORKER_POOL = "iceberg.scan.plan-in-worker-pool"
ICEBERG_PLAN_IN_WORKER_POOL_VARIABLE = "ICEBERG_SCAN_PLAN_IN_WORKER_POOL"


# A process that starts a JVM for one command and exits spends most of that JVM's CPU compiling
# Spark's and Iceberg's code: C1 alone compiles fast enough code for seconds of work, at a third less
# CPU for a `dbt run` (BENCHMARKS.md, "Levers tried"). A long-lived process (`cdc-run`, a test
# worker's or a benchmark's session) keeps C2: after its first cycles C2's code is faster. C1 alone
# also shrinks the JVM's code cache from 240 MB to 48 MB, which a `dbt build` of 38 nodes filled
# ("CodeCache is full. Compiler has been disabled", then a model failed with "Out of space in
# CodeCache for method handle intrinsic"): the cache keeps its usual size.
ONE_SHOT_COMMANDS = frozenset({"dbt", "cdc-land", "cdc-verify"})
ONE_SHOT_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
ONE_SHOT_JAVA_OPTIONS_VARIABLE = "CDC_MERGE_ONE_SHOT_JAVA_OPTIONS"


def one_shot_java_options(java_options: str, command: str, environ: Mapping[str, str]) -> str:
    """The JVM options a session adds to java_options (the profile's) in a process started as
    command (its argv[0]): for one of ONE_SHOT_COMMANDS, $CDC_MERGE_ONE_SHOT_JAVA_OPTIONS (empty:
    none) or else ONE_SHOT_JAVA_OPTIONS, unless java_options choose a JIT of their own
    (TieredStopAtLevel, TieredCompilation); '' for any other process."""
    if Path(command).stem not in ONE_SHOT_COMMANDS:
        return ""
    if "TieredStopAtLevel" in java_options or "TieredCompilation" in java_options:
        return ""
    return environ.get(ONE_SHOT_JAVA_OPTIONS_VARIABLE, ONE_SHOT_JAVA_OPTIONS).strip()


def local_driver_conf(java_options: str | None = None) -> dict[str, str]:
    """A local session's driver: its JVM options (java_options, the profile's, kept) with a log of
    errors only (spark-log4j2.properties), Iceberg's scans planned in the thread that asks
    (ICEBERG_PLAN_IN_WORKER_POOL, unless the options or Iceberg's own variable say otherwise;
    docs/apply_service.md, "Iceberg's 10 ms polls") and, in a one-shot command's process, C1-only
    compilation (one_shot_java_options); no progress bars. It takes effect where this session
    starts the JVM, as the driver's memory does."""
    options = java_options or ""
    one_shot = one_shot_java_options(options, sys.argv[0] if sys.argv else "", os.environ)
    if one_shot:
        options = f"{options} {one_shot}".strip()
    if "log4j2.configurationFile" not in options:
        options = f"{options} -Dlog4j2.configurationFile=file:{SPARK_LOG_CONFIG}".strip()
    if ICEBERG_PLAN_IN_WORKER_POOL not in options and ICEBERG_PLAN_IN_WORKER_POOL_VARIABLE not in os.environ:
        options = f"{options} -D{ICEBERG_PLAN_IN_WORKER_POOL}=false"
    return {"spark.driver.extraJavaOptions": options, "spark.ui.showConsoleProgress": "false"}


def local_file_system_conf(master: str, class_path: str | None = None) -> dict[str, str]:
    """A local session's file:// as Hadoop's, but without forking `chmod` for every file it creates
    (jvm/hadoop/cdc_merge/hadoop/LocalFileSystem.java: 10-15 ms a file, a dozen files a commit),
    its jar added to class_path (the driver's extra class path), and the streaming checkpoint
    written through it: FileContext's local file system forks six processes for each of the
    three log files a landing writes (its renames look for symbolic links with `readlink`), 0.09 s
    of a small landing (BENCHMARKS.md, "Levers tried"). Renames on a local disk are atomic, and one
    landing at a time writes a checkpoint (run_locks.py), which is what this manager needs. {} when
    the jar is missing or turned off, or the master is not local."""
    jar = local_file_system_jar()
    if not master.startswith("local") or not jar or not os.path.isfile(jar):
        return {}
    return {"spark.driver.extraClassPath": os.pathsep.join(filter(None, [class_path, os.path.abspath(jar)])),
            "spark.hadoop.fs.file.impl": LOCAL_FILE_SYSTEM_CLASS,
            CHECKPOINT_FILE_MANAGER_SETTING: CHECKPOINT_FILE_MANAGER_CLASS}


def iceberg_spark_conf(warehouse: str) -> dict[str, str]:
    """Session settings for the local Iceberg catalog; profiles/profiles.yml sets the same ones."""
    conf = {
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        f"spark.sql.catalog.{CATALOG}": "org.apache.iceberg.spark.SparkCatalog",
        f"spark.sql.catalog.{CATALOG}.type": "hadoop",
        f"spark.sql.catalog.{CATALOG}.warehouse": warehouse,
        # Always see other writers' commits (the landing job, another dbt run).
        f"spark.sql.catalog.{CATALOG}.cache-enabled": "false",
        "spark.sql.defaultCatalog": CATALOG,
        "spark.sql.catalogImplementation": "in-memory",
        "spark.sql.session.timeZone": "UTC",
        # Spark's default heap is 1 GB; applying a 1M-event batch to a 10M-row mirror peaks near 5 GB.
        "spark.driver.memory": os.environ.get("CDC_MERGE_DRIVER_MEMORY", "6g"),
        # Batch work, not pauses, matters here: the parallel collector landed 1M events 15-20% faster
        # than G1 (the default) and applied a 1M-event batch 7% faster (BENCHMARKS.md).
        "spark.sql.shuffle.partitions": "4",
        "spark.ui.enabled": "false",
        **local_driver_conf("-XX:+UseParallelGC"),
    }
    conf.update(local_file_system_conf(os.environ.get("CDC_MERGE_SPARK_MASTER", "local[2]")))
    packages = os.environ.get("CDC_MERGE_ICEBERG_PACKAGES")
    if packages:
        conf["spark.jars.packages"] = packages
    else:
        conf["spark.jars"] = iceberg_jar()
    return with_views(conf)


def default_warehouse() -> str:
    return os.path.abspath(os.environ.get("CDC_MERGE_WAREHOUSE", "warehouse"))


def spark_session(app_name: str = "cdc_merge", warehouse: str | None = None) -> SparkSession:
    """The active session (spark-submit, dbt) or a local one with the Iceberg catalog."""
    active = SparkSession.getActiveSession()
    if active is not None:
        keep_jvm_lookups(active)
        return active
    require_java()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name).master(os.environ.get("CDC_MERGE_SPARK_MASTER", "local[2]"))
    for name, value in iceberg_spark_conf(warehouse or default_warehouse()).items():
        builder = builder.config(name, value)
    # No setLogLevel: the JVM's level is the log config's (errors only); a thread without a session of its own
    # (dbt's) gets the one running, and each such builder warns, which a level of WARN would print.
    spark = builder.getOrCreate()
    keep_jvm_lookups(spark)
    return spark


@contextlib.contextmanager
def session_conf(spark: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """The settings hold in the session inside, and are put back after."""
    before = {name: spark.conf.get(name, None) for name in settings}
    for name, value in settings.items():
        spark.conf.set(name, value)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                spark.conf.unset(name)
            else:
                spark.conf.set(name, value)


def uncompressed_cache(spark: SparkSession):
    """DataFrames persisted and first computed inside are cached uncompressed.

    The landing job caches each batch for one or two reads; compressing the strings costs more
    than reading them twice (BENCHMARKS.md, landing).
    """
    return session_conf(spark, {"spark.sql.inMemoryColumnarStorage.compressed": "false"})


def local_relation(spark: SparkSession, rows: Sequence[tuple], schema: StructType) -> DataFrame:
    """rows as a DataFrame kept in the driver's memory (a local relation, as the apply's
    raw_ranges.in_driver keeps one): each write that reads it then runs no job. Through Arrow: from
    a Python list Spark starts a Python worker's job to convert the rows (0.2 s for a thousand lines,
    0.04 s so; BENCHMARKS.md, "Levers tried")."""
    import pandas as pd

    # Object columns: pandas would turn a column of ints with nulls into floats.
    frame = pd.DataFrame({field.name: pd.Series([row[index] for row in rows], dtype=object)
                          for index, field in enumerate(schema.fields)})
    with session_conf(spark, {"spark.sql.execution.arrow.pyspark.enabled": "true"}):
        created = spark.createDataFrame(frame, schema)._jdf
    return DataFrame(spark._jsparkSession.createDataFrame(created.collectAsList(), created.schema()), spark)
