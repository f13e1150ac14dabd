"""What the py4j round trips around each JVM call cost, in one process: PySpark's `F.col` with py4j's
look-ups as py4j leaves them and kept (python_jobs/landing/io/py4j_lookups.py), and a statement
through dbt-spark's session cursor and through the adapter's (adapter/dbt/adapters/cdc_spark/
session_cursor.py), with the settings the `local` profile hands the cursor.

    .venv/bin/python -m benchmarks.apply.jvm_calls [--calls 300] [--rounds 5]

Each figure is the median over --rounds rounds of the mean of --calls calls, the two ways
alternating. Writes benchmarks/results/jvm_calls.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

import yaml

from benchmarks.common import warm
from benchmarks.common.results import RESULTS_DIR, machine

PROFILES = Path(__file__).resolve().parents[2] / "profiles" / "profiles.yml"


def mean_ms(call, calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        call()
    return (time.perf_counter() - started) / calls * 1000


def profile_settings(spark) -> dict:
    """The local profile's server_side_parameters as the adapter completes them (connections.py),
    each valued as the running session has it (their count and kind are what the cursor pays for)."""
    from dbt.adapters.cdc_spark.connections import CdcSparkCredentials, with_local_session_settings

    declared = yaml.safe_load(PROFILES.read_text())["cdc_merge"]["outputs"]["local"]["server_side_parameters"]
    conf = spark.sparkContext.getConf()
    settings = {name: conf.get(name, spark.conf.get(name, "")) for name in declared}
    credentials = CdcSparkCredentials(method="session", host="localhost", schema="bench", server_side_parameters=settings)
    with_local_session_settings(credentials)
    return dict(credentials.server_side_parameters)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="calls per round (default 300)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of each way (default 5; medians)")
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/cdc_merge_jvm_calls"))
    args = parser.parse_args(argv)
    shutil.rmtree(args.work_dir, ignore_errors=True)
    spark = warm.session(args.work_dir / "warehouse", "2g")
    from dbt.adapters.spark import session as dbt_spark_session
    from py4j.java_gateway import JVMView
    from pyspark.sql import functions as F

    from dbt.adapters.cdc_spark.session_cursor import KeptSettingsCursor
    from python_jobs.landing.io.py4j_lookups import KeptClassesView

    settings = profile_settings(spark)
    jvm = spark.sparkContext._jvm
    cursors = {"dbt_spark_cursor": dbt_spark_session.Cursor(server_side_parameters=settings),
               "kept_settings_cursor": KeptSettingsCursor(server_side_parameters=settings)}
    rounds: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for view, name in ((JVMView, "f_col_as_py4j_looks_up"), (KeptClassesView, "f_col_kept")):
            jvm.__class__ = view  # a plain view finds nothing kept: its instance's kept names are set aside
            kept = {key: jvm.__dict__.pop(key) for key in list(jvm.__dict__) if view is JVMView and not key.startswith("_")}
            F.col("warm")
            rounds.setdefault(name, []).append(mean_ms(lambda: F.col("x"), args.calls))
            jvm.__dict__.update(kept)
        for name, cursor in cursors.items():
            cursor.execute("select 1")
            rounds.setdefault(f"statement_{name}", []).append(mean_ms(lambda: cursor.execute("select 1"), args.calls))
    jvm.__class__ = KeptClassesView
    figures = {name: round(statistics.median(values), 3) for name, values in rounds.items()}
    results = {"command": " ".join([Path(sys.executable).name, *sys.orig_argv[1:]]), "machine": machine(),
               "calls": args.calls, "rounds": args.rounds, "profile_settings": len(settings), "median_ms": figures,
               "rounds_ms": {name: [round(value, 3) for value in values] for name, values in rounds.items()}}
    print(f"F.col: {figures['f_col_as_py4j_looks_up']:.3f} ms with py4j's look-ups, {figures['f_col_kept']:.3f} ms kept", flush=True)
    print(f"a statement's execute (select 1, {len(settings)} settings): {figures['statement_dbt_spark_cursor']:.3f} ms through "
          f"dbt-spark's cursor, {figures['statement_kept_settings_cursor']:.3f} ms through the adapter's", flush=True)
    (RESULTS_DIR / "jvm_calls.json").write_text(json.dumps(results, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
