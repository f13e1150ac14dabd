"""The offsets and cdc_merge_runs rows of a run's mirrors, written once for all of them
(adapter kept_rows.py, macros kept_rows.sql, docs/apply_design.md): one commit per table per run,
written in the driver (kept_rows_in_driver.py) or by an INSERT;
a mirror that fails does not keep the others' rows from being written as the run ends; the crash
between the mirrors' commits and these rows is tests/test_crash_points.py's apply-before-run-rows."""

from __future__ import annotations

import threading
import time

from dbt.adapters.cdc_core import run_state
from dbt.adapters.cdc_spark import kept_rows_in_driver
from python_jobs import run_locks
from python_jobs.commit_race import run_idempotent
from python_jobs.demo.generate import KEYS, write_wave
from test_idle_runs import applied_once
from test_materialization import record_statements
from test_oracle import SHOP_MODELS, assert_mirrors_equal_replay
from test_raw_ranges import jobs_run_by

import pytest


@pytest.fixture
def shop(dbt_project):
    return applied_once(dbt_project)


def newest_offsets(project) -> dict[str, str]:
    rows = project.query(
        "select target_table, offset_snapshot from ("
        " select target_table, cast(offset_snapshot as string) as offset_snapshot,"
        " row_number() over (partition by target_table order by offset_ordinal desc) as newest"
        f" from {project.schema}.cdc_merge_offsets) as ranked where newest = 1")
    return {row["target_table"]: row["offset_snapshot"] for row in rows}


def current_raw_snapshot(project) -> str:
    return project.table_version(f"{project.raw_schema}.raw_events")


def ordinals(project, target_table: str) -> list[int]:
    return [row["offset_ordinal"] for row in project.query(
        f"select offset_ordinal from {project.schema}.cdc_merge_offsets where target_table = '{target_table}' order by 1")]


def snapshots(project, table: str) -> list[dict]:
    return project.query(f"select snapshot_id, summary['cdc-merge.apply'] as apply from {table}.snapshots")


@pytest.mark.parametrize("in_driver", [True, False], ids=["in_driver", "insert"])
def test_a_run_writes_every_mirrors_offset_and_runs_row_in_one_commit_each(shop, monkeypatch, in_driver):
    """In the driver (kept_rows_in_driver.py: the tables the rows' SELECT reads are small), or by
    one INSERT each when they are not."""
    project = shop
    orders = f"{project.schema}.shop_orders"
    ordinals_before = ordinals(project, orders)
    tables = [f"{project.schema}.cdc_merge_offsets", f"{project.schema}.cdc_merge_runs"]
    snapshots_before = {table: snapshots(project, table) for table in tables}
    write_wave(project.waves[1], project.inbox)
    project.land(KEYS)

    appended_jobs = []
    append = kept_rows_in_driver.append

    def counted(spark, statement):
        appended_jobs.append(jobs_run_by(spark, lambda: append(spark, statement)))

    with monkeypatch.context() as patch:
        statements = record_statements(patch)
        patch.setattr(kept_rows_in_driver, "append", counted)
        if not in_driver:
            # Tables too large to read in the driver, in a process that has not followed them.
            patch.setattr(kept_rows_in_driver, "MAX_DRIVER_RECORDS", -1)
            run_state.STATE.offsets.forget()
            run_state.STATE.run_starts.forget()
        project.dbt("run", "--select", *SHOP_MODELS)

    # No Spark job for either table. The offsets' ordinals are known from the run's own read of every
    # mirror's newest offset while the table stays at that snapshot (followed_rows.py), so the
    # offsets rows are appended in the driver either way.
    assert appended_jobs == ([0, 0] if in_driver else [0]), appended_jobs

    inserts = [sql.split(" ")[2] for sql in statements if sql.startswith("insert into ")]
    for table, by_insert in zip(tables, (False, not in_driver)):
        new = [row for row in snapshots(project, table) if row not in snapshots_before[table]]
        assert len(new) == 1, (table, new)
        assert (new[0]["apply"] == "rows-in-driver") != by_insert, (table, new)
        assert inserts.count(table) == int(by_insert), inserts
    current = current_raw_snapshot(project)
    assert {table: snapshot for table, snapshot in newest_offsets(project).items()} == {
        f"{project.schema}.{model}": current for model in SHOP_MODELS}
    assert ordinals(project, orders) == ordinals_before + [ordinals_before[-1] + 1]
    runs = project.query(
        f"select target_table, events_read, lag_seconds, offset_snapshot from {project.schema}.cdc_merge_runs"
        f" where invocation_id = (select invocation_id from {project.schema}.cdc_merge_runs order by finished_at desc limit 1)")
    assert sorted(row["target_table"] for row in runs) == sorted(f"{project.schema}.{model}" for model in SHOP_MODELS)
    assert all(row["events_read"] > 0 and row["lag_seconds"] is not None and row["offset_snapshot"] == current for row in runs), runs
    assert not [path for path in run_locks._held if "mirror-" in str(path)], run_locks._held
    assert_mirrors_equal_replay(project, project.waves[0].delivered + project.waves[1].delivered, "hard")


