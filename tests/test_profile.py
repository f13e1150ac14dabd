"""dbt's profile and the landing job must build the same Spark session, or the landing job
writes to a catalog the mirrors never read."""

from __future__ import annotations

import os
from pathlib import Path

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


def test_profile_sets_the_same_catalog_as_the_landing_job():
    parameters = local_parameters({"CDC_MERGE_WAREHOUSE": "/lake"})
    landing = io.iceberg_spark_conf("/lake")
    session_only = {"spark.jars", "spark.jars.packages", "spark.master"}
    assert {k: v for k, v in parameters.items() if k not in session_only} == {
        k: v for k, v in landing.items() if k not in session_only
    }


def test_default_jar_is_the_one_the_landing_job_finds(monkeypatch):
    monkeypatch.delenv("CDC_MERGE_ICEBERG_JAR", raising=False)
    jar = local_parameters({})["spark.jars"]
    # The profile's path is relative to the project directory, where dbt runs.
    assert (PROJECT_DIR / jar).resolve() == Path(io.iceberg_jar()).resolve()
    assert os.path.getsize(PROJECT_DIR / jar) > 10_000_000


def test_jar_and_maven_overrides_reach_both(monkeypatch):
    monkeypatch.setenv("CDC_MERGE_ICEBERG_JAR", "/opt/jars/iceberg.jar")
    assert io.iceberg_spark_conf("/lake")["spark.jars"] == "/opt/jars/iceberg.jar"
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
