"""dbt's profile and the landing job must build the same Spark session, or the landing job
writes to a catalog the mirrors never read."""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

import jinja2
import yaml

from conftest import PROJECT_DIR
from python_jobs.landing import io


def rendered_profile(environment: dict[str, str]) -> dict:
    def env_var(name: str, default: str | None = None) -> str:
        if name in environment:
            return environment[name]
        if default is None:
            raise KeyError(name)
        return default

    text = (PROJECT_DIR / "profiles" / "profiles.yml").read_text()
    return yaml.safe_load(jinja2.Template(text).render(env_var=env_var))


def local_parameters(environment: dict[str, str]) -> dict[str, str]:
    return rendered_profile(environment)["cdc_merge"]["outputs"]["local"]["server_side_parameters"]


def test_profile_sets_the_same_catalog_as_the_landing_job(monkeypatch):
    """As dbt's session gets the profile's settings: with those the adapter adds (the jars, the
    Hadoop catalog with views, the driver's options, the local file system) as its connection opens."""
    from dbt.adapters.cdc_spark.connections import with_local_session_settings

    monkeypatch.delenv("CDC_MERGE_ICEBERG_JAR", raising=False)
    monkeypatch.delenv("CDC_MERGE_ICEBERG_PACKAGES", raising=False)
    monkeypatch.delenv("CDC_MERGE_SPARK_MASTER", raising=False)
    monkeypatch.delenv("CDC_MERGE_DRIVER_MEMORY", raising=False)  # the suite's own (conftest.py): both defaults compared
    credentials = SimpleNamespace(server_side_parameters=local_parameters({"CDC_MERGE_WAREHOUSE": "/lake"}))
    with_local_session_settings(credentials)
    landing = io.iceberg_spark_conf("/lake")
    assert credentials.server_side_parameters["spark.sql.catalog.lake.catalog-impl"] == "cdc_merge.iceberg.CdcMergeHadoopCatalog"
    # The master the landing session takes from CDC_MERGE_SPARK_MASTER, as the profile does; no Maven packages.
    profile = {name: value for name, value in credentials.server_side_parameters.items()
               if (name, value) not in (("spark.master", "local[2]"), ("spark.jars.packages", ""))}
    assert profile == landing


def test_dbt_and_the_landing_job_set_the_same_local_file_system_and_driver_options(monkeypatch):
    from dbt.adapters.cdc_spark.connections import with_local_session_settings

    monkeypatch.delenv("CDC_MERGE_LOCAL_FS_JAR", raising=False)
    monkeypatch.delenv("CDC_MERGE_SPARK_MASTER", raising=False)
    monkeypatch.delenv(io.session.ICEBERG_PLAN_IN_WORKER_POOL_VARIABLE, raising=False)
    credentials = SimpleNamespace(server_side_parameters=local_parameters({}))
    with_local_session_settings(credentials)
    landing = io.iceberg_spark_conf("/lake")

    wanted = {"spark.driver.extraClassPath": os.path.abspath(io.local_file_system_jar()), "spark.hadoop.fs.file.impl": "cdc_merge.hadoop.LocalFileSystem",
              "spark.sql.streaming.checkpointFileManagerClass": "org.apache.spark.sql.execution.streaming.FileSystemBasedCheckpointFileManager",
              "spark.driver.extraJavaOptions": f"-XX:+UseParallelGC -Dlog4j2.configurationFile=file:{io.session.SPARK_LOG_CONFIG}"
                                               " -Diceberg.scan.plan-in-worker-pool=false",
              "spark.ui.showConsoleProgress": "false"}
    assert os.path.isfile(io.local_file_system_jar()) and io.session.SPARK_LOG_CONFIG.is_file()
    assert {name: credentials.server_side_parameters[name] for name in wanted} == {name: landing[name] for name in wanted} == wanted


SESSIONS_IN_TWO_THREADS = """
import sys, threading
from python_jobs.landing import io
io.spark_session("first", sys.argv[1])
# A thread without a session of its own (as each dbt thread is) builds again and gets the running one.
thread = threading.Thread(target=io.spark_session, args=("second", sys.argv[1]))
thread.start()
thread.join()
print("sessions", flush=True)
"""


