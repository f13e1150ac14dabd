"""Runs at the same time (python_jobs/run_locks.py): two `dbt run` processes on one project, a
landing while the mirrors apply, and a run that finds a mirror or the landing taken by another.
One wins, the other waits or stops with a message naming the holder; the mirrors and their offsets
stay correct. The workload lives in the suite's warehouse: the runs that only set the scene or heal
are dbt in this process (Workload.run_here); the runs that race are processes of their own.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from python_jobs import run_locks
from harness.dbt_project import PROJECT_DIR
from reliability.workload import BIN, LANDING_AND_MIRRORS, MIRRORS, Workload
from test_mirror_locks import HOLD_LOCK

# One worker runs the module: its tests share one workload (Makefile: --dist loadgroup).
pytestmark = pytest.mark.xdist_group("concurrency")
MIRRORS_ONLY = ["--select", *MIRRORS.values()]


@pytest.fixture(scope="module")
def workload(tmp_path_factory, spark, warehouse):
    workload = Workload(tmp_path_factory.mktemp("concurrency") / "suite", waves=6, warehouse=warehouse,
                        schema="concurrency_mirror", raw_schema="concurrency_raw", history=True)
    workload.deliver()
    first = workload.run_here(["run", *LANDING_AND_MIRRORS])
    assert first.returncode == 0, first.output[-3000:]
    yield workload
    workload.close()


def offsets_by_mirror(workload) -> dict[str, list[int]]:
    ordinals: dict[str, list[int]] = {}
    for row in workload.offsets():
        ordinals.setdefault(row["target_table"], []).append(row["offset_ordinal"])
    return {target: sorted(values) for target, values in ordinals.items()}


def test_two_dbt_runs_at_once_land_and_apply_each_change_once(workload):
    workload.deliver(2)
    first = workload.start("dbt", ["run", *LANDING_AND_MIRRORS])
    time.sleep(2)
    second = workload.start("dbt", ["run", *LANDING_AND_MIRRORS])
    outputs = [process.communicate(timeout=900)[0] for process in (first, second)]

    assert [first.returncode, second.returncode] == [0, 0], "\n".join(output[-3000:] for output in outputs)
    assert "in use by another run" in "".join(outputs)
    assert "concurrentStreamLogUpdate" not in "".join(outputs)
    comparisons = workload.compare()
    assert all(c.ok for c in comparisons.values()), [c.details for c in comparisons.values()]
    # One writer at a time per mirror: no two offset rows of a mirror share an ordinal.
    for target, ordinals in offsets_by_mirror(workload).items():
        assert len(ordinals) == len(set(ordinals)), f"{target}: {ordinals}"


def test_the_landing_running_while_mirrors_apply_loses_nothing(workload):
    workload.deliver()
    landed = workload.run_here(["run", "--select", "raw_events"])
    assert landed.returncode == 0, landed.output[-3000:]
    workload.deliver()
    applying = workload.start("dbt", ["run", *MIRRORS_ONLY])
    time.sleep(3)
    landing = subprocess.run(
        [str(BIN / "cdc-land"), "--config", str(workload.work_dir / "landing.yml"), "--warehouse", str(workload.warehouse)],
        env=workload.env(), capture_output=True, text=True, timeout=600,
    )
    applied_output = applying.communicate(timeout=900)[0]

    assert landing.returncode == 0, landing.stderr[-3000:]
    assert applying.returncode == 0, applied_output[-3000:]
    again = workload.run_here(["run", *MIRRORS_ONLY])
    assert again.returncode == 0, again.output[-3000:]
    comparisons = workload.compare()
    assert all(c.ok for c in comparisons.values()), [c.details for c in comparisons.values()]


def test_a_mirror_or_landing_held_by_another_run_stops_with_what_to_do(workload, monkeypatch):
    workload.deliver()
    offsets_before = offsets_by_mirror(workload)
    monkeypatch.setenv(run_locks.LOCK_WAIT, "2")
    mirror = f"{workload.schema}.shop_orders"
    mirror_lock = run_locks.lock_file("mirror", str(workload.warehouse), mirror)
    landing_lock = run_locks.lock_file("landing", str(workload.work_dir / "checkpoint"), "checkpoint")
    run_locks.acquire(mirror_lock, f"{mirror} in the test")
    run_locks.acquire(landing_lock, "the landing in the test")
    try:
        env = {**workload.env(), run_locks.LOCK_WAIT: "2"}
        landing = subprocess.run(
            [str(BIN / "cdc-land"), "--config", str(workload.work_dir / "landing.yml"), "--warehouse", str(workload.warehouse)],
            env=env, capture_output=True, text=True, timeout=600,
        )
        process = subprocess.run(
            workload.command("dbt", ["run", "--select", "shop_orders"]), cwd=workload.project_dir,
            env=env, capture_output=True, text=True, timeout=600,
        )
    finally:
        run_locks.release(mirror_lock)
        run_locks.release(landing_lock)

    assert landing.returncode == 2
    assert f"the landing checkpoint {workload.work_dir / 'checkpoint'} is in use by another run (pid {os.getpid()}" in landing.stderr
    assert process.returncode != 0
    assert f"mirror {mirror} is in use by another run (pid {os.getpid()}" in process.stdout
    assert "this run changed nothing of it. Run again once that run ends" in process.stdout
    assert offsets_by_mirror(workload) == offsets_before
    # A landing holding the raw table: a mirror's maintenance leaves the raw table for later, and goes on.
    # (cdc_maintain, not a dbt run: with nothing new and no threshold crossed, a run would be idle.)
    raw_table = f"{workload.raw_schema}.raw_events"
    table_lock = run_locks.lock_file("table", str(workload.warehouse), raw_table)
    run_locks.acquire(table_lock, "the raw table in the test")
    try:
        maintained = workload.run("dbt", ["run-operation", "cdc_maintain", "--args", "{models: [shop_orders]}"])
    finally:
        run_locks.release(table_lock)
    assert maintained.returncode == 0, maintained.output[-3000:]
    assert f"{raw_table}: a landing is writing it; left for the next maintenance" in maintained.output
    # Released, the next run lands and applies as usual.
    healed = workload.run_here(["run", *LANDING_AND_MIRRORS])
    assert healed.returncode == 0, healed.output[-3000:]
    assert all(c.ok for c in workload.compare().values())


def test_maintenance_and_a_history_wait_for_the_run_that_holds_them(workload, monkeypatch):
    """cdc_maintain of a mirror, and a history's run, take the lock a mirror's run takes: beside the
    service's runs their commits raced, and the loser failed (Iceberg's "found new position delete for
    replaced data file" in maintenance, "was written since its batch was classified" in the run)."""
    history = f"{workload.schema}.customers_history"
    built = workload.run_here(["run", "--select", "customers_history"])
    assert built.returncode == 0, built.output[-3000:]
    mirror = f"{workload.schema}.shop_orders"
    locks = [run_locks.lock_file("mirror", str(workload.warehouse), name) for name in (mirror, history)]
    monkeypatch.setenv(run_locks.LOCK_WAIT, "2")
    for lock in locks:
        run_locks.acquire(lock, "the test")
    try:
        maintained = workload.run("dbt", ["run-operation", "cdc_maintain", "--args", "{models: [shop_orders]}"])
        applied = workload.run("dbt", ["run", "--select", "customers_history"])
    finally:
        for lock in locks:
            run_locks.release(lock)
    assert maintained.returncode != 0 and f"mirror {mirror} is in use by another run (pid {os.getpid()}" in maintained.output
    assert applied.returncode != 0 and f"mirror {history} is in use by another run (pid {os.getpid()}" in applied.output

    # Held by another process: maintenance waits for it, and maintains once it ends.
    monkeypatch.setenv(run_locks.LOCK_WAIT, "300")
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(locks[0])], cwd=PROJECT_DIR,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        maintenance = workload.start("dbt", ["run-operation", "cdc_maintain", "--args", "{models: [shop_orders]}"])
        said = []
        while not any(f"mirror {mirror} is in use by another run" in line for line in said):
            line = maintenance.stdout.readline()
            assert line, "".join(said)[-3000:]
            said.append(line)
    finally:
        holder.kill()
        holder.wait()
    said.append(maintenance.communicate(timeout=600)[0])
    assert maintenance.returncode == 0, "".join(said)[-3000:]
    assert f"cdc_merge maintenance {mirror}: " in "".join(said)
    workload.deliver()
    healed = workload.run_here(["run", *LANDING_AND_MIRRORS, "customers_history"])
    assert healed.returncode == 0, healed.output[-3000:]
    assert all(c.ok for c in workload.compare().values())


