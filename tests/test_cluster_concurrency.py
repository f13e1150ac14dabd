"""Two runs of one mirror, or of one consistency group, on the `cluster` target, as two machines would
start them (an orchestrator retrying a task on another worker while the first still runs): the file locks of run_locks.py are
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
from python_jobs.demo.transaction_checks import MIRRORS as TX_MIRRORS
from python_jobs.demo.transaction_checks import newest_state
from python_jobs.demo.transaction_source import KEYS as TX_KEYS
from python_jobs.demo.transaction_source import SCHEMA_OF, SplitDelivery, TransactionTopics
from test_cluster import cluster  # noqa: F401 - fixture
from test_consistent_cuts import GROUP_CONFIG, OPENING, mirror_sql, write
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


def start_run(project, machine: Path, selected: list[str], wait: float = 600) -> subprocess.Popen:
    """`dbt run --select selected` on the cluster target as another machine would start it: its own
    TMPDIR (machine), so no file lock of run_locks.py is shared."""
    env = {**os.environ, "CDC_MERGE_SCHEMA": project.schema, "CDC_MERGE_RAW_SCHEMA": project.raw_schema,
           "TMPDIR": str(machine), run_locks.LOCK_WAIT: str(wait), "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"}
    machine.mkdir(exist_ok=True)
    command = [str(Path(sys.executable).parent / "dbt"),
               *dbt_args(project.project_dir, ["run", "--select", *selected], target="cluster")]
    return subprocess.Popen(command, cwd=PROJECT_DIR, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)


def test_two_machines_apply_one_mirror_one_after_the_other(cluster, tmp_path):  # noqa: F811
    project = make_project(None, tmp_path, "cluster")
    project.landing_config(KEYS)
    _, waves = build_waves(37, events=600, waves=2, connector="postgresql", snapshot_rows=20,
                           late_fraction=0.1, duplicate_fraction=0.05)
    mirror = f"{project.schema}.{MIRROR['shop.customers']}"

    def start(machine: str, wait: float = 600) -> subprocess.Popen:
        return start_run(project, tmp_path / machine, list(MIRROR.values()), wait)

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


def test_two_machines_apply_one_consistency_group_one_after_the_other(cluster, tmp_path):  # noqa: F811
    """A group's mirrors stage their commits in the group's catalog transaction until its cut publishes
    it. A second run of the group that joined meanwhile discarded the first run's transaction: the
    first failed ("the catalog transaction ... is closed"). The second now waits for the group, held
    by the first run until its publish, then applies what is new after it."""
    project = make_project(None, tmp_path, "cluster")
    project.landing_config(TX_KEYS)
    for table in TX_MIRRORS:
        project.write_model(table, f"{GROUP_CONFIG}unique_key='id', source_table='{SCHEMA_OF[table]}.{table}'",
                            mirror_sql(table))
    topics = TransactionTopics(8, OPENING, seed=41)
    delivery = SplitDelivery(topics)
    whole = {"total": topics.total, "unbalanced_accounts": 0, "broken_orders": 0}
    for wave in (1, 2):
        everything = wave == 2
        for topic, events in delivery.wave(0 if everything else 10, 0 if everything else 6, everything=everything).items():
            write(project.inbox / f"w{wave:02d}-{topic}.json", events)
        project.dbt("run", "--select", "raw_events", *(TX_MIRRORS if wave == 1 else ()))

    # Both machines at once, with the second wave to apply: one waits for the other's publish.
    first = start_run(project, tmp_path / "machine-a", list(TX_MIRRORS))
    time.sleep(1)
    second = start_run(project, tmp_path / "machine-b", list(TX_MIRRORS))
    outputs = [process.communicate(timeout=900)[0] for process in (first, second)]
    assert [first.returncode, second.returncode] == [0, 0], "\n".join(output[-3000:] for output in outputs)
    assert "consistency group bank is in use by another run" in "".join(outputs)
    assert newest_state(project.query, project.schema, "", OPENING) == whole
    for table in TX_MIRRORS:
        keys = project.query(f"select count(*) as rows, count(distinct id) as keys from {project.schema}.{table}")[0]
        assert keys["rows"] == keys["keys"], (table, keys)
