"""One mirror taking batch after batch in one warm process, as cdc-run applies them: `dbt run` of the
mirror with its key index kept between runs (python_jobs/apply/key_index.py, KeyIndex.java) and with
the index off, alternating, beside a hand-written dedup + MERGE of the same batch; with --modes, also
with the index kept and the driver's rows folded by Spark's own interpreted projection instead of
the compiled one (adapter/dbt/adapters/cdc_spark/compiled_fold.py).

    .venv/bin/python -m benchmarks.apply.key_index                                  # 10k events into 1M rows
    .venv/bin/python -m benchmarks.apply.key_index --target-rows 3000000 --rounds 4
    .venv/bin/python -m benchmarks.apply.key_index --modes index_kept,index_kept_spark_fold

The mirror is created by the product and filled in bulk as in benchmarks.apply.run. Each round
appends a new batch (common/datagen.py batch_events: random keys over the whole mirror) to the raw
table; the hand-written MERGE applies it to the mirror and the mirror is set back to its snapshot
(Iceberg set_current_snapshot: a snapshot's rows never change, so an index kept for it stays
valid); then the product applies it, with the index kept or off. A warm-up round first builds the
index (its time is reported apart). Every figure is the median of --rounds rounds of its kind;
writes benchmarks/results/key_index.json and .log.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

from benchmarks.apply import methods
from benchmarks.common import datagen, warm
from benchmarks.common.measure import tee_stdout
from benchmarks.common.project import BenchProject
from benchmarks.common.results import RESULTS_DIR, run_header
from benchmarks.common.sql_clock import install_sql_clock, strip_comment
from dbt.adapters.cdc_spark import compiled_fold
from python_jobs.apply import key_index

MIRROR = "bench_items"
# Each mode: the key index kept, and the driver's rows folded by generated code.
MODES = {"index_kept": (True, True), "index_off": (False, True), "index_kept_spark_fold": (True, False)}


def arguments(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target-rows", type=int, default=1_000_000)
    parser.add_argument("--batch-events", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5, help="rounds of each mode, the modes alternating")
    parser.add_argument("--modes", default="index_kept,index_off", help=f"comma-separated, of: {', '.join(MODES)}")
    parser.add_argument("--driver-memory", default="6g")
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/cdc_merge_key_index"), help="warehouse and project (deleted first)")
    parser.add_argument("--results", type=Path, default=RESULTS_DIR / "key_index.json")
    args = parser.parse_args(argv)
    args.modes = [mode.strip() for mode in args.modes.split(",")]
    unknown = [mode for mode in args.modes if mode not in MODES]
    if unknown or not args.modes:
        parser.error(f"--modes: unknown {', '.join(unknown)}; choose from {', '.join(MODES)}")
    return args


class KeyIndexBench:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        shutil.rmtree(args.work_dir, ignore_errors=True)
        args.work_dir.mkdir(parents=True)
        self.spark = warm.session(args.work_dir / "warehouse", args.driver_memory)
        self.clock = install_sql_clock()
        self.project = BenchProject(args.work_dir / "project", "bm_index", "br_index", args.work_dir / "inbox")
        self.project.write_mirror(MIRROR)
        self.raw, self.mirror = "br_index.raw_events", f"bm_index.{MIRROR}"
        self.batches = 0

    def sql(self, text: str) -> list:
        return self.spark.sql(text).collect()

    def snapshot(self, table: str) -> int:
        return self.sql(f"select snapshot_id from {table}.refs where name = 'main'")[0][0]

    def setup(self) -> None:
        rows = self.args.target_rows
        print(f"== setup: a mirror of {rows:,} rows", flush=True)
        warm.invoke(self.project, "run-operation", "create_raw_tables")
        warm.invoke(self.project, "run", "--select", MIRROR)
        datagen.snapshot_events(self.spark, rows).writeTo(self.raw).append()
        after = self.snapshot(self.raw)
        datagen.mirror_rows(self.spark, rows).writeTo(self.mirror).append()
        # A tombstone for a key that never exists: the tombstones table has a snapshot, as after any delete.
        self.sql(f"insert into {self.mirror}__cdc_tombstones values ('[\"-1\"]', '0', timestamp'2000-01-01 00:00:00')")
        self.sql(f"""insert into bm_index.cdc_merge_offsets select '{self.mirror}', 1, '{self.raw}', '{datagen.SOURCE_TABLE}',
            '{after}', {rows}, {rows}, 0, 0, 0, timestamp'2026-01-01 00:00:00', current_timestamp(), 'bench-setup'""")

    def round(self, label: str, mode: str) -> dict:
        """A new batch: the hand-written MERGE of it (then undone), then the product's run of it."""
        self.batches += 1
        before_batch = self.snapshot(self.raw)
        datagen.batch_events(self.spark, self.args.target_rows, self.args.batch_events, self.batches).writeTo(self.raw).append()
        methods.batch_read(self.spark, self.raw, before_batch, self.snapshot(self.raw), "bench_batch_events")
        mirror_at = self.snapshot(self.mirror)
        started = time.perf_counter()
        self.sql(methods.handwritten_merge_sql(self.mirror, "bench_batch_events"))
        handwritten = time.perf_counter() - started
        self.sql(f"call lake.system.set_current_snapshot('{self.mirror}', {mirror_at})")
        index_kept, compiled = MODES[mode]
        os.environ[key_index.KEY_INDEX_MAX_KEYS_ENV] = str(4 * self.args.target_rows if index_kept else 0)
        os.environ[compiled_fold.SWITCH_ENV] = "1" if compiled else "0"
        collected_before = self.collection_seconds()
        with self.clock.measuring():
            product = warm.invoke(self.project, "run", "--select", MIRROR).seconds
        collections = self.collection_seconds() - collected_before
        slowest = sorted(self.clock.recorded, key=lambda item: -item[1])[:6]
        figure = {"product_seconds": round(product, 3), "sql_seconds": round(self.clock.seconds, 3),
                  "statements": self.clock.statements, "handwritten_seconds": round(handwritten, 3),
                  "collections_seconds": round(collections, 3),
                  "slowest_statements": [[round(seconds, 3), " ".join(strip_comment(sql).split())[:120]] for sql, seconds in slowest]}
        print(f"    {label}: product {product:.2f} s (SQL {self.clock.seconds:.2f} s, {self.clock.statements} statements, "
              f"garbage collections {collections:.2f} s), hand-written MERGE {handwritten:.2f} s", flush=True)
        return figure

    def collection_seconds(self) -> float:
        """The JVM's time in garbage collections so far (its collectors' MXBeans)."""
        beans = self.spark._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
        return sum(bean.getCollectionTime() for bean in beans) / 1000

    def heap_used(self) -> int:
        runtime = self.spark._jvm.java.lang.Runtime.getRuntime()
        self.spark._jvm.java.lang.System.gc()
        return int(runtime.totalMemory() - runtime.freeMemory())


