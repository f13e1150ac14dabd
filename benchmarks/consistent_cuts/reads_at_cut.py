"""Reads at a consistency group's cut beside a cdc-run process: how many, and whether any saw half a transaction.

    .venv/bin/python -m benchmarks.consistent_cuts.reads_at_cut     # until 600 reads at the cut
    .venv/bin/python -m benchmarks.consistent_cuts.reads_at_cut --reads 100

cdc-run (python_jobs/scheduler/run_loop.py) lands and applies the group's four mirrors in a
process of its own, run after run. This process writes the workload's topics wave by wave
(python_jobs/demo/transaction_source.py: bank transfers and shop orders, files that split
transactions) and reads beside it with a SparkSession of its own on the same warehouse
(python_jobs/demo/transaction_checks.py): each read at the cut looks up the group's latest cut
and checks the invariants there in one query; each plain read checks the mirrors' newest state
table after table, as a report that ignores the cut does. Once --reads reads at the cut are
done, the last wave delivers what is left, cdc-run is stopped (SIGTERM: after its run in
progress) once the cut has reached the end, and the mirrors are compared with the source.

Writes benchmarks/results/reads_at_cut.json and .log.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import warm
from benchmarks.common.measure import tee_stdout
from benchmarks.common.results import RESULTS_DIR
from benchmarks.consistent_cuts.consistent_cuts import GROUP, OPENING, make_project, write_wave
from harness.dbt_project import PROFILES_DIR, PROJECT_DIR
from python_jobs.demo.transaction_checks import CutReader, newest_state
from python_jobs.demo.transaction_source import SplitDelivery, TransactionTopics

# PySpark hands timestamps to Python in the process's local zone; the tables hold UTC.
os.environ["TZ"] = "UTC"
time.tzset()


def arguments(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reads", type=int, default=600, help="reads at the cut before the last wave (default 600)")
    parser.add_argument("--transfers", type=int, default=20, help="transfers per wave (default 20)")
    parser.add_argument("--orders", type=int, default=10, help="shop transactions per wave (default 10)")
    parser.add_argument("--wave-seconds", type=float, default=4.0, help="seconds between waves (default 4)")
    parser.add_argument("--accounts", type=int, default=50)
    parser.add_argument("--seed", type=int, default=33)
    parser.add_argument("--timeout", type=float, default=3600, help="give up after this many seconds")
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/cdc_merge_reads_at_cut"), help="deleted first")
    parser.add_argument("--results", type=Path, default=RESULTS_DIR / "reads_at_cut.json")
    return parser.parse_args(argv)


def start_cdc_run(project, log_path: Path) -> subprocess.Popen:
    """cdc-run in a process of its own: the landing and the group's mirrors, every 2 seconds."""
    env = dict(os.environ, CDC_MERGE_SCHEMA=project.schema, CDC_MERGE_RAW_SCHEMA=project.raw_schema,
               CDC_MERGE_DRIVER_MEMORY="2g")
    command = [sys.executable, "-m", "python_jobs.scheduler.run_loop", "--every", "2", "--keep-going", "--",
               "run", "--select", "raw_events", *GROUP, "--project-dir", str(project.dir),
               "--profiles-dir", str(PROFILES_DIR)]
    return subprocess.Popen(command, cwd=PROJECT_DIR, env=env, stdout=log_path.open("w"), stderr=subprocess.STDOUT)


def cut_transfers(query, schema: str) -> int | None:
    """Transfers at the group's latest cut; None before the first cut."""
    try:
        rows = query(f"select mirror_snapshot from {schema}.cdc_merge_cuts where target_table = '{schema}.transfers' "
                     f"order by cut_ordinal desc limit 1")
    except Exception:  # noqa: BLE001 - the cuts table does not exist before the first cut
        return None
    if not rows:
        return None
    return query(f"select count(*) as n from {schema}.transfers version as of {rows[0]['mirror_snapshot']}")[0]["n"]


