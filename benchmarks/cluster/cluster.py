"""The cluster target beside the embedded session, in one run: the apply of one batch into a mirror
and the landing of Debezium files, each by `dbt run` on the `local` target (embedded local[2]
SparkSession, Hadoop catalog) and on the `cluster` target (cdc-cluster: Thrift server, two
workers, JDBC catalog on PostgreSQL, the landing spark-submitted).

    .venv/bin/python -m benchmarks.cluster.cluster --scenarios 10000000:1000000,30000000:10000 --landing-events 1000000
    .venv/bin/python -m benchmarks.cluster.cluster --scenarios 1000000:100000 --landing-events 200000   # short

Both mirrors are set up the same way as in benchmarks/apply/run.py (created by the product from an
empty log, filled in bulk, offset at the snapshot; cluster_fill.py), the embedded one by this
process's session, the cluster's by an application submitted to the cluster. Prints one table and writes it to --results.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.cluster import cluster_fill
from benchmarks.common import datagen
from benchmarks.common.measure import format_table
from benchmarks.common.project import BenchProject
from benchmarks.common.results import RESULTS_DIR, machine
from dbt.adapters.cdc_spark.python_submit import package_zip, spark_submit_command
from python_jobs.cluster import cli, spark_conf, thrift
from python_jobs.landing import io

# PySpark hands timestamps to Python in the process's local zone; the tables hold UTC.
os.environ["TZ"] = "UTC"
time.tzset()
HERE = Path(__file__).resolve().parent

MIRROR = "bench_items"


def arguments(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenarios", default="10000000:1000000,30000000:10000",
                        help="apply scenarios, ROWS:EVENTS comma-separated: a mirror of ROWS rows, then one batch of EVENTS")
    parser.add_argument("--landing-events", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=2, help="apply runs per target (reset between); the best counts")
    parser.add_argument("--driver-memory", default=os.environ.get("CDC_MERGE_DRIVER_MEMORY", "2g"),
                        help="the embedded session's and the Thrift server's driver memory")
    parser.add_argument("--worker-memory", default="2g", help="memory of each of the two workers")
    parser.add_argument("--executor-memory", default="1g", help="the Thrift server's executors")
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/cdc-merge-bench-cluster"))
    parser.add_argument("--results", type=Path, default=RESULTS_DIR / "cluster.json")
    args = parser.parse_args(argv)
    if _megabytes(args.worker_memory) < _megabytes(args.executor_memory):
        # Otherwise an application waits forever for an executor ("has not accepted any resources"); the
        # Thrift server's executor and the fill application's take a worker each (spark_conf.application_conf).
        parser.error(f"--worker-memory {args.worker_memory} must hold an executor of --executor-memory "
                     f"{args.executor_memory}")
    try:
        args.scenarios = [tuple(int(n) for n in part.split(":")) for part in args.scenarios.split(",") if part.strip()]
    except ValueError:
        parser.error(f"--scenarios {args.scenarios!r}: write ROWS:EVENTS pairs, e.g. 10000000:1000000,30000000:10000")
    return args


def _megabytes(size: str) -> int:
    """Spark's memory sizes as the options take them: 512m, 2g."""
    units = {"m": 1, "g": 1024}
    if not size or size[-1].lower() not in units or not size[:-1].isdigit():
        raise SystemExit(f"cluster.py: memory size {size!r}: write it as Spark does, e.g. 512m or 2g")
    return int(size[:-1]) * units[size[-1].lower()]


