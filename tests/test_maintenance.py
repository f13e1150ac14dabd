"""Maintenance of mirrors that run for a long time (docs/maintenance.md): compaction, snapshot
expiry, raw-log retention, tombstone collection, offsets trimming, run metrics and the lag
check, on Spark + Iceberg and on Databend, always against the plain-Python replay of the log."""

from __future__ import annotations

import json

import pytest

from python_jobs.generate_demo import KEYS, build_waves, write_wave
from test_oracle import SHOP_MODELS, assert_mirrors_equal_replay

ORDERS = "shop_orders"


def configure_shop_models(project, **settings) -> None:
    """Adds configs to the shop mirrors of the project's copy, e.g. maintenance='off'."""
    for model in SHOP_MODELS:
        path = project.project_dir / "models" / "mirrors" / f"{model}.sql"
        added = "".join(f"        {name}={value!r},\n" for name, value in settings.items())
        path.write_text(path.read_text().replace("    config(\n", "    config(\n" + added, 1))


def land_and_run(project, waves) -> list:
    delivered = []
    for wave in waves:
        write_wave(wave, project.inbox)
        delivered += wave.delivered
        project.land(KEYS, max_files_per_batch=2)
        project.dbt("run", "--select", *SHOP_MODELS)
    return delivered


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


def maintain(project, models=SHOP_MODELS, **settings):
    args = {"models": list(models), "settings": settings}
    return project.dbt("run-operation", "cdc_maintain", "--args", json.dumps(args))


def test_maintenance_after_many_small_runs_shrinks_the_mirrors_and_keeps_them_equal(conformance_project):
    project = conformance_project
    configure_shop_models(project, maintenance="off")
    _, waves = build_waves(5, events=600, waves=5, connector="postgresql", snapshot_rows=30,
                           late_fraction=0.05, duplicate_fraction=0.03)
    delivered = land_and_run(project, waves)
    assert_mirrors_equal_replay(project, delivered, "hard")
    before = file_counts(project, ORDERS)
    assert before["snapshots"] >= 5

    maintain(project, snapshot_retention_hours=0)
    after = file_counts(project, ORDERS)
    assert_mirrors_equal_replay(project, delivered, "hard")
    print(before, after)
    assert after["data_files"] < before["data_files"]
    assert after["delete_files"] <= max(before["delete_files"] // 2, 0)
    assert after["snapshots"] < before["snapshots"]
    project.dbt("test", "--select", *SHOP_MODELS)