def main(argv=None) -> int:
    args = arguments(argv)
    shutil.rmtree(args.work_dir, ignore_errors=True)
    log = args.results.with_suffix(".log")
    with tee_stdout(log):
        spark = warm.session(args.work_dir / "warehouse", driver_memory="2g")
        project = make_project(args.work_dir, GROUP)

        def query(sql: str) -> list[dict]:
            return [row.asDict() for row in spark.sql(sql).collect()]

        warm.invoke(project, "run-operation", "create_raw_tables")
        topics = TransactionTopics(args.accounts, OPENING, seed=args.seed)
        delivery = SplitDelivery(topics)
        reader = CutReader(query, project.schema, "bank", OPENING, topics.total, on_databend=False)
        print(f"waves of {args.transfers} transfers and {args.orders} shop transactions every {args.wave_seconds:g} s, "
              f"until {args.reads} reads at the cut; {os.cpu_count()} cores", flush=True)
        started = time.monotonic()
        wave = 1
        write_wave(project, wave, delivery.wave(args.transfers, args.orders))
        cdc_run = start_cdc_run(project, args.work_dir / "cdc_run.log")
        try:
            while cut_transfers(query, project.schema) is None:
                if cdc_run.poll() is not None or time.monotonic() - started > args.timeout:
                    raise RuntimeError(f"cdc-run made no cut; see {args.work_dir / 'cdc_run.log'}")
                time.sleep(1)
            reader.start()
            while reader.reads < args.reads:
                if cdc_run.poll() is not None or time.monotonic() - started > args.timeout:
                    raise RuntimeError(f"cdc-run stopped or timed out; see {args.work_dir / 'cdc_run.log'}")
                time.sleep(args.wave_seconds)
                wave += 1
                write_wave(project, wave, delivery.wave(args.transfers, args.orders))
                print(f"  wave {wave}: {reader.reads} reads at the cut ({reader.violations} violations), "
                      f"{reader.plain_reads} plain reads ({reader.plain_violations} violations)", flush=True)
            wave += 1
            write_wave(project, wave, delivery.wave(0, 0, everything=True))
            while cut_transfers(query, project.schema) != len(topics.transfer_rows):
                if time.monotonic() - started > args.timeout:
                    raise RuntimeError("the cut did not reach the last wave")
                time.sleep(1)
            reads = reader.stop()
        finally:
            cdc_run.send_signal(signal.SIGTERM)
            cdc_run.wait(timeout=600)
        seconds = time.monotonic() - started
        runs_log = (args.work_dir / "cdc_run.log").read_text()
        runs = [line for line in runs_log.splitlines() if " run " in line and (": ok in " in line or ": FAILED" in line)]
        final = newest_state(query, project.schema, "", OPENING)
        balances = {row["id"]: row["balance"] for row in query(f"select id, balance from {project.schema}.accounts")}
        orders = {row["id"]: (row["line_count"], row["total"])
                  for row in query(f"select id, line_count, total from {project.schema}.orders")}
        lags = [row["cut_lag_seconds"] for row in query(
            f"select cut_lag_seconds from {project.schema}.cdc_merge_runs where target_table = '{project.schema}.transfers' "
            "and cut_lag_seconds is not null")]
        figures = {
            "command": "benchmarks.consistent_cuts.reads_at_cut " + " ".join(argv if argv is not None else sys.argv[1:]),
            "machine": f"{os.cpu_count()} cores",
            "seconds": round(seconds, 1),
            "waves": wave,
            "transactions": len(topics.topics["ends"]),
            "cdc_run_runs": len(runs),
            "cdc_run_failed_runs": sum(": FAILED" in line for line in runs),
            "reader": reads,
            "cut_lag_seconds_median": statistics.median(lags) if lags else None,
            "mirrors_equal_source": balances == topics.balances and orders == topics.order_state(),
            "invariants_at_end": final,
        }
        print(f"{reads['reads_at_cut']} reads at the cut beside cdc-run ({len(runs)} runs, {figures['cdc_run_failed_runs']} failed), "
              f"{reads['violations_at_cut']} violations; {reads['plain_reads']} plain reads, {reads['plain_violations']} violations; "
              f"{len(reads['errors'])} read errors; cut lag median {figures['cut_lag_seconds_median']} s of source time; "
              f"mirrors equal the source: {figures['mirrors_equal_source']}; {seconds:.0f} s", flush=True)
        args.results.write_text(json.dumps(figures, indent=2) + "\n")
        spark.stop()
    return 0 if figures["mirrors_equal_source"] and reads["violations_at_cut"] == 0 and not reads["errors"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
