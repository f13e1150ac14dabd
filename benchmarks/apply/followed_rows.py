"""What following the offsets and runs tables through a warm process's own appends saves
(adapter/dbt/adapters/cdc_core/followed_rows.py): the demo's cycles, landing included, alternating
with the followed rows and without them (each cycle reads every mirror's newest offset with a query,
and the runs rows again for the new rows' quarantined lines), in one process
with one SparkSession; maintenance cycles left out of both medians.

    .venv/bin/python -m benchmarks.apply.followed_rows [--cycles 24]

Writes benchmarks/results/followed_rows.json and .log.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import tempfile
from pathlib import Path

from benchmarks.common import warm
from benchmarks.common.measure import tee_stdout
from benchmarks.common.project import demo_project
from benchmarks.common.results import RESULTS_DIR, run_header


@contextlib.contextmanager
def nothing_followed():
    """The baseline: what the bookkeeping tables hold known within one run only (each run reads every
    mirror's newest offset and the runs rows again), as before they were followed between runs."""
    from dbt.adapters.cdc_core.followed_rows import FollowedRows
    from dbt.adapters.cdc_core.run_state import STATE

    original = FollowedRows.appended
    FollowedRows.appended = lambda self, table, commit, rows, newer: original(self, table, None, rows, newer)
    STATE.offsets.forget()
    STATE.run_starts.forget()
    try:
        yield
    finally:
        FollowedRows.appended = original


def maintained_runs(spark, project) -> int:
    """Mirror runs so far that maintained their tables (a cycle that adds any is left out)."""
    return spark.sql(f"select count(*) from {project.schema}.cdc_merge_runs where maintenance = 'maintained'").first()[0]


def main(argv: list[str] | None = None) -> int:
    from python_jobs.demo.generate import build_waves, write_wave

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=24, help="demo cycles after the first, alternating")
    parser.add_argument("--events", type=int, default=300, help="events per cycle")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--results", type=Path, default=RESULTS_DIR / "followed_rows.json")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="cdc_merge_followed_rows_"))
    with tee_stdout(args.results.with_suffix(".log")):
        figures = run_header()
        print(f"machine: {figures['machine']}", flush=True)
        spark = warm.session(work / "warehouse", driver_memory="2g")
        project = demo_project(work, "bm_demo", "br_demo")
        warm.invoke(project, "run-operation", "create_raw_tables")
        _, waves = build_waves(args.seed, events=args.events * (args.cycles + 1), waves=args.cycles + 1, snapshot_rows=50)
        cycles = []
        for number, wave in enumerate(waves):
            write_wave(wave, project.dir.parent / "inbox_demo")
            followed = number % 2 == 1
            before = maintained_runs(spark, project) if number else 0
            with contextlib.nullcontext() if followed else nothing_followed():
                outcome = warm.invoke(project, "run")
            cycles.append({"cycle": number + 1, "followed": followed, "seconds": round(outcome.seconds, 3),
                           "maintenance": bool(number) and maintained_runs(spark, project) > before})
            print(f"    cycle {number + 1}: {len(wave.delivered)} events in {outcome.seconds:.2f} s"
                  f" ({'followed' if followed else 'read each run'}{', first: creates the mirrors' if not number else ''}"
                  f"{', maintenance' if cycles[-1]['maintenance'] else ''})", flush=True)
        measured = [cycle for cycle in cycles[1:] if not cycle["maintenance"]]
        for name, followed in (("followed", True), ("read_each_run", False)):
            seconds = [cycle["seconds"] for cycle in measured if cycle["followed"] == followed]
            figures[name] = {"cycles": len(seconds), "median_seconds": round(statistics.median(seconds), 3)}
        figures["maintenance_cycles_left_out"] = len(cycles) - 1 - len(measured)
        figures["cycle_seconds"] = cycles
        print(f"demo cycle, median of {figures['followed']['cycles']}: followed {figures['followed']['median_seconds']:.2f} s, "
              f"read each run {figures['read_each_run']['median_seconds']:.2f} s (median of {figures['read_each_run']['cycles']}; "
              f"{figures['maintenance_cycles_left_out']} maintenance cycles left out)", flush=True)
    args.results.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
