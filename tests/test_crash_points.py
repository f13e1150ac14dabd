"""The bounded part of the crash suite (reliability/crashes.py runs all points): a `dbt run` or
`cdc-run` process killed at a named crash point (python_jobs/crash_points.py), then one plain
`dbt run`, leaves every mirror equal to the oracle of the delivered events.

Each point is a real process with its own SparkSession, killed with SIGKILL with its JVM. The
workload lives in the suite's warehouse, so that the first run and each rerun are dbt in this
process, on the suite's SparkSession (as cdc-run reruns), without a JVM to start.
"""

from __future__ import annotations

import pytest

from python_jobs import crash_points
from reliability.crashes import crash_and_heal
from reliability.workload import LANDING_AND_MIRRORS, Workload

# One worker runs the module: its tests share one workload (Makefile: --dist loadgroup).
pytestmark = pytest.mark.xdist_group("crashes")


@pytest.fixture(scope="module")
def workload(tmp_path_factory, spark, warehouse):
    workload = Workload(tmp_path_factory.mktemp("crashes") / "suite", waves=6, warehouse=warehouse,
                        schema="crash_mirror", raw_schema="crash_raw")
    workload.deliver()
    first = workload.run_here(["run", *LANDING_AND_MIRRORS])
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
        # A full refresh dies once the table it builds aside holds the first chunk, before any offset of
        # its own: the mirror and its offset are as they were, and the rerun applies what is new.
        ("full-refresh-before-offset", "dbt"),
        # A full refresh has applied every event aside and dies before the mirror takes its rows.
        ("rebuild-before-swap", "dbt"),
        # ... and dies once the mirror holds the rebuilt rows, before its offset moves: the rerun
        # applies the events after the old offset again, which must change nothing.
        ("rebuild-after-swap", "dbt"),
        # A full refresh dies while it drops a table (the one it built aside, once in place), its files
        # half deleted: the name must be the whole table or none, never a table whose manifests are gone.
        ("table-drop", "dbt"),
    ],
)
def test_a_run_killed_at_a_crash_point_is_healed_by_the_next_run(workload, point, driver):
    trial = crash_and_heal(workload, point, driver, rerun_here=True)

    assert trial.interrupted, f"the run was not killed at {point}"
    assert trial.heal_succeeded, trial.details
    assert (trial.rows_lost, trial.rows_duplicated, trial.rows_wrong) == (0, 0, 0), trial.details


def test_a_crash_point_is_reached_only_when_named_and_at_the_visit_asked(monkeypatch):
    monkeypatch.delenv(crash_points.CRASH_AT, raising=False)
    assert not crash_points.armed("apply-before-offset")
    monkeypatch.setenv(crash_points.CRASH_AT, "apply-before-offset@3")
    assert [crash_points.armed("apply-before-offset") for _ in range(4)] == [False, False, True, False]
    assert not crash_points.armed("maintenance")

