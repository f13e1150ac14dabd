"""The cases a random workload test runs: (seed, engine) pairs. By default two, seed 1 on Spark and
seed 2 on Databend, so the suite drives both engines' apply without a run more. To hunt longer:
CDC_RANDOM_WORKLOAD_SEEDS, a list, a range or both ("1,2", "1-20", "3,10-12"), each seed on every
engine of CDC_RANDOM_WORKLOAD_ENGINES (default "local,databend_local"; read alike by the PostgreSQL
and the MariaDB workloads). CDC_RANDOM_WORKLOAD_MAINTAIN_CHANCE (default 0) is the chance that an apply
is followed by a cdc_maintain with the shortest retention (Maintenance below); CDC_RANDOM_WORKLOAD_REBUILD_CHANCE
(default 0) that it is followed by a `--full-refresh` of one mirror (Rebuilds below)."""

from __future__ import annotations

import json
import os
import random

ENGINES = ("local", "databend_local")
DEFAULT_CASES = [(1, "local"), (2, "databend_local")]
MAINTAIN_CHANCE = float(os.environ.get("CDC_RANDOM_WORKLOAD_MAINTAIN_CHANCE", "0"))
REBUILD_CHANCE = float(os.environ.get("CDC_RANDOM_WORKLOAD_REBUILD_CHANCE", "0"))
# Every superseded event of the log removed once applied, and every snapshot no offset needs expired
# (docs/maintenance.md, "What maintenance never removes"); tombstones kept, as by default.
SHORTEST_RETENTION = {"raw_retention_hours": 0, "snapshot_retention_hours": 0}


def workload_seeds(text: str) -> list[int]:
    seeds: list[int] = []
    for part in (part.strip() for part in text.split(",") if part.strip()):
        low, _, high = part.partition("-")
        try:
            seeds.extend(range(int(low), int(high or low) + 1))
        except ValueError:
            raise ValueError(f"CDC_RANDOM_WORKLOAD_SEEDS={text!r}: {part!r} is not a seed or a range of seeds "
                             "(write e.g. 1,2 or 1-20)") from None
    return seeds


def workload_cases() -> list[tuple[int, str]]:
    seeds, engines = os.environ.get("CDC_RANDOM_WORKLOAD_SEEDS"), os.environ.get("CDC_RANDOM_WORKLOAD_ENGINES")
    if not seeds and not engines:
        return DEFAULT_CASES
    chosen = [engine.strip() for engine in (engines or ",".join(ENGINES)).split(",") if engine.strip()]
    unknown = [engine for engine in chosen if engine not in ENGINES]
    if unknown:
        raise ValueError(f"CDC_RANDOM_WORKLOAD_ENGINES={engines!r}: {', '.join(unknown)} is not one of {', '.join(ENGINES)}")
    return [(seed, engine) for seed in workload_seeds(seeds or "1,2") for engine in chosen]


def history_tests(histories: dict[str, str]) -> str:
    """The data tests of a workload's histories ({model: source table}), as a models YAML."""
    return "version: 2\nmodels:\n" + "".join(
        f"  - name: {name}\n    data_tests:\n      - cdc_merge.cdc_history_intervals\n"
        f"      - cdc_merge.cdc_history_one_current:\n          arguments:\n            source_table: {table}\n"
        f"            raw_relation: ref('raw_events')\n" for name, table in histories.items())


def workload_project(request, spark, tmp_path, engine: str):
    """A fresh copy of the project on engine, as conftest's dbt_project and conformance_project make it."""
    from harness.mirror_project import make_project

    if engine == "databend_local":
        request.getfixturevalue("databend_url")
    return make_project(spark, tmp_path, engine)


class Maintenance:
    """cdc_maintain at random points of a workload, with the shortest retention, and at its end mirrors
    built anew from the log that maintenance left, which must equal their sources as the kept ones do.
    Its own random draws (from the seed), so a seed's workload is the same with or without it."""

    def __init__(self, seed: int, chance: float = MAINTAIN_CHANCE) -> None:
        self.chance, self.draws, self.runs = chance, random.Random(f"maintain-{seed}"), 0

    def __bool__(self) -> bool:
        return self.chance > 0

    def maybe(self, project, models) -> None:
        if self.chance > 0 and self.draws.random() < self.chance:
            self.now(project, models)

    def now(self, project, models) -> None:
        project.dbt("run-operation", "cdc_maintain", "--args",
                    json.dumps({"models": list(models), "settings": SHORTEST_RETENTION}))
        self.runs += 1

    def rebuilt(self, project, mirrors) -> dict[str, str]:
        """Each mirror's model again under <name>_rebuilt, built from the start of the log as it is now;
        {rebuilt name: mirror name}."""
        folder = project.project_dir / "models" / "mirrors"
        names = {f"{name}_rebuilt": name for name in mirrors}
        for copy, name in names.items():
            (folder / f"{copy}.sql").write_text((folder / f"{name}.sql").read_text())
        project.dbt("run", "--select", *names)
        return names


class Rebuilds:
    """`dbt run --full-refresh` of one mirror or history at random points of a workload, while its sessions
    write: it is rebuilt aside from the log as it is then and must go on to equal its source. Its own random
    draws (from the seed), so a seed's workload is the same with or without it."""

    def __init__(self, seed: int, chance: float = REBUILD_CHANCE) -> None:
        self.chance, self.draws, self.runs = chance, random.Random(f"rebuild-{seed}"), 0

    def maybe(self, project, mirrors) -> None:
        if self.chance > 0 and self.draws.random() < self.chance:
            project.dbt("run", "--full-refresh", "--select", self.draws.choice(sorted(mirrors)))
            self.runs += 1