def median_of(rounds: list[dict], name: str) -> float:
    return warm.median([figure[name] for figure in rounds])


def main(argv=None) -> int:
    args = arguments(argv)
    with tee_stdout(args.results.with_suffix(".log")):
        started = time.perf_counter()
        bench = KeyIndexBench(args)
        results = {**run_header(), "target_rows": args.target_rows, "batch_events": args.batch_events}
        print(f"key index: {results['machine']}", flush=True)
        bench.setup()
        bench.round("warm-up, index off", "index_off")
        heap_before = bench.heap_used()
        results["index_built"] = bench.round("warm-up, index built", "index_kept")
        results["index_heap_bytes_per_key"] = round((bench.heap_used() - heap_before) / args.target_rows)
        rounds: dict[str, list[dict]] = {mode: [] for mode in args.modes}
        for number in range(args.rounds):
            for mode in args.modes:
                rounds[mode].append(bench.round(f"round {number + 1}, {mode}", mode))
        handwritten = warm.median([figure["handwritten_seconds"] for figures in rounds.values() for figure in figures])
        results["handwritten_median_seconds"] = handwritten
        for mode, figures in rounds.items():
            results[mode] = {"rounds": figures, **{f"median_{key}": median_of(figures, key)
                                                   for key in ("product_seconds", "sql_seconds", "handwritten_seconds",
                                                               "collections_seconds")}}
            results[mode]["handwritten_over_product"] = round(handwritten / results[mode]["median_product_seconds"], 2)
        results["seconds"] = round(time.perf_counter() - started, 1)
        products = ", ".join(f"{results[mode]['median_product_seconds']:.2f} s {mode} ({results[mode]['handwritten_over_product']:.2f}x)"
                             for mode in args.modes)
        print(f"\n{args.batch_events:,} events into {args.target_rows:,} rows, medians of {args.rounds}: product {products} "
              f"against the hand-written MERGE's {handwritten:.2f} s; the index built in "
              f"{results['index_built']['product_seconds']:.2f} s of its first run, about "
              f"{results['index_heap_bytes_per_key']} bytes of heap a key; the JVM's garbage collections during a run at most "
              f"{max(figure['collections_seconds'] for figures in rounds.values() for figure in figures):.2f} s", flush=True)
        args.results.parent.mkdir(parents=True, exist_ok=True)
        args.results.write_text(json.dumps(results, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
