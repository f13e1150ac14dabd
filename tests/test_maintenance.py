"""Maintenance of mirrors that run for a long time (docs/maintenance.md): compaction, snapshot
expiry, raw-log retention, tombstone collection, offsets trimming, run metrics and the lag
check, on Spark + Iceberg and on Databend, always against the plain-Python replay of the log.
Why over 300 lines: the helpers that read files, snapshots and offsets serve every step it checks."""

from __future__ import annotations

import json
import shutil

from conftest import FIXTURES
from python_jobs.apply import one_commit
from python_jobs.demo.generate import KEYS, build_waves, replay, write_wave
from test_driver_maintenance import die_at_expiry, record_compactions
from test_materialization import docs_mirror_with_a_pending_batch, record_statements, run_error

ORDERS = "shop.orders"
PRODUCTS = {"inventory.products": ["id"]}
FLINK_MYSQL = FIXTURES / "flink" / "debezium-data-schema-exclude.txt"
LAG_TESTS = """
version: 2
models:
  - name: {model}
    data_tests:
      - cdc_mirror_matches_log:
          arguments:
            source_table: shop.orders
            raw_relation: ref('raw_events')
      - cdc_lag_within:
          arguments:
            max_lag_seconds: "{{{{ var('max_lag_seconds', 1000000000000) }}}}"
            source_table: shop.orders
            raw_relation: ref('raw_events')
"""


def configure_model(project, model: str, **settings) -> None:
    """Adds configs to a model of the project's copy, e.g. maintenance='off'."""
    path = project.project_dir / "models" / "mirrors" / f"{model}.sql"
    added = "".join(f"        {name}={value!r},\n" for name, value in settings.items())
    path.write_text(path.read_text().replace("    config(\n", "    config(\n" + added, 1))


def copy_orders_mirror(project, name: str) -> None:
    """A second mirror of shop.orders, with its own data tests (and the lag check)."""
    mirrors = project.project_dir / "models" / "mirrors"
    shutil.copy(mirrors / "shop_orders.sql", mirrors / f"{name}.sql")
    (mirrors / f"_{name}.yml").write_text(LAG_TESTS.format(model=name))


def land(project, wave) -> list:
    write_wave(wave, project.inbox)
    project.land(KEYS, max_files_per_batch=2)
    return wave.delivered


def assert_orders_equal_replay(project, model: str, delivered) -> None:
    expected = replay(delivered)[ORDERS]
    rows = project.query(f"select * from {project.schema}.{model}")
    actual = {(row["id"],): {k: v for k, v in row.items() if not k.startswith("_cdc_")} for row in rows}
    assert actual == expected, (
        f"{model}: {len(expected.keys() - actual.keys())} missing, {len(actual.keys() - expected.keys())} unexpected, "
        f"{sum(actual[k] != expected[k] for k in actual.keys() & expected.keys())} wrong rows")


def file_counts(project, model: str) -> dict:
    relation = f"{project.schema}.{model}"
    if project.on_databend:
        (row,) = project.query(
            f"select block_count as data_files, 0 as delete_files from fuse_snapshot('{project.schema}', '{model}') "
            "order by timestamp desc limit 1")
    else:
        (row,) = project.query(
            f"select count_if(content = 0) as data_files, count_if(content != 0) as delete_files from {relation}.files")
    return {**row, "snapshots": project.history_length(relation)}


def maintain(project, models, expect_success=True, **settings):
    args = {"models": list(models), "settings": settings}
    return project.dbt("run-operation", "cdc_maintain", "--args", json.dumps(args), expect_success=expect_success)


def latest_offset(project, model: str) -> str:
    (row,) = project.query(
        f"select offset_snapshot from {project.schema}.cdc_merge_offsets where target_table = '{project.schema}.{model}' "
        "order by offset_ordinal desc limit 1")
    return row["offset_snapshot"]


def raw_events(project, at_snapshot: str | None = None, table: str = ORDERS) -> set:
    raw = f"{project.raw_schema}.raw_events"
    if at_snapshot is not None:
        raw += f" at (snapshot => '{at_snapshot}')" if project.on_databend else f" version as of {at_snapshot}"
    rows = project.query(f"select key, seq, landed_file, landed_line from {raw} where table_name = '{table}'")
    return {tuple(row.values()) for row in rows}


def days_before(project, timestamp: str, days: int) -> str:
    """SQL of the timestamp days earlier (Databend has no interval arithmetic on a column)."""
    return f"add_days({timestamp}, -{days})" if project.on_databend else f"{timestamp} - interval {days} days"


