"""What the cluster's catalog transaction costs a consistency group per run, and what plain reads see.

    .venv/bin/python -m benchmarks.consistent_cuts.catalog_transaction    # 8 waves of 20 transfers, 10 orders
    .venv/bin/python -m benchmarks.consistent_cuts.catalog_transaction --waves 4

Starts a cluster (cdc-cluster up: the catalog's PostgreSQL, a master, two workers, the Thrift
server) in --work-dir. The workload of consistent_cuts.py is landed wave by wave on the
cluster; after each landing the four mirrors of a consistency group (whose commits wait in one
catalog transaction that the cut publishes) and four mirrors of the same tables without a group
apply it, one `dbt run` each, alternating which goes first. Per run: each set's time, and the
group's statements that make the transaction (one join per mirror, one publish), timed from
dbt's log. Beside the runs, a reader checks the invariants with one query over each set's four
mirrors as they are, and a poller records every state of their catalog rows in PostgreSQL.

Writes benchmarks/results/catalog_transaction.json and .log.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import threading
from pathlib import Path

from benchmarks.common.measure import tee_stdout
from benchmarks.common.results import RESULTS_DIR
from benchmarks.consistent_cuts.consistent_cuts import GROUP, OPENING, PLAIN, make_project, write_wave
from python_jobs.cluster import cli, thrift
from python_jobs.cluster.processes import LOOPBACK
from python_jobs.demo.transaction_checks import CHECK_SQL, violations
from python_jobs.demo.transaction_source import SplitDelivery, TransactionTopics

STEP_TIMING = re.compile(r"snapshot_catalog_transaction_(join|publish)\(.*?SQL status: OK in ([0-9.]+) seconds", re.S)


def arguments(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--waves", type=int, default=8, help="landings, each followed by both sets' runs (default 8)")
    parser.add_argument("--transfers", type=int, default=20, help="transfers per wave (default 20)")
    parser.add_argument("--orders", type=int, default=10, help="shop transactions per wave (default 10)")
    parser.add_argument("--accounts", type=int, default=20)
    parser.add_argument("--seed", type=int, default=33)
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/cdc_merge_catalog_transaction"), help="deleted first")
    parser.add_argument("--results", type=Path, default=RESULTS_DIR / "catalog_transaction.json")
    return parser.parse_args(argv)


class Beside(threading.Thread):
    """Until stopped: one query per set of mirrors checking the invariants (reads, violations), and
    each distinct state of the sets' catalog rows (read in one query from the catalog database)."""

    def __init__(self, state: cli.ClusterState, schema: str, total: int) -> None:
        super().__init__(daemon=True)
        self.state, self.schema, self.total = state, schema, total
        self.stopped = threading.Event()
        self.reads = {"group": 0, "plain": 0}
        self.violations = {"group": 0, "plain": 0}
        self.states: list[dict] = []
        self.errors: list[str] = []

    def run(self) -> None:
        import psycopg2

        sets = {"group": GROUP, "plain": PLAIN}
        connection = psycopg2.connect(host=LOOPBACK, port=self.state.catalog_port, dbname="iceberg_catalog",
                                      user=self.state.catalog_user)
        connection.autocommit = True
        try:
            while not self.stopped.is_set():
                try:
                    with connection.cursor() as cursor:
                        cursor.execute("select table_name, metadata_location from iceberg_tables "
                                       "where table_namespace = %s", (self.schema,))
                        seen = dict(cursor.fetchall())
                    if not self.states or seen != self.states[-1]:
                        self.states.append(seen)
                    for name, mirrors in sets.items():
                        sql = CHECK_SQL.format(opening=OPENING, **{table: f"{self.schema}.{mirror}"
                                                                   for table, mirror in zip(GROUP, mirrors)})
                        self.violations[name] += violations(thrift.rows(sql)[0], self.total) > 0
                        self.reads[name] += 1
                except Exception as error:  # noqa: BLE001 - reported with the figures
                    self.errors.append(repr(error)[:300])
                self.stopped.wait(0.2)
        finally:
            connection.close()

    def catalog_states(self, tables: tuple) -> int:
        kept = [tuple(state.get(table) for table in tables) for state in self.states]
        return sum(1 for number, state in enumerate(kept) if number == 0 or state != kept[number - 1])

    def stop(self) -> None:
        self.stopped.set()
        self.join(timeout=60)


