"""Soak: many land + apply cycles in one long-lived process, with and without maintenance.

    .venv/bin/python -m benchmarks.soak.soak                              # 500 cycles of each variant
    .venv/bin/python -m benchmarks.soak.soak --cycles 40 --events-per-cycle 1000 --ramp 2000,8000
    .venv/bin/python -m benchmarks.soak.soak --no-maintenance             # only the variant without

Each variant runs in a process of its own (this module again, --variant), which lives through all
its cycles as cdc-run does (python_jobs/scheduler/run_loop.py invoke_dbt, one SparkSession). A cycle: the
simulated sources (python_jobs/demo/generate.py ShopSource: inserts, updates, deletes, re-inserts,
primary-key changes) commit --events-per-cycle events, stamped with source commit times spread over
the previous cycle (the events a continuous source makes while a cycle runs); they are written as
Debezium files, and one `dbt run` lands them (the landing model) and applies them to --tables
mirrors (the demo's shop models, one copy per simulated database `shop<k>`). Maintenance runs as
the models configure it: defaults (maintenance) or maintenance='off' (no-maintenance).

Per cycle: its time, the mirrors' and the raw table's data + delete files and snapshots (Iceberg
metadata), resident memory of this Python process and of the JVM, the lag of every event from its
source commit to its mirror's commit (the offset row's committed_at). At the end: warehouse bytes
against live data bytes, and each mirror against a plain-Python replay of its source. Then (with
maintenance) a short ramp of larger cycles for the highest sustained event rate whose lag stays
under --lag-goal seconds.

Writes benchmarks/results/soak.json, soak.log and soak.png (soak_plot.py beside this file); the
workload is soak_workload.py, the summary soak_report.py.
"""

from __future__ import annotations

import argparse
import array
import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import warm
from benchmarks.common.measure import tee_stdout
from benchmarks.common.project import BenchProject
from benchmarks.common.results import RESULTS_DIR, machine
from benchmarks.soak.soak_report import report, summarize
from benchmarks.soak.soak_workload import Sources, write_cycle_files
from harness.dbt_project import PROJECT_DIR

# PySpark hands timestamps to Python in the process's local zone; the tables hold UTC.
os.environ["TZ"] = "UTC"
time.tzset()

VARIANTS = ("maintenance", "no-maintenance")
# The JVM's own log lines and Spark's start-up notice, left out of the soak's log.
SPARK_NOISE = re.compile(r"^(\d\d/\d\d/\d\d \d\d:\d\d:\d\d (WARN|INFO)|Setting default log level|To adjust logging level|\s*$)")