def test_a_lost_commit_race_says_what_failed_and_that_nothing_was_committed(spark):
    """Iceberg refuses to publish a branch when main moved after it was made (another run's commit);
    the error dbt shows names that exception, not only Py4J's "An error occurred while calling o55.sql."."""
    from dbt.adapters.cdc_spark.connections import engine_error_message

    spark.sql("create namespace if not exists race")
    spark.sql("create or replace table race.mirror (id bigint) using iceberg")
    spark.sql("insert into race.mirror values (1)")
    spark.sql("alter table race.mirror create branch cdc_merge_batch")
    spark.sql("insert into race.mirror.branch_cdc_merge_batch values (2)")
    spark.sql("insert into race.mirror values (3)")  # the other run's commit on main
    with pytest.raises(Exception) as raised:
        spark.sql("call system.fast_forward('race.mirror', 'main', 'cdc_merge_batch')")

    message = engine_error_message(raised.value)
    assert "Cannot fast-forward: main is not an ancestor of cdc_merge_batch" in message
    assert "Nothing of this statement was committed and the mirror's offset did not advance: run again." in message
    assert sorted(row.id for row in spark.table("race.mirror").collect()) == [1, 3]


def test_two_runs_of_one_batch_on_two_machines_commit_it_once(spark):
    """Two runs of one mirror that the file lock does not join (two machines, or the cluster target,
    which takes no lock in dbt's process) classify one batch at the same snapshot of main, and both
    pass OneCommitBatch's check of the current snapshot before either commits. The second commit must
    fail, with nothing of it committed: else the replaced row's new version and the new key are
    added twice (the same position deleted twice does not show it)."""
    from dbt.adapters.cdc_spark.connections import engine_error_message
    from dbt.adapters.cdc_spark.position_deletes import commit_one_batch

    table = "race.one_commit"
    spark.sql("create namespace if not exists race")
    spark.sql(f"create or replace table {table} (id bigint, v string, _cdc_key string, _cdc_seq string) using iceberg")
    spark.sql(f"insert into {table} values (1, 'stored', '1', '001'), (3, 'stored', '3', '001')")
    (classified_at,) = [row.snapshot_id for row in spark.sql(f"select snapshot_id from {table}.snapshots").collect()]
    # The batch both runs read: key 1 updated (its stored row deleted at its position), key 2 new, key 3 deleted.
    positions = f"select xxhash64(_file) as file_hash, _pos as pos, _cdc_key from {table} where id in (1, 3)"
    rows = "select 1 as id, 'new' as v, '1' as _cdc_key, '002' as _cdc_seq union all select 2, 'new', '2', '002'"

    def batch(before_commit) -> int:
        return commit_one_batch(spark, table, str(classified_at), positions, 2, rows, 2, before_commit)

    with pytest.raises(Exception) as raised:
        batch(before_commit=lambda: batch(before_commit=lambda: None))  # the other run commits first

    message = engine_error_message(raised.value) or str(raised.value)
    assert f"{table} was committed by another writer since its batch was classified at snapshot {classified_at}" in message
    assert "Nothing of this statement was committed" in message
    assert sorted((row.id, row.v) for row in spark.table(table).collect()) == [(1, "new"), (2, "new")]
    assert spark.sql(f"select count(*) as n from {table}.snapshots").first().n == 2
