"""The bounded part of the crash suite (reliability/crashes.py runs all points): a `dbt run` or
`cdc-run` process killed at a named crash point (python_jobs/crash_points.py), then one plain
`dbt run`, leaves every mirror equal to the oracle of the delivered events.

Each point is a real process with its own SparkSession, killed with SIGKILL with its JVM.
"""

from __future__ import annotations

import uuid

import pytest

from python_jobs import crash_points
from reliability.crashes import crash_and_heal
from reliability.workload import LANDING_AND_MIRRORS, Workload
from test_idle_runs import applied_once
from test_oracle import SHOP_MODELS, assert_mirrors_equal_replay


@pytest.fixture(scope="module")
def workload(tmp_path_factory):
    workload = Workload(tmp_path_factory.mktemp("crashes") / "suite", waves=6)
    workload.deliver()
    first = workload.run("dbt", ["run", *LANDING_AND_MIRRORS])
    assert first.returncode == 0, first.output[-3000:]
    assert all(comparison.ok for comparison in workload.compare().values())
    yield workload
    workload.close()


@pytest.mark.parametrize(
    "point, driver",
    [
        # The landing dies while the raw table's data files are written, before their commit.
        ("landing-raw-write", "dbt"),
        # A mirror's batch is on its branch, not yet published; in cdc-run's process.
        ("apply-before-publish", "cdc-run"),
        # Every mirror committed, none of the offsets written once for the run: all replayed.
        ("apply-before-run-rows", "dbt"),
        # A full refresh dies once the new mirror holds the first chunk, before any offset of its own:
        # the rerun must rebuild from the start of the log, not resume from the old offset.
        ("full-refresh-before-offset", "dbt"),
    ],
)
def test_a_run_killed_at_a_crash_point_is_healed_by_the_next_run(workload, point, driver):
    trial = crash_and_heal(workload, point, driver)

    assert trial.interrupted, f"the run was not killed at {point}"
    assert trial.heal_succeeded, trial.details
    assert (trial.rows_lost, trial.rows_duplicated, trial.rows_wrong) == (0, 0, 0), trial.details


def test_a_crash_point_is_reached_only_when_named_and_at_the_visit_asked(monkeypatch):
    monkeypatch.delenv(crash_points.CRASH_AT, raising=False)
    assert not crash_points.armed("apply-before-offset")
    monkeypatch.setenv(crash_points.CRASH_AT, "apply-before-offset@3")
    assert [crash_points.armed("apply-before-offset") for _ in range(4)] == [False, False, True, False]
    assert not crash_points.armed("maintenance")


def test_a_mirror_left_half_created_by_a_killed_process_is_rebuilt_by_the_next_run(dbt_project, warehouse):
    """A process killed inside a Hadoop catalog's CREATE leaves the table's directory with an
    uncommitted metadata file and no version: SHOW TABLES lists it, nothing can load it. The next
    run must rebuild that mirror from the start of the log, not fail on it."""
    project = applied_once(dbt_project)
    metadata = warehouse / project.schema / "shop_orders" / "metadata"
    for path in metadata.iterdir():
        if path.name == "version-hint.text" or path.name.startswith(("v", ".v")):
            path.unlink() if path.name != "v1.metadata.json" else path.rename(metadata / f"{uuid.uuid4()}.metadata.json")
    assert "shop_orders" in [row["tableName"] for row in project.query(f"show tables in {project.schema}")]

    project.dbt("run", "--select", *SHOP_MODELS)
    assert "shop_orders: listed by the catalog but without a committed version" in project.dbt_log()
    assert_mirrors_equal_replay(project, project.waves[0].delivered, "hard")