def runs_by_age(project) -> dict[tuple[str, str], int]:
    """cdc_merge_runs rows per mirror, those finished over 30 days ago ("aged") and the others."""
    rows = project.query(
        f"select target_table, finished_at < {days_before(project, 'now()', 30)} as aged, count(*) as n "
        f"from {project.schema}.cdc_merge_runs group by 1, 2")
    counts = {(model, age): 0 for model in ("shop_orders", "orders_behind") for age in ("aged", "recent")}
    for row in rows:
        counts[(row["target_table"].rsplit(".", 1)[-1], "aged" if row["aged"] else "recent")] = row["n"]
    return counts


def raw_snapshots(project, older_than: str | None = None) -> set[str]:
    """Ids of the raw table's snapshots (made before snapshot older_than)."""
    if project.on_databend:
        history, column, made = f"fuse_snapshot('{project.raw_schema}', 'raw_events')", "snapshot_id", "timestamp"
    else:
        history, column, made = f"{project.raw_schema}.raw_events.snapshots", "cast(snapshot_id as string)", "committed_at"
    where = f"where {made} < (select {made} from {history} where {column} = '{older_than}')" if older_than else ""
    return {row["id"] for row in project.query(f"select {column} as id from {history} {where}")}


def test_compaction_after_many_small_runs_shrinks_the_mirror_and_keeps_it_equal(conformance_project):
    project = conformance_project
    configure_model(project, "shop_orders", maintenance="off")
    _, waves = build_waves(5, events=600, waves=5, connector="postgresql", snapshot_rows=30,
                           late_fraction=0.05, duplicate_fraction=0.03)
    delivered = []
    for wave in waves:
        delivered += land(project, wave)
        project.dbt("run", "--select", "shop_orders")
    assert_orders_equal_replay(project, "shop_orders", delivered)
    before = file_counts(project, "shop_orders")
    assert before["snapshots"] >= len(waves) and before["data_files"] > 1

    maintain(project, ["shop_orders"], snapshot_retention_hours=0)
    after = file_counts(project, "shop_orders")
    assert_orders_equal_replay(project, "shop_orders", delivered)
    assert after["data_files"] < before["data_files"]
    assert after["delete_files"] == 0
    assert after["snapshots"] < before["snapshots"]
    project.dbt("test", "--select", "shop_orders")


def test_retention_and_expiry_keep_what_a_mirror_behind_still_needs(conformance_project):
    """Two mirrors of shop.orders; one is a wave behind. Maintenance with every horizon at zero
    removes superseded raw events and old raw snapshots, but nothing the mirror behind has not
    applied, nor its offset: it catches up afterwards, and a full refresh rebuilds it."""
    project = conformance_project
    configure_model(project, "shop_orders", maintenance="off")
    copy_orders_mirror(project, "orders_behind")
    _, waves = build_waves(7, events=900, waves=3, connector="mysql", snapshot_rows=30,
                           late_fraction=0.05, duplicate_fraction=0.03)
    delivered = []
    for wave in waves[:2]:
        delivered += land(project, wave)
        project.dbt("run", "--select", "shop_orders", "orders_behind")
    delivered_behind = list(delivered)
    delivered += land(project, waves[2])
    project.dbt("run", "--select", "shop_orders")

    behind_offset = latest_offset(project, "orders_behind")
    landed = raw_events(project)
    not_applied_behind = landed - raw_events(project, behind_offset)
    assert not_applied_behind
    older_than_behind = raw_snapshots(project, older_than=behind_offset)
    assert older_than_behind
    # Behind its offset, and not yet applied: cdc_mirror_matches_log compares up to the offset and
    # passes; the lag check sees the events that wait.
    project.dbt("test", "--select", "orders_behind,test_name:cdc_mirror_matches_log")
    lag_failure = project.dbt("test", "--select", "orders_behind,test_name:cdc_lag_within",
                              "--vars", "{max_lag_seconds: 0}", expect_success=False)
    assert not lag_failure.success

    # Each mirror's runs rows again, 40 days older: past runs_history_days (30) for the one maintained.
    runs_table = f"{project.schema}.cdc_merge_runs"
    columns = list(project.query(f"select * from {runs_table} limit 1")[0])
    aged = ", ".join(f"{days_before(project, name, 40)} as {name}" if name in ("started_at", "finished_at") else name
                     for name in columns)
    project.query(f"insert into {runs_table} select {aged} from {runs_table}")
    runs_before = runs_by_age(project)

    maintain(project, ["shop_orders"], raw_retention_hours=0, snapshot_retention_hours=0,
             tombstone_horizon_hours=0, offsets_history=0)
    runs_after = runs_by_age(project)
    assert runs_after == {**runs_before, ("shop_orders", "aged"): 0}, (runs_before, runs_after)
    assert runs_before[("shop_orders", "aged")] > 0 and runs_before[("orders_behind", "aged")] > 0
    kept = raw_events(project)
    assert not_applied_behind <= kept
    assert len(kept) < len(landed)  # superseded events every mirror applied are gone
    assert behind_offset in raw_snapshots(project)
    assert not older_than_behind & raw_snapshots(project)
    (runs,) = project.query(f"select count(*) as offsets from {project.schema}.cdc_merge_offsets "
                            f"where target_table = '{project.schema}.shop_orders'")
    assert runs["offsets"] == 1
    tombstones = project.query(f"select count(*) as tombstones from {project.schema}.shop_orders__cdc_tombstones")
    assert tombstones[0]["tombstones"] == 0
    assert_orders_equal_replay(project, "shop_orders", delivered)
    assert_orders_equal_replay(project, "orders_behind", delivered_behind)
    project.dbt("test", "--select", "orders_behind,test_name:cdc_mirror_matches_log")

    project.dbt("run", "--select", "orders_behind")
    assert_orders_equal_replay(project, "orders_behind", delivered)
    project.dbt("test", "--select", "orders_behind")
    project.dbt("run", "--select", "orders_behind", "--full-refresh")
    assert_orders_equal_replay(project, "orders_behind", delivered)
    # Still meaningful after retention: a row the log does not explain fails it.
    (first,) = project.query(f"select min(id) as id from {project.schema}.orders_behind")
    project.query(f"delete from {project.schema}.orders_behind where id = {first['id']}")
    assert not project.dbt("test", "--select", "orders_behind,test_name:cdc_mirror_matches_log", expect_success=False).success