class Side:
    """One target: its dbt project; SQL and bulk writes in this process's session (embedded) or
    through the Thrift server and spark-submit (cluster)."""

    def __init__(self, bench: "ClusterBench", target: str, tag: str):
        self.bench, self.target = bench, target
        self.schema, self.raw_schema = f"bm_{tag}", f"br_{tag}"
        self.project = BenchProject(bench.work / f"project_{tag}", self.schema, self.raw_schema, bench.work / f"inbox_{tag}")
        self.project.write_mirror(MIRROR)
        self.raw, self.mirror = f"{self.raw_schema}.raw_events", f"{self.schema}.{MIRROR}"

    def dbt(self, *args: str) -> float:
        os.environ["DBT_TARGET"] = self.target
        return self.project.dbt(*args)[1]

    def sql(self, text: str) -> list:
        if self.target == "cluster":
            return [list(row.values()) for row in thrift.rows(text)]
        return [list(row) for row in self.bench.spark.sql(text).collect()]

    def write(self, *arguments) -> None:
        """cluster_fill.py's fill or batch, on this target."""
        if self.target == "local":
            getattr(cluster_fill, {"fill": "fill", "batch": "append_batch"}[arguments[0]])(self.bench.spark, *arguments[1:])
            return
        self.bench.submit(*arguments)

    def snapshot(self, table: str) -> int:
        return self.sql(f"select snapshot_id from {table}.refs where name = 'main'")[0][0]

    def set_up(self, target_rows: int) -> None:
        self.dbt("run-operation", "create_raw_tables")
        self.dbt("run", "--select", MIRROR)
        self.write("fill", target_rows, self.raw, self.mirror, f"{self.schema}.cdc_merge_offsets")
        self.state = {name: self.snapshot(name) for name in (self.mirror, f"{self.mirror}__cdc_tombstones", f"{self.schema}.cdc_merge_offsets")}

    def add_batch(self, target_rows: int, events: int) -> None:
        self.write("batch", target_rows, self.raw, events)

    def reset(self) -> None:
        for table, snapshot in self.state.items():
            if self.snapshot(table) != snapshot:
                self.sql(f"call lake.system.set_current_snapshot('{table}', {snapshot})")

    def apply(self, expected: dict) -> dict:
        seconds = self.dbt("run", "--select", MIRROR)
        row = self.sql(f"""select rows_inserted, rows_updated, rows_deleted from {self.schema}.cdc_merge_offsets
                           where target_table = '{self.mirror}' order by offset_ordinal desc limit 1""")[0]
        counts = dict(inserted=row[0], updated=row[1], deleted=row[2])
        if counts != {k: expected[k] for k in counts}:
            raise AssertionError(f"{self.target}: applied {counts}, expected {expected}")
        summary = self.sql(f"select summary['cdc-merge.deletes'] from {self.mirror}.snapshots order by committed_at desc limit 3")
        return {"seconds": round(seconds, 2), "deletes": sorted({r[0] for r in summary if r[0]}) or ["merge"]}


