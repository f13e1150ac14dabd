"""Many mirrors over one raw table: what a run costs per mirror in a warm process, as cdc-run runs it.
(Why one file of over 400 lines: every phase works on the one process's session, project and SQL clock.)

    .venv/bin/python -m benchmarks.many_mirrors.many_mirrors                             # 200 mirrors
    .venv/bin/python -m benchmarks.many_mirrors.many_mirrors --mirrors 40 --small 10     # a short run

One process, one SparkSession, dbt invoked in-process again and again (common/warm.py). A
project of N cdc_merge mirrors, each of its own source table `bench.items_<n>` (1,000 rows), all
in one raw table (common/datagen.py writes the events, no landing), measured warm:

- idle: `dbt run` of the N mirrors, and of --small of them, with no new events (and the --small
  with the idle check turned off: every mirror's full path, as before idle.sql); against dbt's
  own cost: `dbt run` of as many models whose materialization runs no SQL (bench_noop), and
  `dbt parse`. Statements counted by common/sql_clock.py.
- events: each of the N mirrors with --events-per-mirror (20-50) new events, in one new raw
  snapshot; how often the raw range is read (one view per mirror) and the bytes Spark read. Measured
  --repeat times on the shared path (one pass over the range for all mirrors, the offsets and runs
  rows written once per run, a small batch in one commit: docs/apply_design.md), alternating with
  the per-mirror path (each mirror plans its range, writes its bookkeeping rows itself and applies
  through a branch, one mirror at a time: dbt --threads 1) in the same process. The shared path
  runs with the profile's threads (4: mirrors apply side by side).
- demo: the demo's four mirrors (models/mirrors/) with a few hundred new Debezium events of the
  shop tables per cycle, landing model included (`dbt run`, as cdc-run runs it, the key indexes
  kept); every other cycle with the quiet path off (the fourth mirror's source is quiet).
- --threads T: the idle and events runs again with `dbt run --threads T` on the same session.

- quiet: new events for --small of the N mirrors only, one raw snapshot, and a `dbt run` of all N:
  the others' sources are quiet, and each of those mirrors writes its offset only (chunk_plan.py
  quiet_snapshots); against the same run with the quiet path off (no per-table counts: every
  mirror reads the range and applies an empty batch), alternating, --repeat times each.

- index: the events run with each mirror's key index kept between runs, as cdc-run keeps it
  (python_jobs/apply/key_index.py), against the same run reading each mirror's and tombstones'
  stored rows from their files (the index off), alternating, --repeat times each, after a warm-up
  run that builds the indexes.

- --idle-only: the setup and the idle runs alone (many_mirrors_<N>_idle.json).
- --index-only: the setup and the index runs alone (many_mirrors_<N>_index.json).
- --quiet-only: the setup and the quiet runs alone (many_mirrors_<N>_quiet.json).
- --demo-only: the demo's cycles alone (demo_cycle.json).

Writes benchmarks/results/many_mirrors_<N>.json and .log (--results, --log); many_mirrors_plot.py
plots the results of several N.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import time
from functools import reduce
from pathlib import Path

from benchmarks.common import datagen, warm
from benchmarks.common.measure import tee_stdout
from benchmarks.common.project import NOOP_MATERIALIZATION, BenchProject, demo_project
from benchmarks.common.results import RESULTS_DIR, run_header
from benchmarks.common.sql_clock import install_sql_clock, strip_comment

# PySpark hands timestamps to Python in the process's local zone; the tables hold UTC.
os.environ["TZ"] = "UTC"
time.tzset()

TARGET_ROWS = 1000


def arguments(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mirrors", type=int, default=200, help="mirrors over the one raw table (default 200)")
    parser.add_argument("--small", type=int, default=10, help="the smaller idle run: this many of the mirrors (default 10)")
    parser.add_argument("--events-per-mirror", default="20:50", help="new events per mirror in the events run, MIN:MAX (default 20:50)")
    parser.add_argument("--demo-events", type=int, default=300, help="events per demo cycle (default 300)")
    parser.add_argument("--demo-cycles", type=int, default=8,
                        help="demo cycles after the first (default 8); the JVM's compiler settles after about 20")
    parser.add_argument("--repeat", type=int, default=3, help="measurements of each idle run; the figure is their median")
    parser.add_argument("--threads", type=int, default=0, help="also run idle and events with dbt --threads T (default 0: skip; the profile has 4)")
    parser.add_argument("--idle-only", action="store_true",
                        help="the idle runs and dbt's own cost only (default results: many_mirrors_<N>_idle.json)")
    parser.add_argument("--demo-only", action="store_true", help="the demo's cycles alone (default results: demo_cycle.json)")
    parser.add_argument("--quiet-only", action="store_true",
                        help="the quiet runs alone (default results: many_mirrors_<N>_quiet.json)")
    parser.add_argument("--index-only", action="store_true",
                        help="the events runs with the key index and without it alone (default results: many_mirrors_<N>_index.json)")
    parser.add_argument("--driver-memory", default="2g", help="spark.driver.memory (default 2g: the tables are small)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/cdc_merge_many_mirrors"), help="warehouse and project copies (deleted first)")
    parser.add_argument("--results", type=Path, default=None, help="default: benchmarks/results/many_mirrors_<N>.json")
    parser.add_argument("--log", default=None, help="copy of what the run prints; default: --results with .log")
    args = parser.parse_args(argv)
    low, _, high = args.events_per_mirror.partition(":")
    args.events_range = (int(low), int(high or low))
    if args.small > args.mirrors:
        parser.error("--small cannot exceed --mirrors")
    name = ("demo_cycle" if args.demo_only else
            f"many_mirrors_{args.mirrors}{'_idle' if args.idle_only else '_quiet' if args.quiet_only else '_index' if args.index_only else ''}")
    args.results = args.results or RESULTS_DIR / f"{name}.json"
    args.log = args.results.with_suffix(".log") if args.log is None else Path(args.log) if args.log else None
    return args


class ManyMirrors:
    def __init__(self, args):
        self.args = args
        self.work = args.work_dir
        shutil.rmtree(self.work, ignore_errors=True)
        self.work.mkdir(parents=True)
        self.spark = warm.session(self.work / "warehouse", args.driver_memory, retained_stages=200_000)
        self.clock = install_sql_clock()
        self.reads = warm.SparkReads(self.spark)
        self.range_views: list[tuple] = []
        self._count_range_reads()
        self.project = BenchProject(self.work / "project", "bm_many", "br_many", self.work / "inbox", source_tables=args.mirrors)
        self.mirrors = [f"bench_items_{n}" for n in range(args.mirrors)]

    def _count_range_reads(self) -> None:
        """Each mirror's raw snapshot range is one adapter view (read_chunk, raw_log.sql); the reads of
        the raw table's files behind those views are raw_ranges.RANGES.reads."""
        from dbt.adapters.cdc_spark.impl import CdcSparkAdapter

        original = CdcSparkAdapter.create_appended_rows_view
        views = self.range_views

        def counted(adapter, view_name, table, after, through, events=None):
            views.append((table, after, through))
            return original(adapter, view_name, table, after, through, events)

        CdcSparkAdapter.create_appended_rows_view = counted

    def setup(self) -> None:
        args = self.args
        print(f"== setup: {args.mirrors} mirrors of {TARGET_ROWS:,} rows over one raw table; {args.mirrors} no-op models", flush=True)
        for n, name in enumerate(self.mirrors):
            self.project.write_mirror(name, source_table=f"bench.items_{n}")
        noop_dir = self.project.dir / "models" / "noop"
        noop_dir.mkdir()
        for n in range(args.mirrors):
            (noop_dir / f"noop_{n}.sql").write_text("{{ config(materialized='bench_noop') }}\n\nselect 1 as id\n")
        (self.project.dir / "macros" / "bench_noop.sql").write_text(NOOP_MATERIALIZATION)
        warm.invoke(self.project, "run-operation", "create_raw_tables")
        snapshots = [datagen.snapshot_events(self.spark, TARGET_ROWS, f"bench.items_{n}") for n in range(args.mirrors)]
        reduce(lambda a, b: a.unionByName(b), snapshots).coalesce(2).writeTo(f"{self.project.raw_schema}.raw_events").append()
        started = time.perf_counter()
        warm.invoke(self.project, "run", "--select", "path:models/mirrors")
        print(f"    first run (mirrors created, {args.mirrors * TARGET_ROWS:,} snapshot events applied): {time.perf_counter() - started:.1f} s", flush=True)
        warm.invoke(self.project, "run", "--select", "path:models/noop")

    def timed_run(self, *select: str, threads: int | None = None) -> dict:
        from dbt.adapters.cdc_spark.raw_ranges import RANGES

        self.range_views.clear()
        reads_before = len(RANGES.reads)
        self.reads.mark()
        with self.clock.measuring():
            outcome = warm.invoke(self.project, "run", "--select", *select, threads=threads)
        slowest = sorted(self.clock.recorded, key=lambda item: -item[1])[:5]
        return {"seconds": round(outcome.seconds, 3), "sql_seconds": round(self.clock.seconds, 3), "statements": self.clock.statements,
                "slowest_statements": [[round(seconds, 3), " ".join(strip_comment(sql).split())[:120]] for sql, seconds in slowest],
                "sql_by_kind": {kind: [count, round(seconds, 3)] for kind, (count, seconds)
                                in sorted(self.clock.by_kind.items(), key=lambda item: -item[1][1])},
                "range_views": len(self.range_views), "distinct_ranges": len(set(self.range_views)),
                "range_reads": len(RANGES.reads) - reads_before,
                "input_bytes": self.reads.read(), "nodes": outcome.statuses}

    def repeated(self, label: str, *select: str, threads: int | None = None) -> dict:
        runs = [self.timed_run(*select, threads=threads) for _ in range(self.args.repeat)]
        figure = sorted(runs, key=lambda run: run["seconds"])[len(runs) // 2]
        figure = {**figure, "all_seconds": [run["seconds"] for run in runs]}
        print(f"    {label}: {figure['seconds']:.2f} s (runs {', '.join(f'{s:.2f}' for s in figure['all_seconds'])}), "
              f"{figure['sql_seconds']:.2f} s SQL in {figure['statements']} statements", flush=True)
        print("        slowest: " + "; ".join(f"{seconds:.2f} s {sql[:60]}" for seconds, sql in figure["slowest_statements"][:3]), flush=True)
        return figure

    def dbt_alone(self, command: str) -> float:
        started = time.perf_counter()
        warm.invoke(self.project, command)
        return round(time.perf_counter() - started, 3)

    def idle(self, threads: int | None = None) -> dict:
        args = self.args
        small = self.mirrors[: args.small]
        noop_small = [f"noop_{n}" for n in range(args.small)]
        suffix = f", --threads {threads}" if threads else ""
        print(f"== idle runs (no new events){suffix}", flush=True)
        out = {
            "mirrors": self.repeated(f"{args.mirrors} mirrors", "path:models/mirrors", threads=threads),
            "small": self.repeated(f"{args.small} mirrors", *small, threads=threads),
        }
        if not threads:
            with full_path():
                out["small_full_path"] = self.repeated(f"{args.small} mirrors, idle check off (every mirror takes the full path)", *small)
            out["noop"] = self.repeated(f"{args.mirrors} no-op models (dbt's own cost)", "path:models/noop")
            out["noop_small"] = self.repeated(f"{args.small} no-op models", *noop_small)
            out["parse_seconds"] = self.dbt_alone("parse")
            print(f"    dbt parse {out['parse_seconds']:.2f} s", flush=True)
            out["beyond_dbt"] = {
                "mirrors": round(out["mirrors"]["seconds"] - out["noop"]["seconds"], 3),
                "small": round(out["small"]["seconds"] - out["noop_small"]["seconds"], 3),
            }
            print(f"    beyond dbt's own cost: {out['beyond_dbt']['mirrors']:.2f} s for {args.mirrors} mirrors, "
                  f"{out['beyond_dbt']['small']:.2f} s for {args.small}", flush=True)
        return out

    def events_compared(self) -> dict:
        """The events run on the shared path and on the per-mirror path, alternating, --repeat times each."""
        shared, per_mirror = [], []
        for number in range(self.args.repeat):
            shared.append(self.events(10 + 2 * number))
            with per_mirror_path():
                per_mirror.append(self.events(11 + 2 * number, threads=1, label="per-mirror path"))
        middle = len(shared) // 2
        by_seconds = sorted(shared, key=lambda run: run["seconds"]), sorted(per_mirror, key=lambda run: run["seconds"])
        figure = {"shared": {**by_seconds[0][middle], "all_seconds": [run["seconds"] for run in shared]},
                  "per_mirror": {**by_seconds[1][middle], "all_seconds": [run["seconds"] for run in per_mirror]}}
        figure["ratio"] = round(figure["per_mirror"]["seconds"] / figure["shared"]["seconds"], 2)
        print(f"    median of {len(shared)}: shared path {figure['shared']['seconds']:.2f} s ({figure['shared']['statements']} statements), "
              f"per-mirror path {figure['per_mirror']['seconds']:.2f} s ({figure['per_mirror']['statements']} statements): "
              f"{figure['ratio']:.2f}x", flush=True)
        return figure

    def quiet_compared(self) -> dict:
        """Events for --small of the mirrors and a run of all, with the quiet path and without, alternating."""
        print(f"== quiet sources: new events for {self.args.small} of {self.args.mirrors} mirrors, a run of all", flush=True)
        quiet, full = [], []
        for number in range(self.args.repeat):
            quiet.append(self.events(100 + 2 * number, label="quiet path", changed=self.args.small))
            with quiet_path_off():
                full.append(self.events(101 + 2 * number, label="quiet path off", changed=self.args.small))
        middle = len(quiet) // 2
        figure = {"changed_mirrors": self.args.small,
                  "quiet_path": {**sorted(quiet, key=lambda run: run["seconds"])[middle], "all_seconds": [run["seconds"] for run in quiet]},
                  "quiet_path_off": {**sorted(full, key=lambda run: run["seconds"])[middle], "all_seconds": [run["seconds"] for run in full]}}
        figure["ratio"] = round(figure["quiet_path_off"]["seconds"] / figure["quiet_path"]["seconds"], 2)
        print(f"    median of {len(quiet)}: quiet path {figure['quiet_path']['seconds']:.2f} s ({figure['quiet_path']['statements']} statements), "
              f"off {figure['quiet_path_off']['seconds']:.2f} s ({figure['quiet_path_off']['statements']} statements): {figure['ratio']:.2f}x", flush=True)
        return figure

    def index_compared(self) -> dict:
        """The events run with the key index kept and without it, alternating, --repeat times each."""
        print(f"== key index: {self.args.mirrors} mirrors with new events, the index kept between runs or not", flush=True)
        with warm.key_index_kept(True):
            self.events(200, label="warm-up, index built")
        kept, off = [], []
        for number in range(self.args.repeat):
            with warm.key_index_kept(True):
                kept.append(self.events(201 + 2 * number, label="index kept"))
            with warm.key_index_kept(False):
                off.append(self.events(202 + 2 * number, label="index off"))
        middle = len(kept) // 2
        figure = {"index_kept": {**sorted(kept, key=lambda run: run["seconds"])[middle], "all_seconds": [run["seconds"] for run in kept]},
                  "index_off": {**sorted(off, key=lambda run: run["seconds"])[middle], "all_seconds": [run["seconds"] for run in off]}}
        figure["ratio"] = round(figure["index_off"]["seconds"] / figure["index_kept"]["seconds"], 2)
        print(f"    median of {len(kept)}: index kept {figure['index_kept']['seconds']:.2f} s, off {figure['index_off']['seconds']:.2f} s: "
              f"{figure['ratio']:.2f}x", flush=True)
        return figure

    def events(self, batch_number: int, threads: int | None = None, label: str = "shared path", changed: int | None = None) -> dict:
        """New events for the first `changed` mirrors (all when None) in one raw snapshot, and a run of all."""
        args = self.args
        rng = random.Random(args.seed + batch_number)
        counts = [rng.randint(*args.events_range) for _ in self.mirrors[:changed]]
        frames = [
            datagen.batch_events(self.spark, TARGET_ROWS, count, batch_number).withColumn("table_name", datagen.F.lit(f"bench.items_{n}"))
            for n, count in enumerate(counts)
        ]
        reduce(lambda a, b: a.unionByName(b), frames).coalesce(1).writeTo(f"{self.project.raw_schema}.raw_events").append()
        raw_bytes = self.spark.sql(
            f"select cast(summary['added-files-size'] as bigint) as added from {self.project.raw_schema}.raw_events.snapshots "
            "order by committed_at desc limit 1").collect()[0]["added"]
        figure = self.timed_run("path:models/mirrors", threads=threads)
        figure.update(events=sum(counts), new_range_bytes=raw_bytes)
        print(f"    {label}: {len(counts)} of {args.mirrors} mirrors with {args.events_range[0]}-{args.events_range[1]} new events each ({sum(counts):,} events"
              f"{', --threads ' + str(threads) if threads else ''}): {figure['seconds']:.2f} s, {figure['statements']} statements; "
              f"{figure['range_views']} mirrors read {figure['distinct_ranges']} distinct raw range(s), whose files ({raw_bytes:,} bytes) "
              f"were read {figure['range_reads']} time(s); "
              f"Spark read {figure['input_bytes']:,} bytes", flush=True)
        return figure

    def demo(self) -> dict:
        """The demo's four mirrors, landing model included, a few hundred events per cycle; every other
        cycle with the quiet path off (inventory_products' source is quiet after the first cycle); the
        mirrors' key indexes kept between cycles, as cdc-run keeps them.
        Each cycle's seconds of JIT compilation too: Spark's and Iceberg's code is still compiled over
        the first 20 or so cycles of a process (3 s a cycle in cycles 4-8 on 2 cores)."""
        from python_jobs.demo.generate import build_waves, write_wave

        print(f"== demo: 4 mirrors, {self.args.demo_events} events per cycle, landing included, the key index kept", flush=True)
        project = demo_project(self.work, "bm_demo", "br_demo")
        warm.invoke(project, "run-operation", "create_raw_tables")
        cycles = self.args.demo_cycles
        _, waves = build_waves(self.args.seed, events=self.args.demo_events * (cycles + 1), waves=cycles + 1, snapshot_rows=50)
        seconds, quiet_off_seconds, compiling, settled = [], [], [], []
        compiler = self.spark.sparkContext._jvm.java.lang.management.ManagementFactory.getCompilationMXBean()
        for number, wave in enumerate(waves):
            write_wave(wave, project.dir.parent / "inbox_demo")
            quiet_off = number > 0 and number % 2 == 0
            compiled_before = compiler.getTotalCompilationTime()
            with quiet_path_off() if quiet_off else contextlib.nullcontext(), warm.key_index_kept(True):
                outcome = warm.invoke(project, "run")
            compiling.append(round((compiler.getTotalCompilationTime() - compiled_before) / 1000, 2))
            if number:
                (quiet_off_seconds if quiet_off else seconds).append(round(outcome.seconds, 3))
            if number + 1 > 20:  # both kinds, after the JVM's compiler settled
                settled.append(round(outcome.seconds, 3))
            print(f"    cycle {number + 1}: {len(wave.delivered)} events landed and applied in {outcome.seconds:.2f} s, "
                  f"the JVM compiling {compiling[-1]:.2f} s"
                  f"{' (first: creates the mirrors)' if not number else ' (quiet path off)' if quiet_off else ''}", flush=True)
        return {"events_per_cycle": self.args.demo_events, "key_index_kept": True, "jit_compilation_seconds": compiling,
                "settled_cycle_seconds": settled, "settled_median_seconds": warm.median(settled) if settled else None,
                "cycle_seconds": seconds, "median_seconds": warm.median(seconds),
                "quiet_path_off_cycle_seconds": quiet_off_seconds, "quiet_path_off_median_seconds": warm.median(quiet_off_seconds)}


@contextlib.contextmanager
def quiet_path_off():
    """The baseline of the quiet path: no per-table counts of the raw snapshots, so no chunk is known
    to be quiet and every mirror reads the range and applies its (empty) batch."""
    from dbt.adapters.cdc_spark.impl import CdcSparkAdapter

    original = CdcSparkAdapter._raw_added_by_table
    CdcSparkAdapter._raw_added_by_table = lambda *_args, **_kwargs: {}
    try:
        yield
    finally:
        CdcSparkAdapter._raw_added_by_table = original


@contextlib.contextmanager
def full_path():
    """The baseline: the idle check turned off (idle.sql then finds no state and takes the full path)."""
    from dbt.adapters.cdc_spark.impl import CdcSparkAdapter

    original = CdcSparkAdapter.cdc_idle_state
    CdcSparkAdapter.cdc_idle_state = lambda *_args, **_kwargs: None
    try:
        yield
    finally:
        CdcSparkAdapter.cdc_idle_state = original


def main(argv=None) -> int:
    args = arguments(argv)
    with tee_stdout(args.log):
        started = time.perf_counter()
        bench = ManyMirrors(args)
        results = {**run_header(), "mirrors": args.mirrors, "small": args.small}
        print(f"many mirrors: {results['machine']}", flush=True)
        if args.demo_only:
            results["demo"] = bench.demo()
            return finish(results, started, args)
        bench.setup()
        if args.quiet_only:
            bench.events(1, label="warm-up")
            results["quiet"] = bench.quiet_compared()
            return finish(results, started, args)
        if args.index_only:
            results["index"] = bench.index_compared()
            return finish(results, started, args)
        results["idle"] = bench.idle()
        if args.idle_only:
            return finish(results, started, args)
        bench.events(1, label="warm-up")
        results["events"] = bench.events_compared()
        if args.threads:
            results["threads"] = {"threads": args.threads, "idle": bench.idle(threads=args.threads),
                                  "events": bench.events(2, threads=args.threads)}
        results["quiet"] = bench.quiet_compared()
        results["demo"] = bench.demo()
        return finish(results, started, args)


def finish(results: dict, started: float, args: argparse.Namespace) -> int:
    results["seconds"] = round(time.perf_counter() - started, 1)
    results["load_average_at_end"] = os.getloadavg()
    summary(results)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(results, indent=2, default=str))
    print(f"\ntotal {results['seconds']:.0f} s; figures in {args.results}" + (f", log in {args.log}" if args.log else ""))
    return 0