def main(argv=None) -> int:
    args = arguments(argv)
    shutil.rmtree(args.work_dir, ignore_errors=True)
    args.work_dir.mkdir(parents=True)
    args.work_dir.chmod(0o755)  # the catalog's PostgreSQL runs as nobody when root
    log = args.results.with_suffix(".log")
    state = cli.up(args.work_dir / "cluster", args.work_dir / "warehouse",
                   dict.fromkeys(("catalog", "master", "master_webui", "thrift"), 0),
                   worker_cores=2, worker_memory="2g", driver_memory="2g", executor_memory="1g")
    os.environ.update(state.env())
    try:
        with tee_stdout(log):
            project = make_project(args.work_dir)
            dbt_log = project.dir / "logs" / "dbt.log"
            topics = TransactionTopics(args.accounts, OPENING, seed=args.seed)
            delivery = SplitDelivery(topics)
            beside = Beside(state, project.schema, topics.total)
            print(f"{args.waves} waves of {args.transfers} transfers and {args.orders} shop transactions on the "
                  f"cluster target; {os.cpu_count()} cores", flush=True)
            waves = []
            for wave in range(1, args.waves + 1):
                write_wave(project, wave, delivery.wave(args.transfers, args.orders))
                project.dbt("run", "--select", "raw_events", "--target", "cluster")
                runs = {}
                for name, models in (("group", GROUP), ("plain", PLAIN)) if wave % 2 else (("plain", PLAIN), ("group", GROUP)):
                    logged = dbt_log.stat().st_size
                    _, seconds = project.dbt("run", "--select", *models, "--target", "cluster")
                    with dbt_log.open() as text:
                        text.seek(logged)
                        steps = STEP_TIMING.findall(text.read())
                    runs[name] = {"seconds": round(seconds, 3),
                                  "join_seconds": round(sum(float(s) for kind, s in steps if kind == "join"), 3),
                                  "publish_seconds": round(sum(float(s) for kind, s in steps if kind == "publish"), 3)}
                waves.append({"wave": wave, **runs})
                if wave == 1:
                    beside.start()  # the first run creates the tables, outside any transaction
                print(f"  wave {wave:3d}: group {runs['group']['seconds']:.2f} s (joins {runs['group']['join_seconds']:.3f} s, "
                      f"publish {runs['group']['publish_seconds']:.3f} s), without {runs['plain']['seconds']:.2f} s", flush=True)
            beside.stop()
            steady = waves[1:]
            figures = {
                "command": "benchmarks.consistent_cuts.catalog_transaction " + " ".join(argv if argv is not None else sys.argv[1:]),
                "machine": f"{os.cpu_count()} cores",
                "group_seconds_median": statistics.median(w["group"]["seconds"] for w in steady),
                "plain_seconds_median": statistics.median(w["plain"]["seconds"] for w in steady),
                "join_seconds_median": statistics.median(w["group"]["join_seconds"] for w in steady),
                "publish_seconds_median": statistics.median(w["group"]["publish_seconds"] for w in steady),
                "runs_watched": len(steady),
                "catalog_states": {"group": beside.catalog_states(GROUP), "plain": beside.catalog_states(PLAIN)},
                "reads": beside.reads, "violations": beside.violations, "errors": beside.errors,
                "waves_measured": waves,
            }
            print(f"median per run: group {figures['group_seconds_median']:.2f} s, of it joins "
                  f"{figures['join_seconds_median']:.3f} s and publish {figures['publish_seconds_median']:.3f} s; "
                  f"without a group {figures['plain_seconds_median']:.2f} s", flush=True)
            print(f"catalog states over {len(steady)} runs: group {figures['catalog_states']['group']}, without "
                  f"{figures['catalog_states']['plain']}; reads in one query: group {beside.reads['group']} "
                  f"({beside.violations['group']} violations), without {beside.reads['plain']} "
                  f"({beside.violations['plain']} violations); {len(beside.errors)} errors", flush=True)
            args.results.write_text(json.dumps(figures, indent=2) + "\n")
    finally:
        cli.down(args.work_dir / "cluster")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
