"""Randomized oracle: after every incremental run each mirror equals a plain-Python replay
of the delivered events in true source order (known to the generator, not taken from seq).

Workloads have snapshots, inserts, updates, deletes, re-inserts, primary-key changes,
many events per millisecond, events delivered a wave late and twice, and garbage lines.
A small chunk cap makes runs apply several chunks and split big snapshots into buckets.
"""

from __future__ import annotations

import shutil

import pytest

from python_jobs.demo.generate import KEYS, build_waves, replay, write_wave

SHOP_MODELS = ["shop_customers", "shop_orders", "shop_order_lines"]
MODEL_OF = dict(zip(KEYS, SHOP_MODELS))


def mirrored(dbt_project, table: str, deletes: str, model: str) -> dict[tuple, dict]:
    where = "where not _cdc_deleted" if deletes == "soft" else ""
    rows = dbt_project.query(f"select * from {dbt_project.schema}.{model} {where}")
    return {
        tuple(row[column] for column in KEYS[table]): {k: v for k, v in row.items() if not k.startswith("_cdc_")}
        for row in rows
    }


def assert_mirrors_equal_replay(dbt_project, delivered, deletes: str, models: dict[str, str] = MODEL_OF) -> None:
    """Each mirror of models (source table -> model) equals the replay of its table's events."""
    expected = replay(delivered)
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


def land_and_run_waves(dbt_project, waves, run_vars: str, deletes: str) -> list:
    delivered = []
    for wave in waves:
        write_wave(wave, dbt_project.inbox)
        delivered += wave.delivered
        dbt_project.land(KEYS, max_files_per_batch=3)
        dbt_project.dbt("run", "--select", *SHOP_MODELS, "--vars", run_vars)
        assert_mirrors_equal_replay(dbt_project, delivered, deletes)
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


def test_mirrors_equal_replay_with_replaced_rows_deleted_by_merge(dbt_project, monkeypatch):
    """Where the mirror's replaced rows cannot be deleted by position (a Thrift server, partitioned
    or format-3 mirrors), a MERGE deletes them: the same workload, the same mirrors."""
    monkeypatch.setenv("CDC_MERGE_ICEBERG_JVM_JAR", "")
    _, waves = build_waves(23, events=3000, waves=3, connector="mysql", snapshot_rows=60,
                           late_fraction=0.05, duplicate_fraction=0.03)
    land_and_run_waves(dbt_project, waves, "{cdc_merge_deletes: hard}", "hard")
    assert commits_deleting_by_position(dbt_project) == 0
