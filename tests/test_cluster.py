"""The `cluster` target end to end: `cdc-cluster` starts the catalog's PostgreSQL, a Spark master,
two workers and a Thrift server; `dbt run` lands events with a Python model spark-submitted to the
master and applies them to two mirrors through the Thrift server; the mirrors equal the oracle's
replay after each wave (deletes, late and duplicated events); `dbt test` passes; everything stops
even when the test fails."""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
import urllib.request
from pathlib import Path

import pytest

from conftest import make_project
from python_jobs.cluster import cli, processes
from python_jobs.cluster.processes import LOOPBACK, ClusterError
from python_jobs.demo.generate import KEYS, build_waves, write_wave
from test_oracle import assert_mirrors_equal_replay, commits_deleting_by_position

MIRRORS = {"shop.customers": "shop_customers", "shop.orders": "shop_orders"}


@pytest.fixture(scope="module")
def cluster():
    # Not under pytest's private temporary folder: the catalog's PostgreSQL runs as nobody when root.
    folder = Path(tempfile.mkdtemp(prefix="cdc-merge-cluster-"))
    folder.chmod(0o755)
    saved = dict(os.environ)
    try:
        state = cli.up(folder, folder / "warehouse", dict.fromkeys(("catalog", "master", "master_webui", "thrift"), 0),
                       worker_cores=2, worker_memory="2g", driver_memory="2g", executor_memory="1g")
        os.environ.update(state.env())
        yield state
    finally:
        cli.down(folder)
        os.environ.clear()
        os.environ.update(saved)
        assert not any(cli.status(folder).values()), f"a component of {folder} is still running"
        shutil.rmtree(folder, ignore_errors=True)


def applications(state: cli.ClusterState) -> list[str]:
    """Names of the applications the master has run or is running."""
    with urllib.request.urlopen(f"http://{LOOPBACK}:{state.master_webui_port}/json/", timeout=5) as response:
        master = json.load(response)
    return [app["name"] for app in master["activeapps"] + master["completedapps"]]


def test_landing_and_mirrors_on_the_cluster_equal_the_oracle(cluster, tmp_path):
    assert cli.status(Path(cluster.folder)) == dict.fromkeys(cli.status(Path(cluster.folder)), True)
    project = make_project(None, tmp_path, "cluster")
    project.landing_config(KEYS)
    _, waves = build_waves(29, events=800, waves=2, connector="postgresql", snapshot_rows=20,
                           late_fraction=0.1, duplicate_fraction=0.05)
    first_wave_end = max(event.index for event in waves[0].delivered)
    late = [event for event in waves[1].delivered if event.index < first_wave_end and event.table in MIRRORS]
    deletes = [event for wave in waves for event in wave.delivered if event.op == "d" and event.table in MIRRORS]
    assert late and deletes
    delivered = []
    for wave in waves:
        write_wave(wave, project.inbox)
        delivered += wave.delivered
        project.dbt("run", "--select", "raw_events", *MIRRORS.values())
        assert_mirrors_equal_replay(project, delivered, "hard", models=MIRRORS)
    # The Thrift server's catalog has the apply's helpers: replaced rows are deleted by position.
    assert commits_deleting_by_position(project, MIRRORS.values()) > 0
    # The landing ran as its own application on the cluster, the SQL in the Thrift server's.
    assert {"dbt_model_raw_events", "cdc_merge_thrift_server"} <= set(applications(cluster))
    landed = project.query(f"select count(*) as events from {project.raw_schema}.raw_events")[0]["events"]
    assert landed == len(delivered)
    project.dbt("test", "--select", *MIRRORS.values())
    # Nothing new: each mirror takes the idle check's few statements, and nothing is written to it.
    versions = {model: project.table_version(f"{project.schema}.{model}") for model in MIRRORS.values()}
    logged = len(project.dbt_log())
    project.dbt("run", "--select", *MIRRORS.values())
    assert project.dbt_log()[logged:].count(": nothing new (offset = current raw snapshot") == len(MIRRORS)
    assert {model: project.table_version(f"{project.schema}.{model}") for model in MIRRORS.values()} == versions


def test_a_taken_port_is_refused_before_anything_starts(tmp_path):
    with socket.socket() as taken:
        taken.bind((LOOPBACK, 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ClusterError, match=f"Thrift server: port {port} on {LOOPBACK} is taken.*--thrift-port"):
            cli.up(tmp_path, tmp_path / "warehouse", {"catalog": 0, "master": 0, "master_webui": 0, "thrift": port},
                   worker_cores=1, worker_memory="1g", driver_memory="1g", executor_memory="1g")
    assert not any(cli.status(tmp_path).values())
    assert not list(tmp_path.glob("*.pid"))


def test_missing_java_is_named(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    monkeypatch.setenv("PATH", str(tmp_path))
    assert cli.main(["up", "--folder", str(tmp_path / "cluster")]) == 2
    assert "Java 17 or newer is required" in capsys.readouterr().err
    assert not (tmp_path / "cluster").exists()


def running_in_group(group: int) -> list[int]:
    """Processes of a process group that still run (exited ones may wait for init to reap them)."""
    running = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            running.append(int(stat.parent.name))
    return running


def test_stop_ends_the_whole_process_group(tmp_path):
    pid = processes.start("sleeper", ["sh", "-c", "sleep 300 & sleep 300"], tmp_path, os.environ)
    assert processes.alive(pid)
    assert processes.stop(tmp_path, "sleeper")
    assert not processes.alive(pid)
    assert running_in_group(pid) == []
    assert not (tmp_path / "sleeper.pid").exists()


def test_procedure_arguments_reach_spark_as_written(spark):
    """The apply's SQL and key bounds travel to the Thrift server's procedures as string literals."""
    from dbt.adapters.cdc_spark.impl import _sql_literal

    texts = ["select 1 as pos where x in ('update', 'delete')", "back\\slash \\' and 'quote'", "line\nbreak\ttab", "ü€𝄞", ""]
    assert [spark.sql(f"select {_sql_literal(text)} as v").first()["v"] for text in texts] == texts
    assert spark.sql(f"select {_sql_literal(2**40)} as v").first()["v"] == 2**40