def test_when_a_mirror_fails_the_others_offsets_are_written_as_the_run_ends(shop):
    project = shop
    before = newest_offsets(project)
    write_wave(project.waves[1], project.inbox)
    project.land(KEYS)
    broken = project.project_dir / "models" / "mirrors" / "shop_orders.sql"
    broken.write_text(broken.read_text().replace("from events", "from events where no_such_column = 1", 1))

    project.dbt("run", "--select", *SHOP_MODELS, expect_success=False)

    current = current_raw_snapshot(project)
    after = newest_offsets(project)
    assert after[f"{project.schema}.shop_orders"] == before[f"{project.schema}.shop_orders"] != current
    assert after[f"{project.schema}.shop_customers"] == after[f"{project.schema}.shop_order_lines"] == current
    assert not [path for path in run_locks._held if "mirror-" in str(path)], run_locks._held


def test_a_runs_table_made_before_the_cut_lag_columns_gets_them_and_keeps_its_rows(dbt_project):
    project = dbt_project
    runs = f"{project.schema}.cdc_merge_runs"
    project.query(f"create namespace if not exists {project.schema}")
    project.query(
        f"create table {runs} (target_table string, invocation_id string, raw_table string, source_table string, "
        "started_at timestamp, finished_at timestamp, run_seconds double, chunks bigint, events_read bigint, "
        "rows_inserted bigint, rows_updated bigint, rows_deleted bigint, events_skipped bigint, lines_quarantined bigint, "
        "offset_snapshot string, newest_source_ts timestamp, lag_seconds double, maintenance string, files_added bigint, "
        "files_removed bigint, snapshots_expired bigint, orphan_files_removed bigint, raw_events_removed bigint, "
        "tombstones_removed bigint, offsets_removed bigint) using iceberg")
    project.query(f"insert into {runs} select 'old.mirror', 'old', " + ", ".join(["null"] * 23))

    applied_once(project)

    rows = project.query(f"select target_table, consistency_group, cut_lag_seconds from {runs} order by target_table")
    assert [row["target_table"] for row in rows] == sorted(["old.mirror"] + [f"{project.schema}.{model}" for model in SHOP_MODELS])
    # The shop mirrors are in no consistency group.
    assert all(row["consistency_group"] is None and row["cut_lag_seconds"] is None for row in rows), rows
    # And the table got the bookkeeping tables' properties (snapshot isolation for maintenance's trims).
    assert {row["key"]: row["value"] for row in project.query(f"show tblproperties {runs}")}[
        "write.delete.isolation-level"] == "snapshot"


def test_a_trim_of_the_offsets_table_does_not_fail_on_rows_another_mirror_appends_meanwhile(shop):
    """Maintenance trims one mirror's old offset rows while other mirrors' rows are appended (dbt
    --threads, or another process): with the offsets table's snapshot isolation an append is no
    conflict, and a trim whose table changed while it was planned runs again (commit_race.py), as
    the adapter runs it (cdc_delete_from_shared_table)."""
    project = shop
    offsets = f"{project.schema}.cdc_merge_offsets"
    project.query(f"insert into {offsets} select 'other.mirror', id, null, null, null, 0, 0, 0, 0, 0, null, null, null "
                  "from range(1, 200)")
    properties = {row["key"]: row["value"] for row in project.query(f"show tblproperties {offsets}")}
    assert properties["write.delete.isolation-level"] == "snapshot"
    stop, appended, retried, failed = threading.Event(), [], [], []
    trim = f"delete from {offsets} where target_table = 'other.mirror' and offset_ordinal <= {{keep_after}}"

    def append_rows() -> None:
        ordinal = 1000
        while not stop.is_set():
            try:
                project.query(f"insert into {offsets} select 'another.mirror', {ordinal}, null, null, null, 0, 0, 0, 0, "
                              "0, null, null, null")
            except Exception as error:  # the test fails on it below, not the thread silently
                failed.append(error)
                return
            appended.append(ordinal)
            ordinal += 1
            # Another mirror's offset row every half second or so: busier than many mirrors' runs.
            stop.wait(0.3)

    appender = threading.Thread(target=append_rows)
    appender.start()
    try:
        # Trims start once appends run, and the last one runs again (deleting nothing more) until
        # several appends happened beside them: on a busy machine six trims can outpace two appends.
        deadline = time.monotonic() + 120
        while not appended and time.monotonic() < deadline:
            time.sleep(0.05)
        bounds = list(range(30, 200, 30))
        for keep_after in bounds:
            retried.append(run_idempotent(project.query, trim.format(keep_after=keep_after)))
        while len(appended) <= 3 and not failed and time.monotonic() < deadline:
            retried.append(run_idempotent(project.query, trim.format(keep_after=bounds[-1])))
    finally:
        stop.set()
        appender.join()
    assert not failed, failed
    assert len(appended) > 3
    print(f"{len(appended)} appends beside {len(retried)} trims, which ran {sum(retried)} times more")
    rows = project.query(f"select target_table, count(*) as n from {offsets} where target_table like '%other.mirror' "
                         "group by target_table")
    assert {row["target_table"]: row["n"] for row in rows} == {"other.mirror": 199 - 180, "another.mirror": len(appended)}