def summary(results: dict) -> None:
    n, small = results["mirrors"], results["small"]
    quiet = results.get("quiet")
    quiet_line = (f"{small} of {n} mirrors with new events, a run of all: {quiet['quiet_path']['seconds']:.2f} s "
                  f"({quiet['quiet_path']['statements']} statements) against {quiet['quiet_path_off']['seconds']:.2f} s "
                  f"({quiet['quiet_path_off']['statements']} statements) with the quiet path off: {quiet['ratio']:.2f}x") if quiet else None
    demo = results.get("demo")
    index = results.get("index")
    if index is not None:
        print(f"\n{n} mirrors with new events: {index['index_kept']['seconds']:.2f} s with each mirror's key index kept, "
              f"{index['index_off']['seconds']:.2f} s without: {index['ratio']:.2f}x", flush=True)
        return
    if "idle" not in results:
        print("\n" + (quiet_line or f"demo cycle median {demo['median_seconds']:.2f} s, "
                                    f"quiet path off {demo['quiet_path_off_median_seconds']:.2f} s"
                                    + (f"; cycles after the 20th (both), median {demo['settled_median_seconds']:.2f} s"
                                       if demo.get("settled_median_seconds") else "")), flush=True)
        return
    idle = results["idle"]
    def met(ok: bool, at_size: bool = True) -> str:
        return ("yes" if ok else "no") if at_size else "n/a (the goal is for 200 mirrors)"

    lines = [
        "",
        "goal | measured | met",
        f"idle run of 200 mirrors <= 10 s | {n} mirrors {idle['mirrors']['seconds']:.2f} s ({idle['mirrors']['statements']} statements; "
        f"dbt's own cost for {n} no-op models {idle['noop']['seconds']:.2f} s) | {met(idle['mirrors']['seconds'] <= 10, n >= 200)}",
        f"idle run of {small} mirrors <= 1 s beyond dbt's own | {idle['beyond_dbt']['small']:.2f} s beyond {idle['noop_small']['seconds']:.2f} s "
        f"(dbt parse {idle['parse_seconds']:.2f} s); with the idle check off {idle['small_full_path']['seconds']:.2f} s, "
        f"{idle['small_full_path']['statements']} statements | {'yes' if idle['beyond_dbt']['small'] <= 1 else 'no'}",
    ]
    if "events" not in results:
        print("\n".join(lines), flush=True)
        return
    compared, demo = results["events"], results["demo"]
    events = compared["shared"]
    lines += [
        f"200 mirrors with 20-50 events each <= 60 s | {n} mirrors {events['seconds']:.2f} s, {events['statements']} statements "
        f"(per-mirror path {compared['per_mirror']['seconds']:.2f} s, {compared['per_mirror']['statements']} statements: "
        f"{compared['ratio']:.2f}x) | "
        f"{met(events['seconds'] <= 60, n >= 200) if events['seconds'] <= 60 else 'no'}",
        f"demo cycle of {demo['events_per_cycle']} events over 4 mirrors <= 3 s | median {demo['median_seconds']:.2f} s "
        f"(quiet path off {demo['quiet_path_off_median_seconds']:.2f} s) | "
        f"{'yes' if demo['median_seconds'] <= 3 else 'no'}",
        f"raw range read once per run | read {events['range_reads']} times for {n} mirrors | {'yes' if events['range_reads'] <= 1 else 'no'}",
        quiet_line,
    ]
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
