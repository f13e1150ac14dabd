"""Randomized oracle: after every incremental run each mirror equals a plain-Python replay
of the delivered events in true source order (known to the generator, not taken from seq).

Workloads have snapshots, inserts, updates, deletes, re-inserts, primary-key changes,
many events per millisecond, events delivered a wave late and twice, and garbage lines.
A small chunk cap makes runs apply several chunks and split big snapshots into buckets.
"""

from __future__ import annotations

import shutil

import pytest

from dbt.adapters.cdc_spark import raw_ranges, stored_keys
from dbt.adapters.cdc_spark.iceberg_jvm import jvm_class
from python_jobs.apply import key_index as key_index_setting
from python_jobs.demo.generate import KEYS, build_waves, replay, unsent_columns, write_wave
from python_jobs.status.registry import REGISTRY
from test_stored_keys import decoded, keys_in_driver

SHOP_MODELS = ["shop_customers", "shop_orders", "shop_order_lines"]
LISTED_KEYS = raw_ranges.MAX_LISTED_KEYS
MODEL_OF = dict(zip(KEYS, SHOP_MODELS))


def mirrored(dbt_project, table: str, deletes: str, model: str) -> dict[tuple, dict]:
    where = "where not _cdc_deleted" if deletes == "soft" else ""
    rows = dbt_project.query(f"select * from {dbt_project.schema}.{model} {where}")
    return {
        tuple(row[column] for column in KEYS[table]): {k: v for k, v in row.items() if not k.startswith("_cdc_")}
        for row in rows
    }


def assert_mirrors_equal_replay(dbt_project, delivered, deletes: str, models: dict[str, str] = MODEL_OF,
                                unsent=lambda event: ()) -> None:
    """Each mirror of models (source table -> model) equals the replay of its table's events (unsent: generate.replay's)."""
    expected = replay(delivered, unsent)
    for table, model in models.items():
        actual = mirrored(dbt_project, table, deletes, model)
        missing = expected[table].keys() - actual.keys()
        extra = actual.keys() - expected[table].keys()
        wrong = [key for key in expected[table].keys() & actual.keys() if expected[table][key] != actual[key]]
        assert not (missing or extra or wrong), (
            f"{table}: {len(missing)} missing, {len(extra)} unexpected, {len(wrong)} wrong rows; "
            f"e.g. missing {sorted(missing)[:3]}, unexpected {sorted(extra)[:3]}, "
            f"wrong {[(key, expected[table][key], actual[key]) for key in wrong[:2]]}"
        )


def mirror_snapshots(dbt_project) -> dict[str, int]:
    return {model: dbt_project.table_version(f"{dbt_project.schema}.{model}") for model in SHOP_MODELS}


def commits_deleting_by_position(dbt_project, models=SHOP_MODELS) -> int:
    return sum(
        dbt_project.query(f"select count(*) as commits from {dbt_project.schema}.{model}.snapshots "
                          "where summary['cdc-merge.deletes'] = 'by-position'")[0]["commits"]
        for model in models
    )


def land_and_run_waves(dbt_project, waves, run_vars: str, deletes: str, unsent=lambda event: ()) -> list:
    delivered = []
    for wave in waves:
        write_wave(wave, dbt_project.inbox)
        delivered += wave.delivered
        dbt_project.land(KEYS, max_files_per_batch=3)
        dbt_project.dbt("run", "--select", *SHOP_MODELS, "--vars", run_vars)
        assert_mirrors_equal_replay(dbt_project, delivered, deletes, unsent=unsent)
    return delivered


def test_postgres_mirrors_survive_small_chunks_redelivery_and_a_crash(conformance_project):
    dbt_project = conformance_project
    # Every run applies several chunks, big snapshots in key buckets: 150 of a mirror's own events
    # per chunk (about 330 a wave) where the plan counts each table's events (Spark + Iceberg), 600
    # of all tables' where it counts them together (Databend).
    run_vars = "{cdc_merge_max_events_per_chunk: %d}" % (600 if dbt_project.on_databend else 150)
    _, waves = build_waves(11, events=3000, waves=3, connector="postgresql", snapshot_rows=60,
                           late_fraction=0.05, duplicate_fraction=0.03)
    delivered = land_and_run_waves(dbt_project, waves, run_vars, "hard")
    chunks = dbt_project.query(f"select count(*) as chunks from {dbt_project.schema}.cdc_merge_offsets")[0]["chunks"]
    assert chunks > 3 * len(waves) * len(SHOP_MODELS) / 2

    # At-least-once delivery: every file arrives again under a new name. Nothing changes.
    before = mirror_snapshots(dbt_project)
    for path in sorted(dbt_project.inbox.iterdir()):
        shutil.copy(path, path.with_name("again-" + path.name))
    assert dbt_project.land(KEYS).counts["event"] == len(delivered)
    dbt_project.dbt("run", "--select", *SHOP_MODELS)
    assert_mirrors_equal_replay(dbt_project, delivered, "hard")
    assert mirror_snapshots(dbt_project) == before

    # A run that died after its MERGEs committed but before it appended its offsets:
    # forget every offset since the first chunk and run again; it re-applies nothing.
    offsets = f"{dbt_project.schema}.cdc_merge_offsets"
    dbt_project.query(f"delete from {offsets} where offset_ordinal > 1")
    dbt_project.dbt("run", "--select", *SHOP_MODELS)
    assert_mirrors_equal_replay(dbt_project, delivered, "hard")
    assert mirror_snapshots(dbt_project) == before
    (changed,) = dbt_project.query(
        f"select sum(rows_inserted + rows_updated + rows_deleted) as changed_rows, count(*) as chunks "
        f"from {offsets} where offset_ordinal > 1"
    )
    assert changed["changed_rows"] == 0 and changed["chunks"] >= len(SHOP_MODELS)

    dbt_project.dbt("test", "--select", *SHOP_MODELS)