def test_a_session_started_by_the_landing_prints_no_spark_warnings(tmp_path):
    """The demo and the Databend target's landing start the JVM themselves; its level stays the log
    config's (errors), or every dbt thread's builder printed "Using an existing Spark session"."""
    result = subprocess.run([sys.executable, "-c", SESSIONS_IN_TWO_THREADS, str(tmp_path / "warehouse")], cwd=PROJECT_DIR,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and "sessions" in result.stdout, result.stderr[-3000:]
    assert " WARN " not in result.stderr, result.stderr[-3000:]


def test_iceberg_plans_in_the_calling_thread_unless_told_otherwise(monkeypatch):
    """Iceberg's worker pool polls its tasks every 10 ms; a session plans without it, unless the
    profile's options or Iceberg's own variable decide."""
    monkeypatch.delenv(io.session.ICEBERG_PLAN_IN_WORKER_POOL_VARIABLE, raising=False)
    options = io.session.local_driver_conf("-Xss4m")["spark.driver.extraJavaOptions"]
    assert options.startswith("-Xss4m ") and options.endswith(" -Diceberg.scan.plan-in-worker-pool=false")
    chosen = "-Diceberg.scan.plan-in-worker-pool=true"
    assert io.session.local_driver_conf(chosen)["spark.driver.extraJavaOptions"].count("plan-in-worker-pool") == 1
    monkeypatch.setenv(io.session.ICEBERG_PLAN_IN_WORKER_POOL_VARIABLE, "true")
    assert "plan-in-worker-pool" not in io.session.local_driver_conf()["spark.driver.extraJavaOptions"]


def test_the_session_plans_iceberg_scans_in_the_calling_thread(spark):
    """The option reaches the JVM the session starts: Iceberg reads it once, as its scans load."""
    assert spark._jvm.java.lang.System.getProperty("iceberg.scan.plan-in-worker-pool") == "false"
    assert spark._jvm.org.apache.iceberg.SystemConfigs.SCAN_THREAD_POOL_ENABLED.value() is False


def test_the_local_file_system_is_set_only_where_it_can_load(monkeypatch, tmp_path):
    monkeypatch.delenv("CDC_MERGE_LOCAL_FS_JAR", raising=False)
    assert io.local_file_system_conf("spark://master:7077") == {}
    assert set(io.local_file_system_conf("local[2]")) == {"spark.driver.extraClassPath", "spark.hadoop.fs.file.impl",
                                                          "spark.sql.streaming.checkpointFileManagerClass"}
    assert io.local_file_system_conf("local", "/opt/a.jar")["spark.driver.extraClassPath"] == f"/opt/a.jar:{os.path.abspath(io.local_file_system_jar())}"
    monkeypatch.setenv("CDC_MERGE_LOCAL_FS_JAR", str(tmp_path / "not-built.jar"))
    assert io.local_file_system_conf("local[2]") == {}
    monkeypatch.setenv("CDC_MERGE_LOCAL_FS_JAR", "")
    assert io.local_file_system_conf("local[2]") == {}


def test_the_session_creates_files_without_a_process_each(spark, tmp_path):
    """Hadoop's local file system forks `chmod` for every file it creates; the session's sets the
    same permissions in the JVM, and writes the same checksum files beside them."""
    hadoop = spark._jvm.org.apache.hadoop.fs
    file_system = hadoop.Path(tmp_path.as_uri()).getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    assert file_system.getClass().getName() == "cdc_merge.hadoop.LocalFileSystem"

    def forks() -> int:
        return int(next(line for line in open("/proc/stat") if line.startswith("processes")).split()[1])

    def forks_while_creating(files: int, attempt: int) -> int:
        started = forks()
        for number in range(files):
            path = hadoop.Path((tmp_path / f"file-{attempt}-{number}").as_uri())
            stream = file_system.create(path, True)
            stream.write(bytearray(b"x" * 100))
            stream.close()
        return forks() - started

    # Other processes of the machine fork too (the other test worker starts dbt), so the fewest forks of
    # three attempts is compared: a process per file would be 200 in each.
    assert min(forks_while_creating(200, attempt) for attempt in range(3)) < 100
    umask = os.umask(0)
    os.umask(umask)
    assert oct((tmp_path / "file-0-0").stat().st_mode & 0o777) == oct(0o666 & ~umask & 0o777)
    assert (tmp_path / ".file-0-0.crc").is_file()


def test_default_jar_is_the_one_the_landing_job_finds(monkeypatch):
    """The profile names no path of one machine: the adapter adds the installed Iceberg runtime jar."""
    from dbt.adapters.cdc_spark.connections import with_local_session_settings

    monkeypatch.delenv("CDC_MERGE_ICEBERG_JAR", raising=False)
    monkeypatch.delenv("CDC_MERGE_ICEBERG_PACKAGES", raising=False)
    credentials = SimpleNamespace(server_side_parameters=local_parameters({}))
    assert credentials.server_side_parameters["spark.jars"] == ""
    with_local_session_settings(credentials)
    iceberg, helpers = credentials.server_side_parameters["spark.jars"].split(",")
    assert iceberg == io.iceberg_jar() and os.path.isabs(iceberg) and os.path.getsize(iceberg) > 10_000_000
    assert helpers == os.path.abspath(io.iceberg_helper_jar())  # the catalog with views, in Iceberg's class loader


def test_jar_and_maven_overrides_reach_both(monkeypatch):
    monkeypatch.setenv("CDC_MERGE_ICEBERG_JAR", "/opt/jars/iceberg.jar")
    assert io.iceberg_spark_conf("/lake")["spark.jars"].split(",")[0] == "/opt/jars/iceberg.jar"
    assert local_parameters({"CDC_MERGE_ICEBERG_JAR": "/opt/jars/iceberg.jar"})["spark.jars"] == "/opt/jars/iceberg.jar"

    coordinates = "org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.2"
    monkeypatch.setenv("CDC_MERGE_ICEBERG_PACKAGES", coordinates)
    assert io.iceberg_spark_conf("/lake")["spark.jars.packages"] == coordinates
    assert local_parameters({"CDC_MERGE_ICEBERG_PACKAGES": coordinates})["spark.jars.packages"] == coordinates


def test_the_session_runs_the_parallel_collector(spark):
    """The settings that only apply when the session starts the JVM did reach it."""
    beans = spark._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
    assert {bean.getName() for bean in beans} == {"PS Scavenge", "PS MarkSweep"}


def test_the_cluster_target_names_the_catalog_cdc_cluster_starts():
    from python_jobs.cluster.spark_conf import jdbc_catalog_conf

    environment = {"CDC_MERGE_CATALOG_URI": "jdbc:postgresql://db:5432/iceberg_catalog",
                   "CDC_MERGE_CATALOG_USER": "iceberg", "CDC_MERGE_CLUSTER_WAREHOUSE": "s3://bucket/warehouse"}
    cluster = rendered_profile(environment)["cdc_merge"]["outputs"]["cluster"]
    expected = jdbc_catalog_conf("jdbc:postgresql://db:5432/iceberg_catalog", "iceberg", "s3://bucket/warehouse")
    assert {name: cluster["server_side_parameters"][name] for name in expected} == expected
    assert cluster["method"] == "thrift"
    # The default jars are where `make` puts them, relative to the project (where dbt runs).
    for jar in cluster["server_side_parameters"]["spark.jars"].split(","):
        assert (PROJECT_DIR / jar).is_file(), jar


def test_the_streaming_checkpoint_is_written_through_the_local_file_system(spark, tmp_path):
    """The manager Spark makes for a landing's checkpoint writes through the file system without
    forks (fs.file.impl), not through FileContext's; a log file it writes is whole under its name."""
    jvm = spark._jvm
    managers = getattr(getattr(jvm, "org.apache.spark.sql.execution.streaming.CheckpointFileManager$"), "MODULE$")
    folder = jvm.org.apache.hadoop.fs.Path(tmp_path.as_uri())
    manager = managers.create(folder, spark._jsparkSession.sessionState().newHadoopConf())
    assert manager.getClass().getName() == io.session.CHECKPOINT_FILE_MANAGER_CLASS
    assert manager.fs().getClass().getName() == io.session.LOCAL_FILE_SYSTEM_CLASS
    stream = manager.createAtomic(jvm.org.apache.hadoop.fs.Path(folder, "0"), False)
    stream.write(bytearray(b"v1\n{}"))
    stream.close()
    assert (tmp_path / "0").read_text() == "v1\n{}"
    assert sorted(path.name for path in tmp_path.iterdir()) == [".0.crc", "0"]