def test_a_maintenance_that_dies_between_steps_loses_nothing(dbt_project, monkeypatch):
    """Killed at the raw log's retention (after compaction committed), then at snapshot expiry
    (after retention committed): the mirror stays equal to the replay, and the next run and
    maintenance finish."""
    project = dbt_project
    raw = f"{project.raw_schema}.raw_events"
    configure_model(project, "shop_orders", maintenance="off")
    _, waves = build_waves(11, events=600, waves=3, connector="postgresql", snapshot_rows=30,
                           late_fraction=0.05, duplicate_fraction=0.03)
    delivered = []
    for wave in waves[:2]:
        delivered += land(project, wave)
        project.dbt("run", "--select", "shop_orders")
    landed = raw_events(project)
    for dies_at in [f"merge into {raw}", f"expiry of {project.schema}.shop_orders"]:
        with monkeypatch.context() as patch:
            statements = record_statements(patch, dies_at=dies_at)
            compacted = record_compactions(patch, statements)
            die_at_expiry(patch, dies_at)
            result = maintain(project, ["shop_orders"], expect_success=False,
                              raw_retention_hours=0, snapshot_retention_hours=0)
        assert not result.success and f"killed at {dies_at}" in project.dbt_log()
        assert f"{project.schema}.shop_orders" in compacted()
        assert_orders_equal_replay(project, "shop_orders", delivered)
        if dies_at.startswith("merge"):
            assert raw_events(project) == landed

    delivered += land(project, waves[2])
    project.dbt("run", "--select", "shop_orders")
    assert_orders_equal_replay(project, "shop_orders", delivered)
    maintain(project, ["shop_orders"], raw_retention_hours=0, snapshot_retention_hours=0)
    assert_orders_equal_replay(project, "shop_orders", delivered)
    assert not landed <= raw_events(project)
    project.dbt("test", "--select", "shop_orders")


def runs(project, model: str) -> list[dict]:
    return project.query(
        f"select * from {project.schema}.cdc_merge_runs where target_table = '{project.schema}.{model}' order by finished_at")


def test_a_run_maintains_its_mirror_past_a_threshold_and_records_one_row_per_run(conformance_project):
    project = conformance_project
    project.write_model(
        "products", "unique_key='id', source_table='inventory.products', maintenance_max_snapshots=0, snapshot_retention_hours=0",
        "{{ cdc_merge.cdc_column('id', 'int') }}, {{ cdc_merge.cdc_column('name', 'string') }}, {{ cdc_merge.cdc_metadata_columns() }}")
    mirror = f"{project.schema}.products"
    for part in (1, 2):
        shutil.copy(FLINK_MYSQL, project.inbox / f"part-{part}.json")
        project.land(PRODUCTS)
        project.dbt("run", "--select", "products")
    project.dbt("run", "--select", "products")  # idle

    recorded = runs(project, "products")
    assert len(recorded) == 3
    first, second, idle = recorded
    assert first["events_read"] > 0 and first["rows_inserted"] == 10 and first["chunks"] == 1
    assert first["newest_source_ts"] is not None and first["lag_seconds"] > 0
    assert second["events_skipped"] > 0 and second["rows_inserted"] == 0
    assert idle["chunks"] == 0 and idle["events_read"] == 0 and idle["lag_seconds"] is None
    assert all(run["run_seconds"] > 0 and run["offset_snapshot"] for run in recorded)
    # With maintenance_max_snapshots=0 a run maintains as soon as its mirror has a snapshot to expire.
    assert first["maintenance"] == "maintained" and first["snapshots_expired"] > 0
    assert project.history_length(mirror) == 1


