"""What a consistency group costs per run, and how far its cut lags, against the same mirrors without one.

    .venv/bin/python -m benchmarks.consistent_cuts.consistent_cuts     # 20 waves of 50 transfers, 25 orders
    .venv/bin/python -m benchmarks.consistent_cuts.consistent_cuts --waves 6 --transfers 20 --orders 10

One warm process, as cdc-run runs it (benchmarks/common/warm.py). The workload of
python_jobs/demo/transaction_source.py (Debezium with transaction metadata, one topic per table:
bank transfers and shop orders in one commit order, the accounts and order lines topics' files
ending mid-transaction, the transfers topic a wave behind) is landed wave by wave; after each
landing two sets of mirrors of the same four tables apply it: one in a consistency group, one
without. Their `dbt run`s alternate which goes first. Per wave: each set's run time and
statements, and the group's cut: its lag (newest landed commit minus the cut's, in source time)
and how many transfers wait for the next run. A reader beside the runs
(python_jobs/demo/transaction_checks.py) checks the invariants at every read at the cut, and
counts the violations of plain reads of the group's mirrors; it loads both sets' runs alike.
benchmarks/consistent_cuts/reads_at_cut.py runs the reader beside a cdc-run process instead.

Writes benchmarks/results/consistent_cuts.json and .log.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

import yaml

from benchmarks.common import warm
from benchmarks.common.measure import tee_stdout
from benchmarks.common.project import BenchProject
from benchmarks.common.results import RESULTS_DIR
from benchmarks.common.sql_clock import install_sql_clock
from python_jobs.demo.transaction_checks import MIRRORS, CutReader
from python_jobs.demo.transaction_source import KEYS, SCHEMA_OF, SplitDelivery, TransactionTopics

# PySpark hands timestamps to Python in the process's local zone; the tables hold UTC.
os.environ["TZ"] = "UTC"
time.tzset()

COLUMNS = {
    "accounts": {"id": "bigint", "balance": "bigint"},
    "transfers": {"id": "bigint", "from_id": "bigint", "to_id": "bigint", "amount": "bigint"},
    "orders": {"id": "bigint", "line_count": "bigint", "total": "bigint"},
    "order_lines": {"id": "bigint", "order_id": "bigint", "amount": "bigint"},
}
GROUP = MIRRORS
PLAIN = tuple(f"plain_{name}" for name in MIRRORS)
OPENING = 1000


def arguments(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--waves", type=int, default=20, help="landings, each followed by both pairs' runs (default 20)")
    parser.add_argument("--transfers", type=int, default=50, help="transfers per wave (default 50)")
    parser.add_argument("--orders", type=int, default=25, help="shop transactions per wave (default 25)")
    parser.add_argument("--accounts", type=int, default=100)
    parser.add_argument("--seed", type=int, default=33)
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/cdc_merge_consistent_cuts"), help="deleted first")
    parser.add_argument("--results", type=Path, default=RESULTS_DIR / "consistent_cuts.json")
    return parser.parse_args(argv)


def make_project(work: Path, mirrors: tuple = GROUP + PLAIN) -> BenchProject:
    """A project copy with the workload's tables in its landing config and the given mirrors
    (names as in MIRRORS; a plain_ prefix for one without a group)."""
    project = BenchProject(work / "project", "bench_cuts", "bench_cuts_raw", work / "inbox")
    landing = yaml.safe_load((project.dir / "landing.yml").read_text())
    landing["tables"] = {table: {"key": key} for table, key in KEYS.items()}
    (project.dir / "landing.yml").write_text(yaml.safe_dump(landing))
    for name in mirrors:
        table = name.removeprefix("plain_")
        columns = f"        {{{{ cdc_merge.cdc_columns({COLUMNS[table]!r}) }}}}"
        project.write_mirror(name, f"{SCHEMA_OF[table]}.{table}", columns, ", consistency_group='bank'" if name in GROUP else "")
    return project


def write_wave(project: BenchProject, wave: int, delivered: dict) -> None:
    for topic, events in delivered.items():
        (project.dir.parent / "inbox" / f"w{wave:04d}-{topic}.json").write_text("".join(json.dumps(e) + "\n" for e in events))


def timed(project: BenchProject, clock, models: tuple) -> dict:
    with clock.measuring():
        outcome = warm.invoke(project, "run", "--select", *models)
    return {"seconds": round(outcome.seconds, 3), "statements": clock.statements,
            "by_kind": {kind: count for kind, (count, _) in sorted(clock.by_kind.items())}}


def main(argv=None) -> int:
    args = arguments(argv)
    shutil.rmtree(args.work_dir, ignore_errors=True)
    log = args.results.with_suffix(".log")
    with tee_stdout(log):
        spark = warm.session(args.work_dir / "warehouse", driver_memory="2g")
        project = make_project(args.work_dir)
        clock = install_sql_clock()
        warm.invoke(project, "run-operation", "create_raw_tables")
        topics = TransactionTopics(args.accounts, OPENING, seed=args.seed)
        delivery = SplitDelivery(topics)
        reader = CutReader(lambda sql: [row.asDict() for row in spark.sql(sql).collect()], project.schema, "bank",
                           OPENING, topics.total, on_databend=False)
        waves = []
        print(f"{args.waves} waves of {args.transfers} transfers and {args.orders} shop transactions; "
              f"{os.cpu_count()} cores", flush=True)
        for wave in range(1, args.waves + 1):
            write_wave(project, wave, delivery.wave(args.transfers, args.orders))
            warm.invoke(project, "run", "--select", "raw_events")
            order = (GROUP, PLAIN) if wave % 2 else (PLAIN, GROUP)
            runs = {models: timed(project, clock, models) for models in order}
            cut = spark.sql(
                f"select max(cut_lag_seconds) as lag from {project.schema}.cdc_merge_cuts "
                f"where cut_ordinal = (select max(cut_ordinal) from {project.schema}.cdc_merge_cuts)").first()
            at_cut = spark.sql(f"select count(*) from {project.schema}.transfers").first()[0]
            entry = {"wave": wave, "group": runs[GROUP], "plain": runs[PLAIN], "cut_lag_seconds": cut["lag"],
                     "transfers_waiting": len(topics.transfer_rows) - at_cut}
            waves.append(entry)
            if wave == 1:
                reader.start()
            print(f"  wave {wave:3d}: group {entry['group']['seconds']:.2f} s ({entry['group']['statements']} statements), "
                  f"without {entry['plain']['seconds']:.2f} s ({entry['plain']['statements']}); cut lag "
                  f"{entry['cut_lag_seconds']} s, {entry['transfers_waiting']} transfers waiting", flush=True)
        reads = reader.stop()
        print(f"reader beside the runs: {reads['reads_at_cut']} reads at the cut, {reads['violations_at_cut']} violations; "
              f"{reads['plain_reads']} plain reads of the group's mirrors, {reads['plain_violations']} violations; "
              f"{len(reads['errors'])} errors", flush=True)
        # The first wave creates the mirrors: left out of the figures.
        steady = waves[1:]
        figures = {
            "command": "benchmarks.consistent_cuts.consistent_cuts " + " ".join(argv if argv is not None else sys.argv[1:]),
            "machine": f"{os.cpu_count()} cores",
            "waves": args.waves, "transfers_per_wave": args.transfers, "shop_transactions_per_wave": args.orders,
            "group_seconds_median": statistics.median(w["group"]["seconds"] for w in steady),
            "plain_seconds_median": statistics.median(w["plain"]["seconds"] for w in steady),
            "group_statements_median": statistics.median(w["group"]["statements"] for w in steady),
            "plain_statements_median": statistics.median(w["plain"]["statements"] for w in steady),
            "cut_lag_seconds_median": statistics.median(w["cut_lag_seconds"] for w in steady),
            "transfers_waiting_median": statistics.median(w["transfers_waiting"] for w in steady),
            "reader": reads,
            "waves_measured": waves,
        }
        figures["group_over_plain"] = round(figures["group_seconds_median"] / figures["plain_seconds_median"], 2)
        print(f"median per run: group {figures['group_seconds_median']:.2f} s, without {figures['plain_seconds_median']:.2f} s "
              f"({figures['group_over_plain']}x); statements {figures['group_statements_median']} vs "
              f"{figures['plain_statements_median']}; cut lag {figures['cut_lag_seconds_median']} s of source time, "
              f"{figures['transfers_waiting_median']} transfers waiting", flush=True)
        args.results.write_text(json.dumps(figures, indent=2) + "\n")
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
