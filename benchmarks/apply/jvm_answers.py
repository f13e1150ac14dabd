"""What a Py4J answer larger than 8 KB costs with Nagle's algorithm on the JVM's socket and without
(python_jobs/landing/io/py4j_socket.py): a raw table's snapshot log (the idle check and the chunk
plan ask it of every mirror with new snapshots) and a plain string, read on a Python thread whose
connection is left as py4j opens it and on one set by answer_without_delay, in one process.

    .venv/bin/python -m benchmarks.apply.jvm_answers [--snapshots 300] [--calls 40]

Writes benchmarks/results/jvm_answers.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import threading
import time
from pathlib import Path

from benchmarks.common import warm
from benchmarks.common.results import RESULTS_DIR, machine
from python_jobs.landing.io.py4j_socket import answer_without_delay

RAW = "lake.jvm_answers.raw_events"


def timed_ms(call, calls: int) -> float:
    seconds = []
    for _ in range(calls):
        started = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - started)
    return round(statistics.median(seconds) * 1000, 2)


def on_new_thread(spark, calls: int, no_delay: bool) -> dict:
    """Medians of calls on a Python thread of its own (so a py4j connection of its own)."""
    from dbt.adapters.cdc_spark import table_metadata

    figures = {}

    def measure():
        if no_delay:
            answer_without_delay(spark)
        builder = spark._jvm.java.lang.StringBuilder("x" * 20_000)
        figures["snapshot_log_ms"] = timed_ms(lambda: table_metadata.snapshot_log(spark, RAW), calls)
        figures["string_20kb_ms"] = timed_ms(builder.toString, calls)
        figures["string_4kb_ms"] = timed_ms(spark._jvm.java.lang.StringBuilder("x" * 4_000).toString, calls)

    thread = threading.Thread(target=measure)
    thread.start()
    thread.join()
    return figures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snapshots", type=int, default=300, help="snapshots of the raw table (default 300)")
    parser.add_argument("--calls", type=int, default=40, help="calls per figure (default 40; medians)")
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/cdc_merge_jvm_answers"))
    args = parser.parse_args(argv)
    shutil.rmtree(args.work_dir, ignore_errors=True)
    spark = warm.session(args.work_dir / "warehouse", "2g")
    spark.sql("create namespace if not exists lake.jvm_answers")
    spark.sql(f"create table {RAW} (table_name string, key string) using iceberg partitioned by (table_name)")
    for number in range(args.snapshots):
        spark.createDataFrame([(f"shop.t{number % 50}", f"k{number}")], "table_name string, key string").writeTo(RAW).append()
    # jvm_class (the helpers' one door) sets every thread it serves; the baseline's thread skips it.
    from dbt.adapters.cdc_spark import iceberg_jvm
    original = iceberg_jvm.answer_without_delay
    iceberg_jvm.answer_without_delay = lambda _spark: False
    try:
        with_nagle = on_new_thread(spark, args.calls, no_delay=False)
    finally:
        iceberg_jvm.answer_without_delay = original
    without = on_new_thread(spark, args.calls, no_delay=True)
    results = {"command": " ".join([Path(sys.executable).name, *sys.orig_argv[1:]]), "machine": machine(),
               "snapshots": args.snapshots, "calls": args.calls, "nagle": with_nagle, "no_delay": without}
    for name in with_nagle:
        print(f"{name}: {with_nagle[name]:.2f} ms as py4j leaves the socket, {without[name]:.2f} ms with TCP_NODELAY", flush=True)
    (RESULTS_DIR / "jvm_answers.json").write_text(json.dumps(results, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
