"""cdc-run (python_jobs/scheduler/run_loop.py): dbt again and again in one process."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import FIXTURES, PROJECT_DIR
from python_jobs.apply import key_index
from python_jobs.scheduler import run_loop
from python_jobs.scheduler.dbt_artifacts import JsonArtifacts

PRODUCTS = {"inventory.products": ["id"]}
FLINK_MYSQL = FIXTURES / "flink" / "debezium-data-schema-exclude.txt"
PRODUCTS_CONFIG = "unique_key='id', source_table='inventory.products'"
PRODUCTS_COLUMNS = "{{ cdc_merge.cdc_column('id', 'int') }}, {{ cdc_merge.cdc_column('name', 'string') }}, {{ cdc_merge.cdc_metadata_columns() }}"


def dbt_args(project, *command: str) -> list[str]:
    return [*command, "--project-dir", str(project.project_dir), "--profiles-dir", str(PROJECT_DIR / "profiles"), "--target", "local"]


def test_each_run_lands_and_applies_what_arrived_since_the_one_before(dbt_project, spark):
    project = dbt_project
    project.write_model("products", PRODUCTS_CONFIG, PRODUCTS_COLUMNS)
    project.landing_config(PRODUCTS)
    project.inbox
    mirrored_after_each_run, landed_after_each_run = [], []

    def run_then_deliver(args):
        outcome = run_loop.invoke_dbt(args)
        mirrored_after_each_run.append([row["id"] for row in project.query(f"select id from {project.schema}.products order by id")])
        landed_after_each_run.append(project.query(f"select count(*) as events from {project.raw_schema}.raw_events")[0]["events"])
        shutil.copy(FLINK_MYSQL, project.inbox / f"part-{len(mirrored_after_each_run)}.json")
        return outcome

    summary = run_loop.run_every(dbt_args(project, "run", "--select", "raw_events", "products"), every=0, runs=3, run=run_then_deliver)

    assert [run.success for run in summary.runs] == [True, True, True]
    assert summary.runs[0].statuses == {"success": 2}
    # Nothing before the first run; the file delivered after it; the same file again changes nothing.
    assert mirrored_after_each_run == [[], list(range(101, 111)), list(range(101, 111))]
    first_file = landed_after_each_run[1]
    assert first_file > 0 and landed_after_each_run == [0, first_file, 2 * first_file]


def test_a_failed_run_stops_the_loop_unless_keep_going(dbt_project, monkeypatch):
    dbt_project.write_model("bad_products", "source_table='inventory.products'", PRODUCTS_COLUMNS)
    args = dbt_args(dbt_project, "run", "--select", "bad_products")

    stopped = run_loop.run_every(args, every=0, runs=3)
    assert [run.success for run in stopped.runs] == [False]
    assert "set unique_key to the primary-key column" in stopped.runs[0].line()

    kept_going = run_loop.run_every(args, every=0, runs=2, keep_going=True)
    assert [run.success for run in kept_going.runs] == [False, False]
    # As cdc-run sets it, restored after this test (the tests' other runs are plain `dbt run`s).
    monkeypatch.setenv(key_index.KEY_INDEX_MAX_KEYS_ENV, str(key_index.SERVICE_MAX_KEYS))
    assert run_loop.main(["--every", "0", "--runs", "1", "--keep-going", "--", *args]) == 1


def test_a_failed_run_operation_is_reported_with_its_message(dbt_project):
    """A run-operation's result names no node, only its unique_id: the failure still reads as one."""
    (dbt_project.project_dir / "macros" / "refuse_to_run.sql").write_text(
        "{% macro refuse_to_run() %}{{ exceptions.raise_compiler_error('the operation refused') }}{% endmacro %}\n")

    outcome = run_loop.invoke_dbt(dbt_args(dbt_project, "run-operation", "refuse_to_run"))

    assert not outcome.success
    assert "the operation refused" in outcome.line()
    assert outcome.failed_nodes == []  # an operation is no mirror


def test_runs_start_every_interval_from_one_start_to_the_next_and_a_late_run_is_followed_at_once():
    starts = []

    def run_taking(seconds):
        def run(_args):
            starts.append(time.monotonic())
            time.sleep(seconds)
            return run_loop.RunOutcome(True, seconds)
        return run

    run_loop.run_every(["run"], every=0.5, runs=3, run=run_taking(0.2))
    gaps = [later - earlier for earlier, later in zip(starts, starts[1:])]
    assert all(0.45 <= gap < 0.9 for gap in gaps), gaps
    # Counted from each start, not from the end of each run (that would be 1.4 s).
    assert 0.95 <= starts[2] - starts[0] < 1.25, gaps

    starts.clear()
    run_loop.run_every(["run"], every=0.2, runs=2, run=run_taking(0.5))
    assert starts[1] - starts[0] < 0.6


