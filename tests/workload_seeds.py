"""The cases a random workload test runs: (seed, engine) pairs. By default two, seed 1 on Spark and
seed 2 on Databend, so the suite drives both engines' apply without a run more. To hunt longer:
CDC_RANDOM_WORKLOAD_SEEDS, a list, a range or both ("1,2", "1-20", "3,10-12"), each seed on every
engine of CDC_RANDOM_WORKLOAD_ENGINES (default "local,databend_local"; read alike by the PostgreSQL
and the MariaDB workloads)."""

from __future__ import annotations

import os

ENGINES = ("local", "databend_local")
DEFAULT_CASES = [(1, "local"), (2, "databend_local")]


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