@pytest.mark.parametrize("connector, seed, deletes", [("mysql", 23, "hard"), ("postgresql", 37, "soft")])
def test_mirrors_equal_replay_after_every_run(conformance_project, connector, seed, deletes):
    dbt_project = conformance_project
    run_vars = f"{{cdc_merge_deletes: {deletes}}}"
    _, waves = build_waves(seed, events=3000, waves=3, connector=connector, snapshot_rows=60,
                           late_fraction=0.05, duplicate_fraction=0.03)
    land_and_run_waves(dbt_project, waves, run_vars, deletes)
    dbt_project.dbt("test", "--select", *SHOP_MODELS, "--vars", run_vars)
    if dbt_project.target == "local" and deletes == "hard":
        assert commits_deleting_by_position(dbt_project) > 0


def test_mirrors_equal_replay_with_toast_placeholders_and_older_events_delivered_again(conformance_project, monkeypatch):
    """PostgreSQL updates that send an unchanged text column as Debezium's TOAST placeholder, and
    older events delivered again in the same batch: a placeholder takes the value the key's newest
    older event sent, never that of an event older than the stored row. On Spark, a batch held in
    the driver fills placeholders there where every event is newer than the mirror
    (raw_range_methods.py); redelivered older events keep the rounds. No event is delivered late:
    an update applied before its key's late value is not covered (docs/mirror_models.md)."""
    from dbt.adapters.cdc_spark import raw_range_methods

    dbt_project = conformance_project
    fill_checks = []
    fold_is_newer_than_stored = raw_range_methods._fold_is_newer_than_stored
    monkeypatch.setattr(raw_range_methods, "_fold_is_newer_than_stored",
                        lambda *args: fill_checks.append(fold_is_newer_than_stored(*args)) or fill_checks[-1])
    _, waves = build_waves(53, events=3000, waves=3, connector="postgresql", snapshot_rows=60,
                           late_fraction=0.0, duplicate_fraction=0.05, toast_fraction=0.6)
    assert sum(line.count("__debezium_unavailable_value") for wave in waves for lines in wave.files for line in lines) > 100
    land_and_run_waves(dbt_project, waves, "{cdc_merge_deletes: hard}", "hard")
    if not dbt_project.on_databend:
        assert True in fill_checks and False in fill_checks, fill_checks


def test_mirrors_equal_replay_with_toast_values_delivered_after_the_update_that_left_them_unsent(conformance_project):
    """Events delivered a wave late, among updates that send an unchanged text column as the TOAST
    placeholder: an update applied before its key's older event that sent the value leaves the
    column unsent, and the late event fills it (unsent_columns.sql), never over a newer value."""
    _, waves = build_waves(57, events=3000, waves=4, connector="postgresql", snapshot_rows=60,
                           late_fraction=0.05, duplicate_fraction=0.03, toast_fraction=0.6)
    delivered = land_and_run_waves(conformance_project, waves, "{cdc_merge_deletes: hard}", "hard",
                                   unsent=lambda event: unsent_columns(event, "postgresql", 57, 0.6))
    # Every late event has arrived: each mirror is the source's last state.
    assert_mirrors_equal_replay(conformance_project, delivered, "hard")


def test_mirrors_equal_replay_with_replaced_rows_deleted_by_merge(dbt_project, monkeypatch):
    """Where the mirror's replaced rows cannot be deleted by position (a Thrift server, partitioned
    or format-3 mirrors), a MERGE deletes them: the same workload, the same mirrors."""
    monkeypatch.setenv("CDC_MERGE_ICEBERG_JVM_JAR", "")
    _, waves = build_waves(23, events=3000, waves=3, connector="mysql", snapshot_rows=60,
                           late_fraction=0.05, duplicate_fraction=0.03)
    land_and_run_waves(dbt_project, waves, "{cdc_merge_deletes: hard}", "hard")
    assert commits_deleting_by_position(dbt_project) == 0