class ClusterBench:
    def __init__(self, args: argparse.Namespace, state: cli.ClusterState):
        self.work = args.work_dir
        self.state = state
        self.executor_memory = args.executor_memory
        os.environ["CDC_MERGE_WAREHOUSE"] = str(self.work / "warehouse")
        from pyspark.sql import SparkSession

        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = SparkSession.builder.appName("cdc_merge_bench_cluster").master("local[2]")
        for name, value in {**io.iceberg_spark_conf(str(self.work / "warehouse")), "spark.driver.memory": args.driver_memory}.items():
            builder = builder.config(name, value)
        self.spark = builder.config("spark.ui.showConsoleProgress", "false").getOrCreate()
        self.spark.sparkContext.setLogLevel("ERROR")

    def submit(self, *arguments) -> None:
        """cluster_fill.py as an application on the cluster, its catalog the Thrift server's."""
        conf = {**spark_conf.application_conf(self.state.master_url, self.executor_memory, cores=2),
                **spark_conf.jdbc_catalog_conf(self.state.catalog_uri, self.state.catalog_user, self.state.warehouse),
                "spark.jars": ",".join(spark_conf.cluster_jars()), "spark.driver.memory": "1g",
                "spark.pyspark.python": sys.executable}
        # cluster_fill.py runs as a script there: it imports benchmarks.common.datagen from the shipped package.
        zipped = [package_zip(self.work, "python_jobs"), package_zip(self.work, "benchmarks")]
        command = [*spark_submit_command(conf, HERE / "cluster_fill.py", zipped), *map(str, arguments)]
        log = self.work / "cluster_fill.log"
        with open(log, "a") as output:
            done = subprocess.run(command, stdout=output, stderr=subprocess.STDOUT, env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"})
        if done.returncode:
            raise RuntimeError(f"cluster_fill.py {arguments[0]} failed on the cluster; see {log}")


def main(argv=None) -> int:
    args = arguments(argv)
    import shutil

    shutil.rmtree(args.work_dir, ignore_errors=True)
    args.work_dir.mkdir(parents=True)
    args.work_dir.chmod(0o755)
    folder = args.work_dir / "cluster"
    print(f"== cdc-cluster up in {folder}", flush=True)
    state = cli.up(folder, folder / "warehouse", dict.fromkeys(("catalog", "master", "master_webui", "thrift"), 0),
                   worker_cores=2, worker_memory=args.worker_memory, driver_memory=args.driver_memory,
                   executor_memory=args.executor_memory)
    results: dict = {"command": " ".join([Path(sys.executable).name, *sys.orig_argv[1:]]), "machine": machine(),
                     "landing_events": args.landing_events, "apply": [], "landing": {}}
    try:
        os.environ.update(state.env())
        bench = ClusterBench(args, state)
        for number, (target_rows, batch_events) in enumerate(args.scenarios):
            scenario = {"target_rows": target_rows, "batch_events": batch_events}
            expected = datagen.expected_batch_counts(batch_events)
            for side in (Side(bench, "local", f"embedded_{number}"), Side(bench, "cluster", f"cluster_{number}")):
                print(f"== {side.target}: mirror of {target_rows:,} rows, then {batch_events:,} events", flush=True)
                side.set_up(target_rows)
                side.add_batch(target_rows, batch_events)
                runs = []
                for _ in range(args.rounds):
                    runs.append(side.apply(expected))
                    print(f"   apply: {runs[-1]}", flush=True)
                    side.reset()
                scenario[side.target] = {"runs": runs, "best_seconds": min(run["seconds"] for run in runs)}
            results["apply"].append(scenario)
        sides = [Side(bench, "local", "embedded_landing"), Side(bench, "cluster", "cluster_landing")]

        inbox = args.work_dir / "landing_inbox"
        files = datagen.write_debezium_files(inbox, args.landing_events)
        for side in sides:
            landing = BenchProject(args.work_dir / f"landing_{side.target}", side.schema, f"bl_{side.target}", inbox)
            os.environ["DBT_TARGET"] = side.target
            landing.dbt("run-operation", "create_raw_tables")
            _, seconds = landing.dbt("run", "--select", "raw_events")
            landed = side.sql(f"select count(*) from bl_{side.target}.raw_events")[0][0]
            if landed != args.landing_events:
                raise AssertionError(f"{side.target}: landed {landed} of {args.landing_events} events")
            results["landing"][side.target] = {"seconds": round(seconds, 2), "files": files, "events": landed}
            print(f"== {side.target}: landed {landed:,} events from {files} files by dbt run in {seconds:.1f} s", flush=True)
    finally:
        cli.down(folder)
    print_table(results)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(results, indent=2) + "\n")
    return 0


def print_table(results: dict) -> None:
    landing = results["landing"]
    rows = [
        [f"apply: {scenario['batch_events']:,} events into {scenario['target_rows']:,} rows (dbt run, best of runs)",
         f"{scenario['local']['best_seconds']:.1f}", f"{scenario['cluster']['best_seconds']:.1f}",
         f"{scenario['cluster']['best_seconds'] / scenario['local']['best_seconds']:.2f}x"]
        for scenario in results["apply"]
    ]
    rows.append([f"landing: {results['landing_events']:,} Debezium events (dbt run of raw_events)",
                 f"{landing['local']['seconds']:.1f}", f"{landing['cluster']['seconds']:.1f}",
                 f"{landing['cluster']['seconds'] / landing['local']['seconds']:.2f}x"])
    print(f"machine: {results['machine']}")
    print(format_table(["", "embedded s", "cluster s", "cluster / embedded"], rows, right={1, 2, 3}))
    for scenario in results["apply"]:
        print(f"deletes at {scenario['target_rows']:,} rows: cluster {scenario['cluster']['runs'][0]['deletes']}, "
              f"embedded {scenario['local']['runs'][0]['deletes']}")


if __name__ == "__main__":
    sys.exit(main())
