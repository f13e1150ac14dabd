"""Spark on the cluster: the installed PySpark's launchers, the jars every process needs, and the
Iceberg JDBC catalog settings shared by the Thrift server, submitted jobs and profiles/profiles.yml."""

from __future__ import annotations

import os
from pathlib import Path

from python_jobs.cluster.processes import LOOPBACK, ClusterError
from python_jobs.landing.io.session import CATALOG, iceberg_jar

THRIFT_SERVER_CLASS = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
# The apply's Iceberg helpers (deletes by position), built by `make jvm`; as for dbt's own session
# (adapter/dbt/adapters/cdc_spark/iceberg_jvm.py) $CDC_MERGE_ICEBERG_JVM_JAR overrides it and an
# empty value leaves them out (the apply then deletes replaced rows with a MERGE).
ICEBERG_HELPER_JAR = Path(__file__).resolve().parents[1] / "jars" / "cdc-merge-iceberg.jar"
# Iceberg's SparkCatalog plus the helpers as procedures (jvm/iceberg/cdc_merge/iceberg/).
HELPERS_CATALOG_CLASS = "cdc_merge.iceberg.CdcMergeSparkCatalog"
TRANSACTIONS_CATALOG_IMPL = "cdc_merge.iceberg.CdcMergeJdbcCatalog"


def spark_home() -> Path:
    """The pip PySpark: bin/spark-class and bin/spark-submit, jars/ (no sbin scripts)."""
    import pyspark

    home = Path(pyspark.__file__).resolve().parent
    if not (home / "bin" / "spark-class").exists():
        raise ClusterError(f"{home}/bin/spark-class not found: reinstall pyspark==3.5.* (make venv)")
    return home


def spark_env(folder: Path) -> dict[str, str]:
    """Environment of every Spark process: the pip PySpark, loopback only, logs in the cluster folder."""
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(spark_home()),
        # Otherwise the workers register on the machine's outside address.
        SPARK_LOCAL_IP=LOOPBACK,
        SPARK_LOG_DIR=str(folder),
        SPARK_PID_DIR=str(folder),
        SPARK_CONF_DIR=str(folder / "conf"),
    )
    return env


def cluster_jars() -> list[str]:
    """The Iceberg runtime, the PostgreSQL JDBC driver and the apply's helper jar (when built)."""
    from python_jobs.cluster.catalog_database import jdbc_jar

    jars = [iceberg_jar(), jdbc_jar()]
    helpers = helper_jar()
    if helpers:
        jars.append(helpers)
    return jars


def helper_jar() -> str | None:
    """The apply's helper jar, or None when it is turned off or not built."""
    jar = os.environ.get("CDC_MERGE_ICEBERG_JVM_JAR", str(ICEBERG_HELPER_JAR))
    return jar if jar and os.path.isfile(jar) else None


def thrift_server_catalog_conf(catalog: dict[str, str]) -> dict[str, str]:
    """The catalog of the Thrift server: with the apply's helpers as procedures when their jar is
    there, and a JDBC catalog whose sessions can stage a consistency group's commits in one catalog
    transaction (docs/consistent_cuts.md)."""
    if helper_jar() is None:
        return catalog
    prefix = f"spark.sql.catalog.{CATALOG}"
    conf = {**catalog, prefix: HELPERS_CATALOG_CLASS}
    if conf.pop(f"{prefix}.type", None) == "jdbc":
        conf[f"{prefix}.catalog-impl"] = TRANSACTIONS_CATALOG_IMPL
    return conf


def jdbc_catalog_conf(uri: str, user: str, warehouse: str, password: str = "") -> dict[str, str]:
    """The Iceberg catalog `lake` on a JDBC database that every driver shares; profiles.yml's
    `cluster` target names the same settings."""
    prefix = f"spark.sql.catalog.{CATALOG}"
    return {
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.type": "jdbc",
        f"{prefix}.uri": uri,
        f"{prefix}.jdbc.user": user,
        f"{prefix}.jdbc.password": password,
        # V1 of the catalog's tables also holds views.
        f"{prefix}.jdbc.schema-version": "V1",
        f"{prefix}.warehouse": warehouse,
        # Always see other writers' commits (the landing job, another dbt run).
        f"{prefix}.cache-enabled": "false",
        "spark.sql.defaultCatalog": CATALOG,
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "4",
    }


def application_conf(master_url: str, executor_memory: str, cores: int) -> dict[str, str]:
    """Each application (the Thrift server, a submitted job) takes one executor of cores cores, a
    worker's: the Thrift server one worker, a landing the other, both at once. A second executor
    JVM only added its start and warm-up on the same machine's cores (5 of a small landing's 17
    CPU-seconds)."""
    return {
        "spark.master": master_url,
        "spark.cores.max": str(cores),
        "spark.executor.cores": str(cores),
        "spark.executor.memory": executor_memory,
        "spark.ui.enabled": "false",
        "spark.driver.extraJavaOptions": "-XX:+UseParallelGC",
    }
