"""Many mirrors of one raw table, applied by one `dbt run`: each equals the replay of its table.

Six copies of the demo's shop database (schemas shop_0 .. shop_5, three tables each: 18 mirrors,
one of them with a composite key; CDC_MERGE_TEST_SHARDS=17 makes 51, benchmarks/many_mirrors/many_mirrors.py
times 200) captured by one Debezium connector into one raw table. Each copy has its own seeded
workload of inserts, updates, deletes, re-inserts after delete and primary-key changes; events
arrive a wave late (older than what the mirror already applied) and twice. Two waves, each landed
and applied by one run of all the mirrors, which share the range's one pass and write their
offsets and runs rows once per run (docs/apply_design.md). After each run every mirror equals the plain-Python replay of its
table's delivered events in true source order.
"""

from __future__ import annotations

import os
from pathlib import Path

from python_jobs.demo.generate import KEYS, Wave, build_waves
from conftest import PROJECT_DIR
from test_oracle import MODEL_OF, assert_mirrors_equal_replay

SHARDS = int(os.environ.get("CDC_MERGE_TEST_SHARDS", "6"))
SEED = 41
WAVES = 2
THREADS = "4"  # as the local profile; the Databend profile runs one thread


def shard_table(shard: int, table: str) -> str:
    return table.replace("shop.", f"shop_{shard}.")


def shard_model(shard: int, table: str) -> str:
    return f"shop_{shard}_{MODEL_OF[table].removeprefix('shop_')}"


def write_shard_models(project_dir: Path) -> list[str]:
    """The demo's three shop mirror models once per shard, under models/mirrors/many/ (the mirrors' folder config)."""
    folder = project_dir / "models" / "mirrors" / "many"
    folder.mkdir()
    names = []
    for shard in range(SHARDS):
        for table, model in MODEL_OF.items():
            sql = (PROJECT_DIR / "models" / "mirrors" / f"{model}.sql").read_text()
            assert f"source_table='{table}'" in sql
            (folder / f"{shard_model(shard, table)}.sql").write_text(
                sql.replace(f"source_table='{table}'", f"source_table='{shard_table(shard, table)}'"))
            names.append(shard_model(shard, table))
    return names


def write_shard_wave(wave: Wave, shard: int, inbox: Path) -> None:
    """The wave's files, as the connector of shard's copy writes them (its schema in source.schema)."""
    for number, lines in enumerate(wave.files, start=1):
        text = "\n".join(line.replace('"schema":"shop"', f'"schema":"shop_{shard}"') for line in lines)
        (inbox / f"shard-{shard:02d}-wave-{wave.number:03d}-part-{number:04d}.json").write_text(text + "\n", encoding="utf-8")


def test_many_mirrors_of_one_raw_table_equal_their_replay_after_every_run(conformance_project):
    project = conformance_project
    models = write_shard_models(project.project_dir)
    shard_waves = {
        shard: build_waves(SEED * 100 + shard, events=90, waves=WAVES, connector="postgresql", snapshot_rows=4,
                           late_fraction=0.15, duplicate_fraction=0.1, garbage_lines=0)[1]
        for shard in range(SHARDS)
    }
    tables = {shard_table(shard, table): list(key) for shard in range(SHARDS) for table, key in KEYS.items()}
    delivered: dict[int, list] = {shard: [] for shard in range(SHARDS)}
    late = 0
    for number in range(WAVES):
        for shard, waves in shard_waves.items():
            write_shard_wave(waves[number], shard, project.inbox)
            newest_before = max((event.index for event in delivered[shard]), default=-1)
            late += sum(event.index < newest_before for event in waves[number].delivered)
            delivered[shard] += waves[number].delivered
        project.land(tables)
        result = project.dbt("run", "--select", "path:models/mirrors/many", "--threads", THREADS)
        assert len(result.result.results) == len(models) == 3 * SHARDS
        for shard, events in delivered.items():
            assert_mirrors_equal_replay(project, events, "hard", {table: shard_model(shard, table) for table in KEYS})
    assert late > SHARDS  # events older than what their mirror had applied did arrive

    # One cdc_merge_runs row per mirror and run.
    (runs,) = project.query(
        f"select count(distinct invocation_id) as invocations, count(*) as runs "
        f"from {project.schema}.cdc_merge_runs")
    assert (runs["invocations"], runs["runs"]) == (WAVES, WAVES * len(models))
