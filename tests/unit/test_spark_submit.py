"""The landing's spark-submit on the cluster target (adapter/dbt/adapters/cdc_spark/python_submit.py)
and what cdc-cluster's cluster.env gives it (python_jobs/cluster/cli.py)."""

from __future__ import annotations

from pathlib import Path

from dbt.adapters.cdc_spark.python_submit import spark_submit_command

from python_jobs.cluster import cli

MASTER = {"spark.master": "spark://127.0.0.1:7077"}


def arguments(conf: dict[str, str]) -> list[str]:
    return spark_submit_command({**MASTER, **conf}, Path("raw_events.py"), [])[1:]


def test_jars_the_workers_have_are_on_the_drivers_class_path_only():
    command = arguments({"spark.jars": "/j/iceberg.jar,/j/parsers.jar", "spark.executor.extraClassPath": "/j/iceberg.jar"})
    assert command[command.index("--jars") + 1] == "/j/parsers.jar"
    assert command[command.index("--driver-class-path") + 1] == "/j/iceberg.jar:/j/parsers.jar"
    assert "spark.executor.extraClassPath=/j/iceberg.jar" in command

    everywhere = arguments({"spark.jars": "/j/iceberg.jar", "spark.executor.extraClassPath": "/j/iceberg.jar"})
    assert "--jars" not in everywhere and everywhere[everywhere.index("--driver-class-path") + 1] == "/j/iceberg.jar"


def test_without_a_class_path_on_the_executors_every_jar_is_shipped():
    command = arguments({"spark.jars": "/j/iceberg.jar,/j/parsers.jar", "spark.executor.extraClassPath": ""})
    assert command[command.index("--jars") + 1] == "/j/iceberg.jar,/j/parsers.jar"
    assert not any(argument.startswith("spark.executor.extraClassPath") for argument in command)


def test_cdc_cluster_gives_the_landing_one_executor_and_the_jars_unshipped():
    state = cli.ClusterState(folder="/c", master_url=MASTER["spark.master"], master_webui_port=1, thrift_port=2,
                             catalog_port=3, catalog_uri="jdbc:postgresql://127.0.0.1:3/iceberg_catalog",
                             catalog_user="postgres", warehouse="/c/warehouse", worker_cores=3, worker_memory="2g")
    env = state.env()
    assert env["CDC_MERGE_CLUSTER_EXECUTOR_CLASS_PATH"].split(":") == env["CDC_MERGE_CLUSTER_JARS"].split(",")
    assert env["CDC_MERGE_EXECUTOR_CORES"] == env["CDC_MERGE_CORES_MAX"] == "3"