def test_maintenance_config_errors_fail_before_any_sql(dbt_project, spark):
    for config, message in [
        ("maintenance='sometimes'", "maintenance must be 'auto'"),
        ("orphan_file_min_age_hours=1", "orphan_file_min_age_hours must be hours: at least 24"),
        ("maintenance_max_files=0", "maintenance_max_files must be a whole number"),
        ("raw_retention_hours='a week'", "raw_retention_hours must be hours"),
    ]:
        project_config = "unique_key='id', source_table='inventory.products', " + config
        dbt_project.write_model("bad_products", project_config,
                                "{{ cdc_merge.cdc_column('id', 'int') }}, {{ cdc_merge.cdc_metadata_columns() }}")
        error = run_error(dbt_project.dbt("run", "--select", "bad_products", expect_success=False))
        assert message in error and "bad_products" in error
        assert not spark.catalog.tableExists(f"{dbt_project.schema}.cdc_merge_offsets")


def test_source_freshness_of_the_raw_log_fails_when_nothing_landed_for_an_hour(dbt_project):
    project = dbt_project
    shutil.copy(FLINK_MYSQL, project.inbox / "part-1.json")
    project.land(PRODUCTS)
    project.dbt("source", "freshness", "--select", "source:cdc_raw.raw_events")
    project.query(f"update {project.raw_schema}.raw_events set landed_at = landed_at - interval 2 hours")
    stale = project.dbt("source", "freshness", "--select", "source:cdc_raw.raw_events", expect_success=False)
    assert not stale.success


def test_expiry_keeps_the_branch_of_a_batch_that_died_and_the_next_run_applies_it(dbt_project, monkeypatch):
    """A run that died between the mirror's two writes leaves its batch on the branch
    cdc_merge_batch; maintenance (compaction, expiry with no retention) keeps the branch's head,
    and the next run applies the batch."""
    project = dbt_project
    mirror = docs_mirror_with_a_pending_batch(project)
    # A batch this small would go to the mirror in one commit, with no branch (one_commit.py).
    monkeypatch.setattr(one_commit, "ONE_COMMIT_MAX_EVENTS", 0)
    with monkeypatch.context() as patch:
        record_statements(patch, dies_at=f"insert into {mirror}.branch_")
        assert not project.dbt("run", "--select", "docs", expect_success=False).success
    (branch,) = project.query(f"select snapshot_id from {mirror}.refs where name = 'cdc_merge_batch'")

    maintain(project, ["docs"], snapshot_retention_hours=0)
    assert project.query(f"select count(*) as kept from {mirror}.snapshots where snapshot_id = {branch['snapshot_id']}") == [{"kept": 1}]
    assert [(row["id"], row["title"]) for row in project.query(f"select id, title from {mirror} order by id")] == [
        (1, "v1"), (2, "v1"), (3, "v1")]

    project.dbt("run", "--select", "docs")
    assert [(row["id"], row["title"]) for row in project.query(f"select id, title from {mirror} order by id")] == [
        (1, "v2"), (3, "v1"), (4, "v1")]


def test_tables_the_mirrors_share_are_maintained_once_per_run(dbt_project, monkeypatch):
    """Two mirrors that both maintain in one dbt run: each compacts its own mirror, the raw,
    offsets and runs tables are compacted by the first only."""
    project = dbt_project
    columns = "{{ cdc_merge.cdc_column('id', 'int') }}, {{ cdc_merge.cdc_column('name', 'string') }}, {{ cdc_merge.cdc_metadata_columns() }}"
    config = "unique_key='id', source_table='inventory.products', maintenance_max_snapshots=0, snapshot_retention_hours=0"
    for model in ("products", "products_again"):
        project.write_model(model, config, columns)
    shutil.copy(FLINK_MYSQL, project.inbox / "part-1.json")
    project.land(PRODUCTS)
    with monkeypatch.context() as patch:
        statements = record_statements(patch)
        compacted = record_compactions(patch, statements)
        project.dbt("run", "--select", "products", "products_again")
    compacted = compacted()
    shared = [f"{project.raw_schema}.raw_events", f"{project.schema}.cdc_merge_offsets", f"{project.schema}.cdc_merge_runs"]
    for model in ("products", "products_again"):
        assert compacted.count(f"{project.schema}.{model}") == 1, compacted
    for table in shared:
        assert compacted.count(table) == 1, compacted
    assert [row["maintenance"] for row in runs(project, "products")] == ["maintained"]
    assert [row["maintenance"] for row in runs(project, "products_again")] == ["maintained"]