def test_the_offsets_table_takes_the_appends_of_eight_threads_at_once(shop):
    """Every mirror of a dbt run appends its offset row at the end of its apply: with --threads 8
    eight appends race for one Iceberg commit. Each loser only retries (an append never conflicts),
    but Iceberg's default of four retries failed a mirror's run now and then (5 of 120 appends)."""
    project = shop
    offsets = f"{project.schema}.cdc_merge_offsets"
    failed, appended = [], []

    def append_rows(thread: int) -> None:
        for ordinal in range(12):
            try:
                project.query(f"insert into {offsets} select 'thread.{thread}', {ordinal}, null, null, null, 0, 0, 0, 0, "
                              "0, null, null, null")
                appended.append((thread, ordinal))
            except Exception as error:  # counted and shown below
                failed.append(str(error).splitlines()[:2])

    threads = [threading.Thread(target=append_rows, args=(thread,)) for thread in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failed, failed
    rows = project.query(f"select count(*) as n from {offsets} where target_table like 'thread.%'")
    assert rows[0]["n"] == len(appended) == 8 * 12


def test_a_long_lived_process_reads_the_offsets_and_runs_rows_again_only_after_another_writer(dbt_project, monkeypatch):
    """Between the runs of one process the offsets and runs tables are known by their snapshots and
    followed through the process's own appends (followed_rows.py): a run after the process's own
    reads neither; after another writer's commit it reads them again and numbers the new rows on."""
    project = applied_once(dbt_project, waves=4)
    offsets, runs = f"{project.schema}.cdc_merge_offsets", f"{project.schema}.cdc_merge_runs"
    orders = f"{project.schema}.shop_orders"
    read_rows, reads = kept_rows_in_driver.read_rows, []

    def counted(spark, table, *arguments, **options):
        reads.append(table)
        return read_rows(spark, table, *arguments, **options)

    def applied(wave: int) -> list[str]:
        """The statements of a run of the mirrors after the wave landed; reads counted afresh."""
        write_wave(project.waves[wave], project.inbox)
        project.land(KEYS)
        reads.clear()
        with monkeypatch.context() as patch:
            statements = record_statements(patch)
            project.dbt("run", "--select", *SHOP_MODELS)
        return [sql for sql in statements if f"from {offsets}" in sql]

    monkeypatch.setattr(kept_rows_in_driver, "read_rows", counted)
    applied(1)
    offsets_queries = applied(2)
    assert offsets_queries == [] and offsets not in reads and runs not in reads, (offsets_queries, reads)
    assert ordinals(project, orders) == list(range(1, len(ordinals(project, orders)) + 1))

    # Another writer: a mirror of another process keeps its offsets in the same table.
    project.query(f"insert into {offsets} select 'other.mirror', 1, null, null, null, 0, 0, 0, 0, 0, null, null, null")
    assert len(applied(3)) == 1
    assert reads.count(runs) == 0 and reads.count(offsets) == 0, reads

    current = current_raw_snapshot(project)
    assert {table: snapshot for table, snapshot in newest_offsets(project).items() if table != "other.mirror"} == {
        f"{project.schema}.{model}": current for model in SHOP_MODELS}
    assert ordinals(project, orders) == list(range(1, len(ordinals(project, orders)) + 1))
    assert_mirrors_equal_replay(project, [event for wave in project.waves[:4] for event in wave.delivered], "hard")
