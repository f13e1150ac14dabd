"""Two runs of one mirror on the `cluster` target, as two machines would start them (an orchestrator
retrying a task on another worker while the first still runs): the file locks of run_locks.py are
kept apart (each process its own TMPDIR), so only the lock in the catalog's PostgreSQL database
(python_jobs/catalog_locks.py) can serialize them. Without it both applied the mirror at once
through the Thrift server, sharing its batch branch and changes table: duplicated keys and undone
deletes (RELIABILITY.md, "Concurrency"). A module of its own, on a cluster of its own (about 20 s
to start), beside test_cluster.py's."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import PROJECT_DIR
from harness.dbt_project import dbt_args
from harness.mirror_project import make_project
from python_jobs import catalog_locks, run_locks
from python_jobs.demo.generate import KEYS, build_waves, write_wave
from test_cluster import cluster  # noqa: F401 - fixture
from test_oracle import assert_mirrors_equal_replay

pytestmark = pytest.mark.xdist_group("cluster")

MIRROR = {"shop.customers": "shop_customers"}


def catalog_database() -> catalog_locks.CatalogDatabase:
    settings = {"spark.sql.defaultCatalog": "lake", "spark.sql.catalog.lake.type": "jdbc",
                "spark.sql.catalog.lake.uri": os.environ["CDC_MERGE_CATALOG_URI"],
                "spark.sql.catalog.lake.jdbc.user": os.environ["CDC_MERGE_CATALOG_USER"]}
    database = catalog_locks.catalog_database(settings)
    assert database is not None
    return database


def test_two_machines_apply_one_mirror_one_after_the_other(cluster, tmp_path):  # noqa: F811
    project = make_project(None, tmp_path, "cluster")
    project.landing_config(KEYS)
    _, waves = build_waves(37, events=600, waves=2, connector="postgresql", snapshot_rows=20,
                           late_fraction=0.1, duplicate_fraction=0.05)
    mirror = f"{project.schema}.{MIRROR['shop.customers']}"

    def start(machine: str, wait: float = 600) -> subprocess.Popen:
        env = {**os.environ, "CDC_MERGE_SCHEMA": project.schema, "CDC_MERGE_RAW_SCHEMA": project.raw_schema,
               "TMPDIR": str(tmp_path / machine), run_locks.LOCK_WAIT: str(wait), "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"}
        (tmp_path / machine).mkdir(exist_ok=True)
        command = [str(Path(sys.executable).parent / "dbt"),
                   *dbt_args(project.project_dir, ["run", "--select", *MIRROR.values()], target="cluster")]
        return subprocess.Popen(command, cwd=PROJECT_DIR, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True)

    write_wave(waves[0], project.inbox)
    project.dbt("run", "--select", "raw_events", *MIRROR.values())
    # New keys, updates and deletes for both runs below to apply.
    write_wave(waves[1], project.inbox)
    project.dbt("run", "--select", "raw_events")

    # Another machine holds the mirror: this run waits 2 s, then stops naming it, having changed nothing.
    version = project.table_version(mirror)
    database = catalog_database()
    catalog_locks.acquire(database, "mirror", mirror, f"{mirror} in the test")
    try:
        held = start("machine-b", wait=2)
        output = held.communicate(timeout=600)[0]
    finally:
        catalog_locks.release(database, "mirror", mirror)
    assert held.returncode != 0
    assert f"mirror {mirror} is in use by another run (pid {os.getpid()} on " in output, output[-3000:]
    assert project.table_version(mirror) == version

    # Two machines at once, with the same events to apply: one waits for the other, then finds nothing new.
    first = start("machine-a")
    time.sleep(1)
    second = start("machine-b")
    outputs = [process.communicate(timeout=900)[0] for process in (first, second)]
    assert [first.returncode, second.returncode] == [0, 0], "\n".join(output[-3000:] for output in outputs)
    assert "is in use by another run" in "".join(outputs)
    keys = project.query(f"select count(*) as rows, count(distinct id) as keys from {mirror}")[0]
    assert keys["rows"] == keys["keys"], keys
    assert_mirrors_equal_replay(project, waves[0].delivered + waves[1].delivered, "hard", models=MIRROR)

    # A holder killed with SIGKILL leaves no lock behind: the catalog's database ends its session.
    hold = (f"import time\nfrom python_jobs import catalog_locks\ndatabase = catalog_locks.{database!r}\n"
            f"catalog_locks.acquire(database, 'mirror', {mirror!r}, 'x')\nprint('held', flush=True)\ntime.sleep(600)")
    holder = subprocess.Popen([sys.executable, "-c", hold], cwd=PROJECT_DIR, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    with pytest.raises(run_locks.LockBusy, match=f"pid {holder.pid} on "):
        catalog_locks.acquire(database, "mirror", mirror, mirror, wait=0)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    catalog_locks.acquire(database, "mirror", mirror, mirror, wait=30)
    catalog_locks.release(database, "mirror", mirror)
