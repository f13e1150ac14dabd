"""The demo's cycles, landing included, alternating with a lever on and off in one process with one
SparkSession (benchmarks.apply.followed_rows, benchmarks.apply.json_artifacts), the mirrors' key
indexes kept between cycles as cdc-run keeps them; maintenance cycles left out of both medians."""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import tempfile
from pathlib import Path
from typing import Callable, ContextManager

from benchmarks.common import warm
from benchmarks.common.measure import tee_stdout
from benchmarks.common.project import demo_project
from benchmarks.common.results import run_header


def maintained_runs(spark, project) -> int:
    """Mirror runs so far that maintained their tables (a cycle that adds any is left out)."""
    return spark.sql(f"select count(*) from {project.schema}.cdc_merge_runs where maintenance = 'maintained'").first()[0]


def alternate(description: str, argv: list[str] | None, results: Path, on: str, off: str,
              lever_off: Callable[[], ContextManager], part: Callable[[], dict[str, float]] | None = None) -> int:
    """Run the demo's cycles, odd ones with the lever (named on), even ones under lever_off() (named off);
    print each cycle and both medians, and write them to results (and its .log). part: called after
    each cycle, the seconds of the part of it the lever is about, by name; their medians too."""
    from python_jobs.demo.generate import build_waves, write_wave

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--cycles", type=int, default=24, help="demo cycles after the first, alternating")
    parser.add_argument("--events", type=int, default=300, help="events per cycle")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--results", type=Path, default=results)
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="cdc_merge_demo_ab_"))
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
            lever = number % 2 == 1
            before = maintained_runs(spark, project) if number else 0
            with contextlib.nullcontext() if lever else lever_off(), warm.key_index_kept(True):
                outcome = warm.invoke(project, "run")
            parts = {name: round(seconds, 3) for name, seconds in (part() if part else {}).items()}
            cycles.append({"cycle": number + 1, on: lever, "seconds": round(outcome.seconds, 3), **parts,
                           "maintenance": bool(number) and maintained_runs(spark, project) > before})
            print(f"    cycle {number + 1}: {len(wave.delivered)} events in {outcome.seconds:.2f} s"
                  f"{''.join(f', {name} {seconds:.3f} s' for name, seconds in parts.items())}"
                  f" ({on if lever else off}{', first: creates the mirrors' if not number else ''}"
                  f"{', maintenance' if cycles[-1]['maintenance'] else ''})", flush=True)
        measured = [cycle for cycle in cycles[1:] if not cycle["maintenance"]]
        for name, lever in ((on, True), (off, False)):
            chosen = [cycle for cycle in measured if cycle[on] == lever]
            figures[name] = {"cycles": len(chosen), "median_seconds": round(statistics.median(cycle["seconds"] for cycle in chosen), 3),
                             **{f"median_{part_name}_seconds": round(statistics.median(cycle[part_name] for cycle in chosen), 3)
                                for part_name in chosen[0] if part_name not in ("cycle", on, "seconds", "maintenance")}}
        figures["maintenance_cycles_left_out"] = len(cycles) - 1 - len(measured)
        figures["cycle_seconds"] = cycles
        print(f"demo cycle, median of {figures[on]['cycles']}: {on} {figures[on]['median_seconds']:.2f} s, "
              f"{off} {figures[off]['median_seconds']:.2f} s (median of {figures[off]['cycles']}; "
              f"{figures['maintenance_cycles_left_out']} maintenance cycles left out)", flush=True)
        for key in (key for key in figures[on] if key.startswith("median_") and key != "median_seconds"):
            print(f"  {key.removeprefix('median_').removesuffix('_seconds')}, median: {on} {figures[on][key]:.3f} s, "
                  f"{off} {figures[off][key]:.3f} s", flush=True)
    args.results.write_text(json.dumps(figures, indent=2) + "\n")
    return 0