def assert_kept_indexes_equal_scans(dbt_project, spark) -> dict[str, int]:
    """Each key index this process keeps for the mirrors and their tombstones answers, for every
    stored key and one never stored, what a scan of its snapshot reads. {table: kept snapshot}."""
    key_index = jvm_class(spark, "cdc_merge.iceberg.KeyIndex")
    kept = {}
    for model in SHOP_MODELS:
        for table in (f"{dbt_project.schema}.{model}", f"{dbt_project.schema}.{model}__cdc_tombstones"):
            snapshot = key_index.keptSnapshot(table)
            if snapshot is None:
                continue
            scanned = {
                row._cdc_key: {"_cdc_seq": row._cdc_seq, "_cdc_stored_file_hash": row.file_hash, "_cdc_stored_pos": row._pos}
                for row in spark.sql(f"select _cdc_key, _cdc_seq, xxhash64(_file) as file_hash, _pos "
                                     f"from {table} version as of {snapshot}").collect()
            }
            keys = sorted(scanned) + ["never stored"]
            indexed = {}
            with pytest.MonkeyPatch.context() as listed:
                listed.setattr(raw_ranges, "MAX_LISTED_KEYS", LISTED_KEYS)
                for page in range(0, len(keys), LISTED_KEYS):
                    (found,) = stored_keys.stored_rows_hex(spark, keys_in_driver(spark, keys[page:page + LISTED_KEYS]),
                                                           [(table, str(snapshot), True)])
                    indexed.update(decoded(found))
            assert key_index.keptSnapshot(table) == snapshot  # answered by the index kept, not one built again
            assert indexed == scanned, f"{table}: the index differs from a scan of snapshot {snapshot}"
            kept[table] = snapshot
    return kept


@pytest.mark.parametrize("answered_as", ["constants", "views"])
def test_mirrors_equal_replay_with_each_mirrors_keys_kept_between_runs(dbt_project, spark, monkeypatch, answered_as):
    """As cdc-run applies: the key index kept between runs classifies each small batch and follows
    its commits (KeyIndex.java). Compaction between runs moves every row: the index must not answer
    for the new snapshot. After every run the mirrors equal the replay and each index a scan.
    The index answers a batch of a few keys as constants in the classification (stored_rows_hex),
    a larger one as views (indexed_rows_views): here every batch counts as larger for the views."""
    monkeypatch.setenv(key_index_setting.KEY_INDEX_MAX_KEYS_ENV, "1000000")
    jvm_class(spark, "cdc_merge.iceberg.KeyIndex").dropAll()
    monkeypatch.setattr(REGISTRY, "enabled", True)  # as with cdc-run's status endpoint
    monkeypatch.setattr(REGISTRY, "mirrors", {})
    views_made = []
    if answered_as == "views":
        monkeypatch.setattr(raw_ranges, "MAX_LISTED_KEYS", 0)
        original = stored_keys.indexed_rows_views
        monkeypatch.setattr(stored_keys, "indexed_rows_views", lambda *args: views_made.append(original(*args)) or views_made[-1])
    _, waves = build_waves(41, events=3000, waves=6, connector="mysql", snapshot_rows=60,
                           late_fraction=0.05, duplicate_fraction=0.03)
    delivered, followed = [], 0
    for number, wave in enumerate(waves):
        write_wave(wave, dbt_project.inbox)
        delivered += wave.delivered
        dbt_project.land(KEYS, max_files_per_batch=3)
        dbt_project.dbt("run", "--select", *SHOP_MODELS)
        assert_mirrors_equal_replay(dbt_project, delivered, "hard")
        kept = assert_kept_indexes_equal_scans(dbt_project, spark)
        # An index at its table's current snapshot followed the run's last commit: lookups come before commits.
        followed += sum(str(snapshot) == dbt_project.table_version(table) for table, snapshot in kept.items())
        if number == 1:
            for model in SHOP_MODELS:
                spark.sql(f"call system.rewrite_data_files(table => '{dbt_project.schema}.{model}', "
                          "options => map('min-input-files', '1', 'rewrite-all', 'true'))")
    assert followed >= len(SHOP_MODELS)
    assert commits_deleting_by_position(dbt_project) > 0
    # The status endpoint's figure of each mirror: the keys of its and its tombstones' indexes after its last run.
    shown = {mirror.mirror: mirror.key_index_keys for mirror in REGISTRY.snapshot().mirrors}
    key_index = jvm_class(spark, "cdc_merge.iceberg.KeyIndex")
    for model in SHOP_MODELS:
        mirror = f"{dbt_project.schema}.{model}"
        assert shown[mirror] == key_index.keptKeys(mirror) + key_index.keptKeys(mirror + "__cdc_tombstones") > 0
    if answered_as == "views":
        assert sum(made is not None for made in views_made) >= 3 * len(SHOP_MODELS)