def arguments(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cycles", type=int, default=500, help="land + apply cycles per variant (default 500)")
    parser.add_argument("--events-per-cycle", type=int, default=2000, help="source events per cycle, all tables (default 2000)")
    parser.add_argument("--tables", type=int, default=6, help="source tables and mirrors, at least 4 (default 6: two shop databases)")
    parser.add_argument("--no-maintenance", action="store_true", help="only the variant without maintenance")
    parser.add_argument("--maintenance-only", action="store_true", help="only the variant with maintenance")
    parser.add_argument("--maintenance-config", default="",
                        help="maintenance configs for the maintenance variant's models instead of the defaults, e.g. "
                             "maintenance_max_snapshots=20,snapshot_retention_hours=0 (for a short run to reach a threshold)")
    parser.add_argument("--ramp", default="2000,5000,10000,20000,40000",
                        help="events per cycle of the rate ramp after the soak (maintenance variant; '' for none)")
    parser.add_argument("--ramp-cycles", type=int, default=3, help="cycles per ramp step")
    parser.add_argument("--lag-goal", type=float, default=30.0, help="seconds: the ramp's p95 lag limit")
    parser.add_argument("--driver-memory", default="2g",
                        help="spark.driver.memory (default 2g: the soak's tables are small, and a bounded heap makes the JVM's "
                             "resident memory a trend, not the garbage collector's growth to a large heap)")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/cdc_merge_soak"), help="warehouses, projects, inboxes (deleted first)")
    parser.add_argument("--results", type=Path, default=RESULTS_DIR / "soak.json")
    parser.add_argument("--log", default=None, help="copy of what the run prints; default: --results with .log")
    parser.add_argument("--plot", default=None, help="the plot; default: --results with .png ('' for none)")
    parser.add_argument("--variant", choices=VARIANTS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.tables < 4:
        parser.error("--tables must be at least 4 (the soak covers four tables or more)")
    if args.cycles < 2:
        parser.error("--cycles must be at least 2")
    args.ramp_steps = [int(step) for step in args.ramp.split(",") if step.strip()]
    try:
        args.maintenance_settings = dict(item.split("=", 1) for item in args.maintenance_config.split(",") if item.strip())
    except ValueError:
        parser.error(f"--maintenance-config takes name=value pairs separated by commas, got {args.maintenance_config!r}")
    args.log = args.results.with_suffix(".log") if args.log is None else Path(args.log) if args.log else None
    args.plot = args.results.with_suffix(".png") if args.plot is None else Path(args.plot) if args.plot else None
    return args


# --- one variant, in its own process ------------------------------------------------------------------

class Soak:
    def __init__(self, args, variant: str):
        self.args, self.variant = args, variant
        self.work = args.work_dir / variant
        shutil.rmtree(self.work, ignore_errors=True)
        self.work.mkdir(parents=True)
        self.warehouse = self.work / "warehouse"
        self.spark = warm.session(self.warehouse, args.driver_memory)
        self.jvm_pid = warm.jvm_pid(self.spark)
        self.sources = Sources(args.tables, args.seed)
        self.project = BenchProject(self.work / "project", "soak_mirror", "soak_raw", self.work / "inbox")
        self.models = {table: table.replace(".", "_") for table in self.sources.tables}
        self._write_project()
        self.cycles: list[dict] = []
        self.window = 1.0

    def _write_project(self) -> None:
        import yaml

        from python_jobs.demo.generate import KEYS

        for table, model in self.models.items():
            template = (PROJECT_DIR / "models" / "mirrors" / f"shop_{table.split('.')[1]}.sql").read_text()
            sql = template.replace(f"source_table='shop.{table.split('.')[1]}'", f"source_table='{table}'")
            settings = {"maintenance": "'off'"} if self.variant == "no-maintenance" else self.args.maintenance_settings
            added = "".join(f"        {name}={value},\n" for name, value in settings.items())
            sql = sql.replace("    config(\n", "    config(\n" + added, 1)
            (self.project.dir / "models" / "mirrors" / f"{model}.sql").write_text(sql)
        landing = self.project.dir / "landing.yml"
        config = yaml.safe_load(landing.read_text())
        config["tables"] = {table: {"key": list(KEYS["shop." + table.split(".")[1]])} for table in self.sources.tables}
        landing.write_text(yaml.safe_dump(config))

    def table_state(self, table: str) -> dict:
        from dbt.adapters.cdc_core.run_state import mirror_metadata

        state = mirror_metadata(self.spark, table)
        if state is None:
            return {"data_files": None, "delete_files": None, "snapshots": None}
        return {"data_files": state["data_files"], "delete_files": state["delete_files"],
                "snapshots": len(state["older_snapshot_ages_seconds"]) + 1}

    def cycle(self, number: int, events_per_cycle: int, phase: str) -> dict:
        events = self.sources.next_events(events_per_cycle)
        times = write_cycle_files(events, self.project.dir.parent / "inbox", number, self.window)
        started_wall = dt.datetime.utcnow()
        outcome = warm.invoke(self.project, "run")
        self.window = outcome.seconds
        schema = self.project.schema
        commits = {row["target_table"]: row["committed_at"] for row in self.spark.sql(
            f"select target_table, max(committed_at) as committed_at from {schema}.cdc_merge_offsets "
            f"where committed_at >= timestamp '{started_wall:%Y-%m-%d %H:%M:%S.%f}' group by target_table").collect()}
        lags = []
        for table, moments in times.items():
            committed = commits.get(f"{schema}.{self.models[table]}")
            if committed is None:
                lags += [float("inf")] * len(moments)
            else:
                commit_epoch = committed.replace(tzinfo=dt.timezone.utc).timestamp()
                lags += [commit_epoch - moment for moment in moments]
        maintained = self.spark.sql(
            f"select count(*) as maintained from {schema}.cdc_merge_runs where maintenance = 'maintained' "
            f"and started_at >= timestamp '{started_wall:%Y-%m-%d %H:%M:%S.%f}'").collect()[0]["maintained"]
        mirrors = [self.table_state(f"{schema}.{model}") for model in self.models.values()]
        raw = self.table_state(f"{self.project.raw_schema}.raw_events")
        figure = {
            "cycle": number, "phase": phase, "events": len(events), "seconds": round(outcome.seconds, 3),
            "events_per_second": round(len(events) / outcome.seconds, 1),
            "lag_p50": warm.percentile(lags, 0.5), "lag_p95": warm.percentile(lags, 0.95), "lag_max": max(lags) if lags else None,
            "mirror_data_files": sum(m["data_files"] or 0 for m in mirrors),
            "mirror_delete_files": sum(m["delete_files"] or 0 for m in mirrors),
            "mirror_snapshots": sum(m["snapshots"] or 0 for m in mirrors),
            "mirror_snapshots_max": max(m["snapshots"] or 0 for m in mirrors),
            "raw_data_files": raw["data_files"], "raw_delete_files": raw["delete_files"], "raw_snapshots": raw["snapshots"],
            "maintained": maintained, **warm.resident(self.jvm_pid),
        }
        figure["lags"] = lags
        return figure

    def run(self) -> dict:
        args = self.args
        print(f"== soak, {self.variant}: {args.cycles} cycles of {args.events_per_cycle:,} events over {len(self.models)} mirrors "
              f"({', '.join(self.models.values())})", flush=True)
        warm.invoke(self.project, "run-operation", "create_raw_tables")
        all_lags = array.array("d")  # 8 bytes a lag: the soak's own memory stays out of the RSS trend
        for number in range(1, args.cycles + 1):
            figure = self.cycle(number, args.events_per_cycle, "soak")
            all_lags.extend(figure.pop("lags"))
            self.cycles.append(figure)
            if number <= 3 or number % 10 == 0 or number == args.cycles or figure["maintained"]:
                print(f"    cycle {number}/{args.cycles}: {figure['seconds']:.2f} s, lag p50 {figure['lag_p50']:.1f} s p95 {figure['lag_p95']:.1f} s; "
                      f"mirrors {figure['mirror_data_files']} data + {figure['mirror_delete_files']} delete files, "
                      f"{figure['mirror_snapshots']} snapshots; raw {figure['raw_data_files']} files, {figure['raw_snapshots']} snapshots; "
                      f"RSS python {figure['python_rss'] / 2**20:.0f} MB, JVM {figure['jvm_rss'] / 2**20:.0f} MB"
                      f"{'; ' + str(figure['maintained']) + ' mirror(s) maintained' if figure['maintained'] else ''}", flush=True)
        out = {"variant": self.variant, "cycles": self.cycles, "lag_p50": warm.percentile(all_lags, 0.5),
               "lag_p95": warm.percentile(all_lags, 0.95), "events_total": sum(c["events"] for c in self.cycles)}
        out["oracle"] = self.oracle()
        out["storage"] = self.storage()
        if self.variant == "maintenance" and args.ramp_steps:
            out["ramp"] = self.ramp()
        return out

    def ramp(self) -> list[dict]:
        args = self.args
        print(f"== ramp: {', '.join(f'{s:,}' for s in args.ramp_steps)} events per cycle, {args.ramp_cycles} cycles each", flush=True)
        steps, number = [], len(self.cycles)
        for events in args.ramp_steps:
            figures = []
            for _ in range(args.ramp_cycles):
                number += 1
                figures.append(self.cycle(number, events, "ramp"))
            lags = [lag for figure in figures for lag in figure.pop("lags")]
            seconds = warm.median([figure["seconds"] for figure in figures])
            step = {"events_per_cycle": events, "median_seconds": seconds, "events_per_second": round(events / seconds, 1),
                    "lag_p50": warm.percentile(lags, 0.5), "lag_p95": warm.percentile(lags, 0.95), "cycles": figures}
            steps.append(step)
            print(f"    {events:,} events per cycle: median {seconds:.2f} s = {step['events_per_second']:,.0f} events/s; "
                  f"lag p50 {step['lag_p50']:.1f} s, p95 {step['lag_p95']:.1f} s", flush=True)
            if step["lag_p95"] >= args.lag_goal:
                break
        return steps

    def oracle(self) -> dict:
        """Each mirror against the replay of every event its source delivered."""
        from python_jobs.demo.generate import KEYS

        verdict = {}
        for table, model in self.models.items():
            keys = KEYS["shop." + table.split(".")[1]]
            rows = [row.asDict() for row in self.spark.sql(f"select * from {self.project.schema}.{model}").collect()]
            actual = {tuple(row[k] for k in keys): {c: v for c, v in row.items() if not c.startswith("_cdc_")} for row in rows}
            expected = self.sources.state[table]
            missing, extra = expected.keys() - actual.keys(), actual.keys() - expected.keys()
            wrong = [key for key in expected.keys() & actual.keys() if expected[key] != actual[key]]
            verdict[model] = {"rows": len(actual), "expected_rows": len(expected), "missing": len(missing), "unexpected": len(extra),
                              "wrong": len(wrong), "equal": not (missing or extra or wrong)}
        print(f"    oracle: {sum(v['equal'] for v in verdict.values())}/{len(verdict)} mirrors equal the replay of their source "
              "(" + ", ".join(f"{m} {v['rows']} rows" + ("" if v["equal"] else " DIFFERENT") for m, v in verdict.items()) + ")", flush=True)
        return verdict

    def storage(self) -> dict:
        """Bytes under the warehouse against the bytes of the files the tables' current snapshots use."""
        live = 0
        for schema in (self.project.schema, self.project.raw_schema):
            for row in self.spark.sql(f"show tables in {schema}").collect():
                if not row["isTemporary"]:
                    live += self.spark.sql(f"select coalesce(sum(file_size_in_bytes), 0) as bytes from {schema}.{row['tableName']}.files").collect()[0]["bytes"]
        total = warm.directory_bytes(self.warehouse)
        out = {"warehouse_bytes": total, "live_data_bytes": live, "ratio": round(total / live, 2) if live else None}
        print(f"    warehouse {total / 2**20:.1f} MB on disk for {live / 2**20:.1f} MB of live data and delete files "
              f"({out['ratio']}x)", flush=True)
        return out


def run_variant(args) -> int:
    """The child process: one variant, its figures as JSON to --results."""
    soak = Soak(args, args.variant)
    out = soak.run()
    args.results.write_text(json.dumps(out, default=str))
    return 0


def main(argv=None) -> int:
    args = arguments(argv)
    if args.variant:
        return run_variant(args)
    variants = [v for v in VARIANTS if not (args.no_maintenance and v == "maintenance") and not (args.maintenance_only and v == "no-maintenance")]
    with tee_stdout(args.log):
        started = time.perf_counter()
        results = {"started": dt.datetime.utcnow().isoformat(timespec="seconds") + "Z",
                   "command": " ".join([Path(sys.executable).name, *sys.orig_argv[1:]]), "machine": machine(), "cycles": args.cycles,
                   "events_per_cycle": args.events_per_cycle, "tables": args.tables, "lag_goal": args.lag_goal,
                   "maintenance_config": args.maintenance_settings or "defaults", "variants": {}}
        print(f"soak: {results['machine']}", flush=True)
        args.work_dir.mkdir(parents=True, exist_ok=True)
        for variant in variants:
            part = args.work_dir / f"{variant}.json"
            command = [sys.executable, "-m", __spec__.name, "--variant", variant, "--results", str(part), "--log", "",
                       "--cycles", str(args.cycles), "--events-per-cycle", str(args.events_per_cycle), "--tables", str(args.tables),
                       "--ramp", args.ramp, "--ramp-cycles", str(args.ramp_cycles), "--lag-goal", str(args.lag_goal),
                       "--seed", str(args.seed), "--driver-memory", args.driver_memory, "--work-dir", str(args.work_dir), "--maintenance-config", args.maintenance_config]
            # cwd: the repository root, where `python -m` finds the benchmarks package.
            child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=str(PROJECT_DIR))
            for line in child.stdout:
                if not SPARK_NOISE.match(line):
                    print(line, end="", flush=True)
            if child.wait() != 0:
                print(f"variant {variant} FAILED (exit status {child.returncode})", flush=True)
                continue
            variant_results = json.loads(part.read_text())
            variant_results["summary"] = summarize(variant_results)
            results["variants"][variant] = variant_results
        results["seconds"] = round(time.perf_counter() - started, 1)
        results["load_average_at_end"] = os.getloadavg()
        report(results)
        args.results.parent.mkdir(parents=True, exist_ok=True)
        args.results.write_text(json.dumps(results, indent=1, default=str))
        if args.plot and results["variants"]:
            try:
                from benchmarks.soak import soak_plot

                soak_plot.plot(results, args.plot)
                print(f"plot: {args.plot}")
            except ImportError as error:
                print(f"no plot ({error}): pip install -e '.[bench]'")
        print(f"\ntotal {results['seconds']:.0f} s; figures in {args.results}" + (f", log in {args.log}" if args.log else ""))
    return 0 if len(results["variants"]) == len(variants) else 1


if __name__ == "__main__":
    raise SystemExit(main())