def test_after_a_long_run_the_schedule_goes_on_from_the_late_start(caplog):
    """One run of 1.1 s at --every 0.2 s: the next starts at once, then every 0.2 s again from its start,
    not five runs back to back for the slots it missed, nor the one after it early at the next slot of
    a grid from the first start; and only the long run is said to be long."""
    starts = []

    def run(_args):
        starts.append(time.monotonic())
        seconds = 1.1 if len(starts) == 1 else 0.02
        time.sleep(seconds)
        return run_loop.RunOutcome(True, seconds)

    with caplog.at_level("INFO", logger="cdc_merge"):
        run_loop.run_every(["run"], every=0.2, runs=5, run=run)
    gaps = [later - earlier for earlier, later in zip(starts, starts[1:])]
    assert 1.1 <= gaps[0] < 1.2, gaps  # at once after the long one
    assert all(0.2 <= gap < 0.3 for gap in gaps[1:]), gaps  # every 0.2 s from the late start, no burst
    assert sum("longer than --every" in record.message for record in caplog.records) == 1


def test_the_captures_are_asked_for_their_files_just_before_each_run():
    calls = []
    run_loop.run_every(["run"], every=0, runs=3, run=lambda _args: calls.append("run") or run_loop.RunOutcome(True, 0.0),
                       before_each=lambda: calls.append("captures written"))
    assert calls == ["captures written", "run"] * 3


@pytest.mark.parametrize(("argv", "message"), [
    (["--every", "-1"], "--every must be 0 or more seconds, got -1"),
    (["--every", "60", "--runs", "-2"], "--runs must be 0 (no limit) or more, got -2"),
])
def test_bad_arguments_fail_before_any_run(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        run_loop.main(argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_sigterm_stops_the_loop_after_the_run_in_progress(dbt_project):
    env = {**os.environ, "PYTHONPATH": str(PROJECT_DIR)}
    # dbt parse: a real dbt command without a SparkSession, so the process starts fast.
    loop = subprocess.Popen(
        [sys.executable, "-m", "python_jobs.scheduler.run_loop", "--every", "600", "--", *dbt_args(dbt_project, "parse")],
        cwd=PROJECT_DIR, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    output = []
    for line in loop.stdout:
        output.append(line)
        if "run 1: ok" in line:
            break
    assert any("run 1: ok" in line for line in output), "".join(output)
    sent = time.monotonic()
    loop.send_signal(signal.SIGTERM)
    rest, _ = loop.communicate(timeout=60)
    assert loop.returncode == 0, "".join(output) + rest
    assert time.monotonic() - sent < 30
    assert "SIGTERM: stopping after the run in progress" in rest
    assert "cdc-run: 1 runs, 0 failed" in rest


def test_dbt_s_json_artifacts_are_written_again_only_once_dbt_parsed_again(dbt_project):
    """run_results.json after every run; manifest.json by the first run, and again by the run after
    one that parsed a changed model (python_jobs/scheduler/dbt_artifacts.py)."""
    dbt_project.write_model("products", PRODUCTS_CONFIG, PRODUCTS_COLUMNS)
    target = dbt_project.project_dir / "target"
    artifacts = JsonArtifacts()
    manifests, results = [], []

    def run_and_look(args):
        outcome = run_loop.invoke_dbt(args, artifacts)
        manifests.append(((target / "manifest.json").stat().st_mtime_ns, "-- edited" in (target / "manifest.json").read_text()))
        results.append(json.loads((target / "run_results.json").read_text())["metadata"]["invocation_id"])
        if len(results) == 2:  # a model edited while the service runs
            model = dbt_project.project_dir / "models" / "mirrors" / "products.sql"
            model.write_text(model.read_text() + "\n-- edited\n")
        return outcome

    summary = run_loop.run_every(dbt_args(dbt_project, "run", "--select", "products"), every=0, runs=4, run=run_and_look)

    assert all(run.success for run in summary.runs)
    assert len(set(results)) == 4  # each run's own results
    # Written by the first run; not by the second, nor by the third, which parsed the edit; by the fourth.
    assert manifests[1] == manifests[2] == manifests[0] and manifests[0][1] is False
    assert manifests[3][0] != manifests[0][0] and manifests[3][1] is True
