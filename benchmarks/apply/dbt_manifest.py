"""What keeping dbt's manifest between a warm process's runs would save (docs/apply_service.md, item 1):
a warm `dbt parse`, and an idle `dbt run` of the demo's mirrors with the previous manifest given to dbt
against parsing as each run does now, alternating, in one process with one SparkSession.

    .venv/bin/python -m benchmarks.apply.dbt_manifest [--rounds 7]

Writes benchmarks/results/dbt_manifest.json and .log.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import warm
from benchmarks.common.measure import tee_stdout
from benchmarks.common.project import demo_project
from benchmarks.common.results import RESULTS_DIR, machine
from harness.dbt_project import dbt_args, error_text, use_schemas


def timed_dbt(project_dir: Path, args: list[str], manifest=None) -> tuple[float, object]:
    """Seconds of one dbt command in this process, and its result; manifest: skip dbt's parse."""
    from dbt.cli.main import dbtRunner

    started = time.perf_counter()
    # artifacts: dbt writes target/*.json, as a `dbt run` under cdc-run does.
    result = dbtRunner(manifest=manifest).invoke(dbt_args(project_dir, args, artifacts=True, quiet=True))
    seconds = time.perf_counter() - started
    if not result.success:
        raise RuntimeError(f"dbt {' '.join(args)} failed: {error_text(result)}")
    return seconds, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7, help="idle runs of each kind, alternating")
    parser.add_argument("--results", type=Path, default=RESULTS_DIR / "dbt_manifest.json")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="cdc_merge_dbt_manifest_"))
    with tee_stdout(args.results.with_suffix(".log")):
        warm.session(work / "warehouse", driver_memory="2g")
        project = demo_project(work, "mirror", "cdc_raw")
        use_schemas(project.schema, project.raw_schema)
        mirrors = ["--select", "config.materialized:cdc_merge"]
        project.dbt("run-operation", "create_raw_tables")
        project.dbt("run", *mirrors)  # creates the mirrors; every later run is idle
        parse = [timed_dbt(project.dir, ["parse"])[0] for _ in range(args.rounds)]
        manifest = timed_dbt(project.dir, ["parse"])[1].result
        parsing, given = [], []
        for _ in range(args.rounds):
            parsing.append(timed_dbt(project.dir, ["run", *mirrors])[0])
            given.append(timed_dbt(project.dir, ["run", *mirrors], manifest)[0])
        figures = {
            "command": " ".join([Path(sys.executable).name, *sys.orig_argv[1:]]),
            "machine": machine(),
            "mirrors": len(list((project.dir / "models" / "mirrors").glob("*.sql"))),
            "warm_parse_seconds": [round(s, 3) for s in parse],
            "idle_run_parsing_seconds": [round(s, 3) for s in parsing],
            "idle_run_manifest_given_seconds": [round(s, 3) for s in given],
        }
        print(f"machine: {figures['machine']}")
        print(f"warm dbt parse: median {statistics.median(parse):.3f} s ({args.rounds} runs)")
        print(f"idle dbt run of {figures['mirrors']} mirrors, parsing as now: median {statistics.median(parsing):.3f} s")
        print(f"idle dbt run of {figures['mirrors']} mirrors, previous manifest given: median {statistics.median(given):.3f} s")
        print(f"saved a run: {statistics.median(parsing) - statistics.median(given):.3f} s")
    args.results.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
