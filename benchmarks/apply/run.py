# Why over 300 lines: every suite runs in the one process and SparkSession this file sets up (see the docstring).
"""Benchmarks of the cdc_merge product path against baselines measured in the same run.

    .venv/bin/python -m benchmarks.apply.run --quick    # smoke run, about 2 minutes
    .venv/bin/python -m benchmarks.apply.run            # every suite at the issue's sizes (see BENCHMARKS.md)
    .venv/bin/python -m benchmarks.apply.run --scenarios 10000000:1000000 --plot-scenarios '' --no-idle

Everything runs in one process on one SparkSession (local[2], the project's Iceberg
settings from python_jobs/landing/io/session.py); dbt runs in-process on it, as in `make demo`. For each
target size the mirror is created by the product (`dbt run` on an empty raw table), then
filled in bulk (spark.range) with the rows its snapshot events give, and its offset is set
to that snapshot; every method then starts from exactly that state: the tables are reset
to their snapshots (Iceberg set_current_snapshot) after each one.

Suites: apply (the main and plot scenarios), idle (dbt's overhead on 10 mirrors with nothing to
apply), landing (Debezium files into the raw table). Prints one table; writes all figures to
--results (JSON, for benchmarks.apply.plot) and what it prints to --log. By default a run of one
suite writes benchmarks/results/<suite>.json and .log (apply, idle, landing), a run of several
benchmarks/results/full.json and .log, and --quick writes quick.json and .log in --work-dir.

Longer than 300 lines because every suite runs in the one process and SparkSession this file
sets up and resets between methods; what the suites share sits in methods.py and in benchmarks/common/
(datagen.py, measure.py, sql_clock.py, project.py).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.apply import methods
from benchmarks.common import datagen
from benchmarks.common.measure import PeakMemory, format_table, tee_stdout, timed
from benchmarks.common.project import BenchProject
from benchmarks.common.results import RESULTS_DIR, machine
from benchmarks.common.sql_clock import CHECKPOINT, install_sql_clock, run_recorded_call, strip_comment
from harness.dbt_project import PROFILES_DIR, PROJECT_DIR, error_text

# PySpark hands timestamps to Python in the process's local zone; the tables hold UTC.
os.environ["TZ"] = "UTC"
time.tzset()

GB = 1024**3
ALL_LEVERS = ["replay", "shuffle2", "shuffle16", "broadcast", "no_rounds", "pinned", "cache_fix", "one_scan", "key_only", "compaction",
              "bucketed", "key_range", "no_key_range", "update_merge", "string_keys", "no_bloom_filter", "merge_deletes",
              "stored_keys_given"]
MIRROR = "bench_items"


def deleting_by_merge(product):
    """The product as it runs where deletes by position are not available (a Thrift server, a
    partitioned mirror): the replaced rows deleted with a MERGE (position_deletes.py, its jar turned off)."""
    def run():
        before = os.environ.get("CDC_MERGE_ICEBERG_JVM_JAR")
        os.environ["CDC_MERGE_ICEBERG_JVM_JAR"] = ""
        try:
            return product()
        finally:
            if before is None:
                del os.environ["CDC_MERGE_ICEBERG_JVM_JAR"]
            else:
                os.environ["CDC_MERGE_ICEBERG_JVM_JAR"] = before
    return run


def parse_pairs(text: str) -> list[tuple[int, int]]:
    pairs = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        target, batch = item.split(":")
        pairs.append((int(float(target)), int(float(batch))))
    return pairs


def arguments(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke run, ~2 minutes)")
    parser.add_argument("--target-rows", type=int, help="one main scenario: target rows (with --batch-events)")
    parser.add_argument("--batch-events", type=int, help="one main scenario: events in the batch")
    parser.add_argument("--scenarios", default=None,
                        help="main scenarios TARGET:BATCH,... (every baseline and lever)")
    parser.add_argument("--plot-scenarios", default=None,
                        help="extra points for the plot TARGET:BATCH,... (product, hand-written MERGE, key scan)")
    parser.add_argument("--levers", default=None,
                        help="lever prototypes on main scenarios ('' for none); all: " + ",".join(ALL_LEVERS))
    parser.add_argument("--dml-sample", type=int, default=20, help="row-by-row statements to time")
    parser.add_argument("--dml-budget", type=float, default=60.0, help="stop row-by-row sampling after this many seconds (>= 3 statements)")
    parser.add_argument("--landing-events", type=int, default=None, help="default 500,000 (quick: 20,000)")
    parser.add_argument("--landing-warm-runs", type=int, default=3,
                        help="landings after the first one of the process; the figure is their median")
    parser.add_argument("--idle-mirrors", type=int, default=10)
    parser.add_argument("--no-idle", action="store_true", help="skip the idle dbt run overhead benchmark")
    parser.add_argument("--no-landing", action="store_true", help="skip the landing throughput benchmark")
    parser.add_argument("--no-cold", action="store_true", help="skip the cold (new process) idle dbt run")
    parser.add_argument("--no-baselines", action="store_true", help="main scenarios: skip baselines 2-4 (levers only)")
    parser.add_argument("--clustered-keys", action="store_true",
                        help="batches update and delete only the newest 1%% of the keys (default: keys spread over the table)")
    parser.add_argument("--rounds", type=int, default=2,
                        help="measurements per scenario of the product, the hand-written MERGE and the key scan, interleaved; the figure is their best")
    parser.add_argument("--verify", action="store_true", help="check every method's result (an extra scan each; on with --quick)")
    parser.add_argument("--driver-memory", default="6g", help="spark.driver.memory (the JVM heap; local mode runs everything in it)")
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/cdc_merge_bench"), help="warehouse, project copies, inbox (deleted first)")
    parser.add_argument("--results", type=Path, default=None,
                        help="JSON of every figure; default benchmarks/results/<suite>.json (apply, idle, landing; full for "
                             "several suites), with --quick WORK_DIR/quick.json")
    parser.add_argument("--log", default=None,
                        help="copy of what the run prints; default: --results with .log ('' for none)")
    args = parser.parse_args(argv)
    quick = {"scenarios": "200000:20000", "plot_scenarios": "100000:2000", "landing_events": 20_000,
             "levers": "replay,compaction"}
    full = {"scenarios": "10000000:1000000,10000000:10000,30000000:10000",
            "plot_scenarios": "1000000:10000,3000000:10000,10000000:100000", "landing_events": 500_000,
            "levers": "replay,compaction"}
    for name, value in (quick if args.quick else full).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.quick:
        args.dml_sample, args.dml_budget, args.verify, args.no_cold = min(args.dml_sample, 6), min(args.dml_budget, 20.0), True, True
    if args.target_rows or args.batch_events:
        if not (args.target_rows and args.batch_events):
            parser.error("--target-rows and --batch-events go together")
        args.scenarios, args.plot_scenarios = f"{args.target_rows}:{args.batch_events}", ""
    args.main = parse_pairs(args.scenarios)
    args.plot = [pair for pair in parse_pairs(args.plot_scenarios) if pair not in args.main]
    args.lever_names = [name for name in args.levers.split(",") if name]
    if args.results is None:
        args.results = args.work_dir / "quick.json" if args.quick else RESULTS_DIR / f"{suite_name(args)}.json"
    args.log = args.results.with_suffix(".log") if args.log is None else Path(args.log) if args.log else None
    return args


def suite_name(args: argparse.Namespace) -> str:
    """apply, idle or landing when the run holds that suite alone; full for several."""
    suites = [name for name, runs in (("apply", args.main or args.plot), ("idle", not args.no_idle),
                                      ("landing", not args.no_landing)) if runs]
    return suites[0] if len(suites) == 1 else "full"


class Bench:
    def __init__(self, args):
        self.args = args
        self.work = args.work_dir
        shutil.rmtree(self.work, ignore_errors=True)
        self.work.mkdir(parents=True)
        self.warehouse = self.work / "warehouse"
        os.environ["CDC_MERGE_WAREHOUSE"] = str(self.warehouse)
        self.spark = self._session()
        self.jvm_pid = int(self.spark._jvm.java.lang.ProcessHandle.current().pid())
        self.memory = PeakMemory(self.jvm_pid)
        self.clock = install_sql_clock()
        self.results = {
            "started": dt.datetime.utcnow().isoformat(timespec="seconds") + "Z",
            "command": " ".join([Path(sys.executable).name, *sys.orig_argv[1:]]),
            "machine": machine(),
            "driver_memory": args.driver_memory,
            "scenarios": [],
        }

    def _session(self):
        from pyspark.sql import SparkSession
        from python_jobs.landing import io

        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = SparkSession.builder.appName("cdc_merge_bench").master(os.environ.get("CDC_MERGE_SPARK_MASTER", "local[2]"))
        for name, value in io.iceberg_spark_conf(str(self.warehouse)).items():
            builder = builder.config(name, value)
        builder = builder.config("spark.driver.memory", self.args.driver_memory).config("spark.ui.showConsoleProgress", "false")
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        return spark

    # --- helpers -----------------------------------------------------------------------------------

    def sql(self, text: str):
        return self.spark.sql(text).collect()

    def snapshot(self, table: str):
        rows = self.sql(f"select snapshot_id from {table}.refs where name = 'main'")
        return rows[0][0] if rows else None

    def restore(self, state: dict) -> None:
        for table, snapshot in state.items():
            if self.snapshot(table) != snapshot:
                self.sql(f"call lake.system.set_current_snapshot('{table}', {snapshot})")
        for view in ("bench_one_scan_changes", "bench_key_only_changes"):
            try:
                self.sql(f"uncache table if exists {view}")
            except Exception:  # a cached view over a view that is gone
                self.sql(f"drop view if exists {view}")
        self.spark.catalog.clearCache()

    def measure(self, name: str, action, state: dict | None = None, verify=None) -> dict:
        """Run action() once; seconds, peak memory; then reset the tables to state."""
        self.memory.reset()
        entry = {"ok": True}
        with timed() as timer:
            try:
                note = action()
                if isinstance(note, dict):
                    entry.update(note)
                elif note:
                    entry["note"] = note
            except Exception as error:  # a baseline that fails is a result, not a crash
                entry.update(ok=False, error=" ".join(str(error).split())[:400])
        entry["seconds"] = round(timer.seconds, 3)
        jvm, total = self.memory.peaks()
        entry["peak_jvm_gb"], entry["peak_total_gb"] = round(jvm / GB, 2), round(total / GB, 2)
        if verify is not None and entry["ok"]:
            entry["fingerprint"] = [str(v) for v in verify()]
        if state is not None:
            self.restore(state)
        status = f"{entry['seconds']:8.2f} s" if entry["ok"] else f"FAILED: {entry['error'][:150]}"
        print(f"    {name:<28} {status}  (peak JVM RSS {entry['peak_jvm_gb']:.2f} GB)", flush=True)
        return entry

    # --- one target size ---------------------------------------------------------------------------

    def setup_target(self, target_rows: int) -> dict:
        number = len(self.results["scenarios"])
        tag = f"t{target_rows}_{number}"
        schema, raw_schema = f"bm_{tag}", f"br_{tag}"
        project = BenchProject(self.work / f"project_{tag}", schema, raw_schema, self.work / f"inbox_{tag}")
        project.write_mirror(MIRROR)
        builtin = BenchProject(self.work / f"builtin_{tag}", schema, raw_schema, self.work / f"inbox_{tag}")
        builtin.write_builtin("bench_builtin", alias=MIRROR)
        raw, mirror = f"{raw_schema}.raw_events", f"{schema}.{MIRROR}"
        tombstones, offsets = f"{mirror}__cdc_tombstones", f"{schema}.cdc_merge_offsets"
        print(f"== target {target_rows:,} rows: create (product, empty), fill in bulk", flush=True)
        with timed() as timer:
            project.dbt("run-operation", "create_raw_tables")
            project.dbt("run", "--select", MIRROR)  # creates mirror, tombstones, offsets from an empty log
            datagen.snapshot_events(self.spark, target_rows).writeTo(raw).append()
            s0 = self.snapshot(raw)
            datagen.mirror_rows(self.spark, target_rows).writeTo(mirror).append()
            # A tombstone for a key that never exists, so the tombstones table has a snapshot to reset to.
            self.sql(f"insert into {tombstones} values ('[\"-1\"]', '0', timestamp'2000-01-01 00:00:00')")
            self.sql(f"""insert into {offsets} select '{mirror}', 1, '{raw}', '{datagen.SOURCE_TABLE}', '{s0}',
                {target_rows}, {target_rows}, 0, 0, 0, timestamp'2026-01-01 00:00:00', current_timestamp(), 'bench-setup'""")
        files = self.sql(f"select count(*), sum(file_size_in_bytes) from {mirror}.files")[0]
        print(f"   {timer.seconds:.1f} s; mirror: {files[0]} data files, {files[1] / 1e6:.0f} MB", flush=True)
        return {"project": project, "builtin": builtin, "raw": raw, "mirror": mirror, "tombstones": tombstones,
                "offsets": offsets, "s0": s0, "schema": schema, "target_rows": target_rows,
                "state": {mirror: self.snapshot(mirror), tombstones: self.snapshot(tombstones), offsets: self.snapshot(offsets)},
                "mirror_mb": files[1] / 1e6, "mirror_files": files[0], "batch_number": 0}

    def run_scenario(self, env: dict, batch_events: int, main: bool) -> dict:
        spark, args = self.spark, self.args
        target_rows = env["target_rows"]
        raw, mirror, state = env["raw"], env["mirror"], env["state"]
        env["batch_number"] += 1
        print(f"== {'main' if main else 'plot'} scenario: {batch_events:,} events into {target_rows:,} rows", flush=True)
        if self.snapshot(raw) != env["s0"]:
            self.sql(f"call lake.system.set_current_snapshot('{raw}', {env['s0']})")
        datagen.batch_events(spark, target_rows, batch_events, env["batch_number"], args.clustered_keys).writeTo(raw).append()
        s1 = env["s1"] = self.snapshot(raw)
        methods.batch_read(spark, raw, env["s0"], s1, "bench_batch_events")
        expected = datagen.expected_batch_counts(batch_events)
        expected_rows = target_rows + expected["inserted"] - expected["deleted"]
        verify = (lambda: self.sql(methods.fingerprint_sql(mirror))[0]) if args.verify else None
        scenario = {"target_rows": target_rows, "batch_events": batch_events, "main": main, "clustered_keys": args.clustered_keys,
                    "keys_changed": expected["keys"], "expected_rows": expected_rows,
                    "mirror_mb": round(env["mirror_mb"], 1), "mirror_files": env["mirror_files"], "methods": {}}
        results = scenario["methods"]
        project = env["project"]

        def product():
            with self.clock.measuring():
                result, seconds = project.dbt("run", "--select", MIRROR)
            offsets = self.sql(f"""select rows_inserted, rows_updated, rows_deleted, events_skipped from {env['offsets']}
                                   where target_table = '{mirror}' order by offset_ordinal desc limit 1""")[0]
            counts = dict(inserted=offsets[0], updated=offsets[1], deleted=offsets[2])
            if counts != {k: expected[k] for k in counts}:
                raise AssertionError(f"product applied {counts}, expected {expected}")
            kinds = {k: [v[0], round(v[1], 2)] for k, v in self.clock.by_kind.items()}
            self.recorded = list(self.clock.recorded)
            top = sorted(self.recorded, key=lambda item: -item[1])[:8]
            return {"sql_seconds": round(self.clock.seconds, 3), "statements": self.clock.statements, "by_kind": kinds,
                    "slowest_statements": [[round(sec, 3), " ".join(strip_comment(sql).split())[:160]] for sql, sec in top]}

        results["product"] = self.measure("product: dbt run (cdc_merge)", product, verify=verify)
        if main and "compaction" in args.lever_names:
            results.update(self.compaction(mirror))
        self.restore(state)
        results["key_scan"] = self.measure("key-column scan", lambda: self.sql(methods.key_scan_sql(mirror)) and None)
        results["handwritten_merge"] = self.measure(
            "hand-written dedup + MERGE", lambda: self.sql(methods.handwritten_merge_sql(mirror, "bench_batch_events")) and None,
            state, verify)
        if main:
            if not args.no_baselines:
                self.baselines(env, scenario, s1, verify)
            self.levers(env, scenario, verify)
            if "merge_deletes" in args.lever_names:
                # After the levers: they replay the statements of the product run above.
                results["lever_merge_deletes"] = self.measure("  - deletes by position", deleting_by_merge(product), state, verify)
        # More measurements of the headline methods, interleaved, to see the noise: a first run of a
        # scenario in the process is often slower (JIT), so the figures are the best of --rounds.
        for round_ in range(2, args.rounds + 1):
            again = "_again" if round_ == 2 else f"_again_{round_}"
            results["product" + again] = self.measure("product again", product, state)
            results["handwritten_merge" + again] = self.measure(
                "hand-written again", lambda: self.sql(methods.handwritten_merge_sql(mirror, "bench_batch_events")) and None, state)
            results["key_scan" + again] = self.measure("key-column scan again", lambda: self.sql(methods.key_scan_sql(mirror)) and None)
        if args.verify:
            self.check_fingerprints(scenario, expected_rows)
        self.results["scenarios"].append(scenario)
        self.save()
        return scenario

    def baselines(self, env, scenario, s1, verify) -> None:
        spark, args, results = self.spark, self.args, scenario["methods"]
        mirror, state = env["mirror"], env["state"]
        dml = self.measure("row-by-row DML (sample)", lambda: methods.row_by_row(
            spark, mirror, "bench_batch_events", args.dml_sample, args.dml_budget), state)
        if dml["ok"]:
            dml["extrapolated_seconds"] = round(dml["seconds_per_statement"] * scenario["keys_changed"], 1)
        results["row_by_row"] = dml
        rebuild_target = f"{env['schema']}.bench_rebuild"
        if env.get("rebuilt") and not self.args.quick:
            results["full_rebuild"] = dict(env["rebuilt"], note=f"measured once per target, with the {env['rebuilt_batch']:,}-event batch")
        else:
            env["rebuilt_batch"] = scenario["batch_events"]
            env["rebuilt"] = results["full_rebuild"] = self.measure(
            "full rebuild from the log", lambda: self.sql(methods.rebuild_sql(rebuild_target, env["raw"])) and None,
            verify=(lambda: self.sql(methods.fingerprint_sql(rebuild_target))[0]) if verify else None)
            self.sql(f"drop table if exists {rebuild_target} purge")
        builtin = env["builtin"]
        after_seq = self.sql(f"select max(seq) from {env['raw']} version as of {env['s0']}")[0][0]

        def builtin_run(dedup: bool):
            def go():
                vars_ = json.dumps({"bench_after_seq": after_seq, "bench_dedup": dedup})
                result, seconds = builtin.dbt("run", "--select", "bench_builtin", "--vars", vars_, expect_success=False)
                if not result.success:
                    raise RuntimeError(error_text(result))
                rows = self.sql(f"select count(*), count_if(status is null) from {mirror}")[0]
                return {"rows_after": rows[0], "rows_expected": scenario["expected_rows"], "deleted_keys_left_as_null_rows": rows[1],
                        "note": "deletes not applied: deleted keys stay as rows of nulls" if rows[1] else ""}
            return go

        results["builtin_merge"] = self.measure("dbt incremental merge", builtin_run(False), state)
        results["builtin_merge_dedup"] = self.measure("dbt incremental merge+dedup", builtin_run(True), state)

    def compaction(self, mirror: str) -> dict:
        """Lever: merge-on-read + compaction. Reading the mirror after one MOR apply, compacting it."""
        full_scan = f"select sum(xxhash64({', '.join(methods.WRITTEN)})) from {mirror}"
        out = {"lever_full_scan_after_apply": self.measure("full-row scan after apply (MOR)", lambda: self.sql(full_scan) and None)}
        deletes = self.sql(f"select count(*), coalesce(sum(record_count), 0) from {mirror}.delete_files")[0]
        out["lever_full_scan_after_apply"]["delete_files"] = deletes[0]
        out["lever_compaction"] = self.measure("compaction (rewrite_data_files)", lambda: self.sql(
            f"call lake.system.rewrite_data_files(table => '{mirror}', options => map('delete-file-threshold', '1', 'rewrite-all', 'false'))") and None)
        out["lever_full_scan_after_compaction"] = self.measure("full-row scan after compaction", lambda: self.sql(full_scan) and None)
        return out

    def levers(self, env, scenario, verify) -> None:
        names, results = self.args.lever_names, scenario["methods"]
        mirror, tombstones, state = env["mirror"], env["tombstones"], env["state"]
        # The materialization's statements; dbt's own metadata queries (show, describe) left out.
        statements = [sql for sql, _ in self.recorded if strip_comment(sql).split(None, 1)[0].lower() not in ("show", "describe")]
        if "compaction" in names:
            results["lever_full_scan_before_apply"] = self.measure("full-row scan before apply", lambda: self.sql(
                f"select sum(xxhash64({', '.join(methods.WRITTEN)})) from {mirror}") and None)

        def pin(sql: str) -> str:
            """Reads of the mirror and tombstones in the cached changes pinned to their current snapshots."""
            if not strip_comment(sql).lower().startswith("cache table"):
                return sql
            for table in (tombstones, mirror):
                sql, n = re.subn(rf"from {re.escape(table)}(?![\w.])", f"from {table} version as of {state[table]}", sql)
                assert n == 1, (table, n)
            return sql

        def cache_fix(sql: str) -> list[str] | str:
            """Spark 3.5 silently does not cache `CACHE TABLE x AS <query with a CTE>` (isCached is false, so every
            later statement recomputes the changes and scans the mirror again). A view that stores its analyzed
            plan, cached by a CTE-free SELECT, is cached."""
            text = strip_comment(sql)
            if not text.lower().startswith("cache table"):
                return sql
            name, query = re.match(r"cache table (\S+) as(.*)", text, re.S | re.I).groups()
            return [f"create or replace temporary view {name}__def as {query}", f"cache table {name} as select * from {name}__def"]

        def without_key_range(sql: str) -> str:
            """The product's statements as before the key range (merge.sql key_in_range_sql)."""
            return re.sub(r"\s*and \S+\._cdc_key between cast\(unhex\('[0-9A-Fa-f]+'\) as string\) "
                          r"and cast\(unhex\('[0-9A-Fa-f]+'\) as string\)", "", sql)

        def replay(confs: dict | None = None, tail=None, drop: str | None = None, rewrite=None):
            def go():
                timings = []
                old = {k: self.spark.conf.get(k, None) for k in (confs or {})}
                for k, v in (confs or {}).items():
                    self.spark.conf.set(k, v)
                try:
                    # The product's raw-changes view is made by the cdc_spark adapter, not by a statement.
                    methods.batch_read(self.spark, env["raw"], env["s0"], env["s1"], f"{MIRROR}__cdc_raw_changes", with_change_type=True)
                    if tail is None:
                        todo = [rewrite(sql) if rewrite else sql for sql in statements if drop is None or drop not in sql]
                        todo = [one for sql in todo for one in (sql if isinstance(sql, list) else [sql])]
                    else:
                        # The product's statements up to its last batch view, then the variant.
                        last_view = max(i for i, sql in enumerate(statements) if f"view {MIRROR}__cdc_batch as" in sql)
                        todo = statements[: last_view + 1] + [rewrite(sql) if rewrite else sql for sql in tail(f"{MIRROR}__cdc_batch")]
                    for sql in todo:
                        t0 = time.perf_counter()
                        if not run_recorded_call(self.spark, sql):
                            self.sql(sql)
                        timings.append((round(time.perf_counter() - t0, 3), " ".join(strip_comment(sql).split())[:120]))
                    return {"slowest_statements": sorted(timings, reverse=True)[:6]}
                finally:
                    for k, v in old.items():
                        self.spark.conf.set(k, v) if v is not None else self.spark.conf.unset(k)
            return go

        def update_merge(sql: str) -> str:
            """The mirror's writes as before the delete-only MERGE: that MERGE back to a MERGE that updates
            (the changes' every column through the join), the INSERT back to new keys only."""
            text = strip_comment(sql)
            if re.match(rf"merge into {re.escape(mirror)}(\.branch_\w+)? as mirror", text) and text.rstrip().endswith("then delete"):
                head = re.sub(r"select\s+_cdc_key,\s+_cdc_seq\s+from", "select * from", text.split("when matched", 1)[0], count=1)
                assigned = ", ".join(f"{column} = change.{column}" for column in methods.WRITTEN if column != "_cdc_key")
                return (f"{head} when matched and change._cdc_seq > mirror._cdc_seq and change._cdc_action = 'delete' then delete "
                        f"when matched and change._cdc_seq > mirror._cdc_seq then update set {assigned}")
            if re.match(rf"insert into {re.escape(mirror)}(\.branch_\w+)? \(", text):
                updated, count = re.subn(r"where change\._cdc_change in \('insert', 'update'\)$", "where change._cdc_change in ('insert')", text.strip())
                assert count == 1, text[-200:]
                return updated
            return sql

        def string_keys(sql: str) -> str:
            """The classification's reads of stored keys without key hashes: a broadcast of the batch's keys
            themselves instead of their 64-bit hashes (merge.sql spark__stored_keys_sql)."""
            sql, count = re.subn(
                r"select /\*\+ broadcast\(batch_key_hashes\) \*/(\s+stored\._cdc_key,\s+stored\._cdc_seq\s+from \S+ as stored)\s+"
                r"left semi join \(\s*select xxhash64\(_cdc_key\) as key_hash\s+from batch_keys\s*\) as batch_key_hashes\s+"
                r"on xxhash64\(stored\._cdc_key\) = batch_key_hashes\.key_hash",
                r"select /*+ broadcast(batch_keys) */\1 inner join batch_keys on stored._cdc_key = batch_keys._cdc_key", sql)
            assert "xxhash64(stored._cdc_key)" not in sql, "a read of stored keys was not rewritten"
            return sql

        # update_merge, string_keys and no_bloom_filter rewrite statements the product runs only where
        # deletes are not by position (the mirror's MERGE, stored keys without positions): measure
        # them with CDC_MERGE_ICEBERG_JVM_JAR= in the environment.
        variants = {
            "replay": ("replay product SQL (no dbt)", {}, None),
            "update_merge": ("  - delete-only MERGE", {}, None, None, update_merge),
            "string_keys": ("  - key hashes broadcast", {}, None, None, string_keys),
            # Without the product's settings around the mirror's MERGE (merge.sql spark__mirror_merge_settings):
            # Spark's defaults build a runtime bloom filter only for scans over 10 GB.
            "no_bloom_filter": ("  - runtime bloom filter", {}, None, "runtime.bloomFilter"),
            "shuffle2": ("  + shuffle partitions 2", {"spark.sql.shuffle.partitions": "2"}, None),
            "shuffle16": ("  + shuffle partitions 16", {"spark.sql.shuffle.partitions": "16"}, None),
            "broadcast": ("  + broadcast batch (1 GB thr.)", {"spark.sql.autoBroadcastJoinThreshold": str(GB)}, None),
            "no_rounds": ("  - the TOAST rounds query", {}, None, "keys_with_placeholders"),
            "pinned": ("  + changes pinned to snapshots", {}, None, None, pin),
            "cache_fix": ("  + changes really cached", {"spark.sql.legacy.storeAnalyzedPlanForView": "true"}, None, None, cache_fix),
            "one_scan": ("one target scan (no classify)", {}, lambda view: methods.one_scan_statements(mirror, tombstones, view)),
            "key_only": ("pinned + key-only MERGE", {}, lambda view: methods.key_only_merge_statements(mirror, tombstones, view), None, pin),
            "no_key_range": ("  - the batch key range", {}, None, None, without_key_range),
        }
        for name, (label, confs, tail, *more) in variants.items():
            if name in names:
                results[f"lever_{name}"] = self.measure(label, replay(confs, tail, *more), state, verify)
        if "bucketed" in names:
            results["lever_bucketed"] = self.bucketed_mirror(env, scenario, replay)
        if "stored_keys_given" in names:
            results["lever_stored_keys_given"] = self.measure(
                "  + stored keys given (index)", replay(rewrite=self.stored_keys_given(env)), state, verify)
        if "key_range" in names:
            rewrite, rewritten = self.key_range(env)
            results["lever_key_range"] = self.measure("+ batch key range on the mirror", replay(rewrite=rewrite), state, verify)
            results["lever_key_range"]["rewritten"] = rewritten
            print(f"    key range added to {rewritten['classification']} classification and {rewritten['merge']} MERGE statements", flush=True)

    def stored_keys_given(self, env):
        """Lever: what an in-memory index of the mirror's keys (key -> seq, file, position), kept by a
        long-lived process, could save at most: the classification gets the stored rows of the batch's
        keys from a small view instead of reading the mirror. They are found before the timed run; inside
        it, the batch's keys go to the driver and the rows come back as a DataFrame, as they would from
        an index in the JVM (the lookups themselves are left out). Not a product feature."""
        mirror = env["mirror"]
        methods.batch_read(self.spark, env["raw"], env["s0"], env["s1"], f"{MIRROR}__cdc_raw_changes", with_change_type=True)
        batch_keys = (f"select distinct key from {MIRROR}__cdc_raw_changes "
                      f"where _change_type = 'INSERT' and table_name = '{datagen.SOURCE_TABLE}'")
        # The branch the classification reads is made from main in the run: same files, same positions.
        hits = self.spark.sql(f"""select stored._cdc_key, xxhash64(stored._file) as _cdc_stored_file_hash,
                                         stored._pos as _cdc_stored_pos, stored._cdc_seq
                                  from {mirror} as stored left semi join ({batch_keys}) as batch
                                      on stored._cdc_key = batch.key""").collect()

        def rewrite(sql: str) -> str:
            if not sql.startswith(CHECKPOINT):
                return sql
            view_name, query = json.loads(sql[len(CHECKPOINT):])
            self.spark.sql(batch_keys).collect()
            self.spark.createDataFrame(hits, "_cdc_key string, _cdc_stored_file_hash bigint, _cdc_stored_pos bigint, "
                                       "_cdc_seq string").createOrReplaceTempView("bench_index_hits")
            query, count = re.subn(r"(mirror_keys as \()(.*?)(\),\s*tombstone_keys as \()",
                                   r"\1 select /*+ broadcast(bench_index_hits) */ * from bench_index_hits \3", query, count=1, flags=re.S)
            assert count == 1, "the classification's stored keys were not found"
            return CHECKPOINT + json.dumps([view_name, query])
        return rewrite

    def key_range(self, env):
        """Lever: the mirror's reads in the classification and the MERGE also get the batch's key range
        (`_cdc_key between min and max`, found by a query on the raw changes inside the timed run), which
        Iceberg can check against each data file's key bounds. Measured before the product took the range
        over (merge.sql key_in_range_sql); on today's product, `no_key_range` is the comparison."""
        mirror, bounds, rewritten = env["mirror"], {}, {"classification": 0, "merge": 0}

        def rewrite(sql: str) -> str:
            if not bounds:
                low, high = self.sql(f"select min(key), max(key) from {MIRROR}__cdc_raw_changes "
                                     f"where table_name = '{datagen.SOURCE_TABLE}'")[0]
                bounds["sql"] = f"between '{low}' and '{high}'"
            sql, count = re.subn(rf"(from {re.escape(mirror)} as stored\s+inner join batch_keys\s+on stored\._cdc_key = batch_keys\._cdc_key)",
                                 rf"\1 and stored._cdc_key {bounds['sql']}", sql)
            rewritten["classification"] += count
            sql, count = re.subn(rf"(merge into {re.escape(mirror)} as mirror.*?on mirror\._cdc_key = change\._cdc_key)",
                                 rf"\1 and mirror._cdc_key {bounds['sql']}", sql, flags=re.S)
            rewritten["merge"] += count
            return sql
        return rewrite, rewritten

    def bucketed_mirror(self, env, scenario, replay) -> dict:
        """Lever: the product's statements on a copy of the mirror partitioned by bucket(16, _cdc_key),
        its changes table bucketed the same way, with Spark's storage-partitioned joins on. The copy is
        made before the clock starts; the lever's result is checked against the product's."""
        mirror, tombstones = env["mirror"], env["tombstones"]
        copy = f"{mirror}_bucketed"
        properties = ("tblproperties ('format-version' = '2', 'write.delete.mode' = 'merge-on-read', "
                      "'write.update.mode' = 'merge-on-read', 'write.merge.mode' = 'merge-on-read')")
        self.sql(f"create or replace table {copy} using iceberg partitioned by (bucket(16, _cdc_key)) {properties} "
                 f"as select * from {mirror}")
        self.sql(f"create or replace table {copy}__cdc_tombstones using iceberg as select * from {tombstones}")

        def rewrite(sql: str) -> str:
            sql = sql.replace(mirror, copy)
            return re.sub(rf"({re.escape(copy)}__cdc_changes\s+using iceberg)", r"\1 partitioned by (bucket(16, _cdc_key))", sql)

        spj = {
            "spark.sql.sources.v2.bucketing.enabled": "true",
            "spark.sql.sources.v2.bucketing.pushPartValues.enabled": "true",
            "spark.sql.requireAllClusterKeysForCoPartition": "false",
            "spark.sql.sources.v2.bucketing.partiallyClusteredDistribution.enabled": "true",
            "spark.sql.iceberg.planning.preserve-data-grouping": "true",
        }
        try:
            entry = self.measure("bucketed mirror (16) + SPJ", replay(spj, rewrite=rewrite))
            if entry["ok"]:
                got = [str(v) for v in self.sql(methods.fingerprint_sql(copy))[0]]
                entry["same_result_as_product"] = got == scenario["methods"]["product"].get("fingerprint", got)
                print(f"    bucketed mirror: result {'equals' if entry['same_result_as_product'] else 'DIFFERS from'} the product's", flush=True)
            return entry
        finally:
            for table in (copy, f"{copy}__cdc_tombstones", f"{copy}__cdc_changes"):
                self.sql(f"drop table if exists {table} purge")

    def check_fingerprints(self, scenario, expected_rows) -> None:
        prints = {name: m["fingerprint"] for name, m in scenario["methods"].items() if m.get("fingerprint")}
        reference = prints.get("product")
        scenario["verified"] = {name: (fp == reference) for name, fp in prints.items()}
        if reference and int(reference[0]) != expected_rows:
            scenario["verified"]["product_rows"] = False
        bad = [name for name, ok in scenario["verified"].items() if not ok]
        print(f"    verify: {'all results equal the product' if not bad else 'DIFFERENT: ' + ', '.join(bad)} "
              f"({reference[0] if reference else '?'} rows, expected {expected_rows})", flush=True)

    # --- dbt overhead, landing ---------------------------------------------------------------------

    def idle_overhead(self) -> dict:
        count = self.args.idle_mirrors
        print(f"== idle dbt run: {count} mirrors, no new events", flush=True)
        project = BenchProject(self.work / "project_idle", "bm_idle", "br_idle", self.work / "inbox_idle")
        for n in range(count):
            project.write_mirror(f"bench_items_{n}", source_table=f"bench.items_{n}")
        project.dbt("run-operation", "create_raw_tables")
        for n in range(count):
            datagen.snapshot_events(self.spark, 1000, f"bench.items_{n}").writeTo("br_idle.raw_events").append()
        project.dbt("run", "--exclude", "raw_events")  # applies the 1000 rows of each
        out = {"mirrors": count, "runs": []}
        for _ in range(3):
            self.memory.reset()
            with self.clock.measuring():
                _, seconds = project.dbt("run", "--exclude", "raw_events")
            out["runs"].append({"seconds": round(seconds, 3), "sql_seconds": round(self.clock.seconds, 3),
                                "statements": self.clock.statements,
                                "by_kind": {k: [v[0], round(v[1], 3)] for k, v in self.clock.by_kind.items()}})
        best = min(out["runs"], key=lambda r: r["seconds"])
        out.update(seconds=best["seconds"], sql_seconds=best["sql_seconds"], overhead_seconds=round(best["seconds"] - best["sql_seconds"], 3),
                   statements=best["statements"], by_kind=best["by_kind"])
        described = [v for k, v in best["by_kind"].items() if k.startswith(("describe", "show"))]
        describe = [sum(v[0] for v in described), round(sum(v[1] for v in described), 3)]
        out["describe_statements"], out["describe_seconds"] = describe
        print(f"    warm: {out['seconds']:.2f} s wall, {out['sql_seconds']:.2f} s in SQL ({out['statements']} statements), "
              f"{out['overhead_seconds']:.2f} s dbt overhead; relation listing (show/describe): {describe[0]} statements, {describe[1]:.2f} s", flush=True)
        with self.clock.measuring():
            _, seconds = project.dbt("run")
        out["with_landing"] = {"seconds": round(seconds, 3), "sql_seconds": round(self.clock.seconds, 3)}
        print(f"    warm, landing model included (no new files): {seconds:.2f} s", flush=True)
        if not self.args.no_cold:
            out["cold"] = self.cold_run(project)
            out["cdc_run"] = self.cdc_run_loop(project)
        return out

    def new_process_env(self, project: BenchProject) -> dict:
        """The environment a new dbt or cdc-run process needs to run project against this warehouse."""
        from python_jobs.landing import io

        return {**os.environ, "CDC_MERGE_SCHEMA": project.schema, "CDC_MERGE_RAW_SCHEMA": project.raw_schema,
                "CDC_MERGE_WAREHOUSE": str(self.warehouse), "CDC_MERGE_ICEBERG_JAR": io.iceberg_jar()}

    def cold_run(self, project: BenchProject) -> dict:
        """Lever 'long-lived session': the same idle run as a new `dbt` process (new JVM)."""
        env = self.new_process_env(project)
        dbt_bin = Path(sys.executable).parent / "dbt"
        started = time.perf_counter()
        done = subprocess.run([str(dbt_bin), "run", "--exclude", "raw_events", "--project-dir", str(project.dir),
                               "--profiles-dir", str(PROFILES_DIR), "--quiet"],
                              env=env, cwd=str(PROJECT_DIR), capture_output=True, text=True)
        seconds = time.perf_counter() - started
        print(f"    cold (new dbt process, new JVM): {seconds:.2f} s{'' if done.returncode == 0 else ' FAILED: ' + done.stdout[-300:]}", flush=True)
        return {"seconds": round(seconds, 3), "ok": done.returncode == 0}

    def cdc_run_loop(self, project: BenchProject, runs: int = 4) -> dict:
        """The same idle run, `runs` times by one new `cdc-run` process (python_jobs/scheduler/run_loop.py): the
        first run pays the JVM start as a new `dbt` process does, the later ones find it warm."""
        env = self.new_process_env(project)
        started = time.perf_counter()
        done = subprocess.run([str(Path(sys.executable).parent / "cdc-run"), "--every", "0", "--runs", str(runs), "--",
                               "run", "--exclude", "raw_events", "--project-dir", str(project.dir),
                               "--profiles-dir", str(PROFILES_DIR), "--quiet"],
                              env=env, cwd=str(PROJECT_DIR), capture_output=True, text=True)
        seconds = time.perf_counter() - started
        runs_seconds = [float(found) for found in re.findall(r"run \d+: ok in ([0-9.]+) s", done.stderr)]
        out = {"seconds": round(seconds, 3), "ok": done.returncode == 0 and len(runs_seconds) == runs, "runs_seconds": runs_seconds}
        print(f"    cdc-run --runs {runs} (new process): {seconds:.1f} s in all; runs {', '.join(f'{x:.1f}' for x in runs_seconds)} s"
              f"{'' if out['ok'] else ' FAILED: ' + done.stderr[-300:]}", flush=True)
        return out

    def landing(self) -> dict:
        """The same Debezium files landed, each time into new tables: with the JVM fast path as the
        first job of this JVM (cold), then --landing-warm-runs times more (warm: the figure is their
        median; jvm_warm is the second landing of the process, also printed), then
        with the Python parsers only (the baseline: the product before the fast path)."""
        events = self.args.landing_events
        print(f"== landing: {events:,} Debezium events through python_jobs/landing/land.py", flush=True)
        inbox = self.work / "inbox_landing"
        with timed() as gen:
            files = datagen.write_debezium_files(inbox, events)
        size = sum(p.stat().st_size for p in inbox.iterdir())
        out = {"events": events, "files": files, "mb": round(size / 1e6, 1), "generate_seconds": round(gen.seconds, 2)}
        print(f"    {events:,} events: {size / 1e6:.0f} MB in {files} files", flush=True)
        warm = ["jvm_warm", *(f"jvm_warm_{n}" for n in range(2, self.args.landing_warm_runs + 1))]
        for run in ("jvm_cold", *warm):
            out[run] = self.land_once(run, inbox, None)
        out["python"] = self.land_once("python", inbox, "")
        median = sorted((out[run] for run in warm), key=lambda figures: figures["seconds"])[len(warm) // 2]
        out.update({"landed": median["landed"], "seconds": median["seconds"], "events_per_second": median["events_per_second"],
                    "warm_seconds": [out[run]["seconds"] for run in warm],
                    "peak_jvm_gb": max(out[run]["peak_jvm_gb"] for run in ("jvm_cold", *warm)),
                    "peak_total_gb": max(out[run]["peak_total_gb"] for run in ("jvm_cold", *warm))})
        out.update(self.parse_only(inbox, events))
        out["through_dbt"] = self.land_through_dbt(inbox, runs=3)
        return out

    def land_through_dbt(self, inbox: Path, runs: int) -> list[dict]:
        """The same events landed by the landing model, `dbt run --select raw_events` in this process
        (as `cdc-run` runs it), each run with the files under new names (the checkpoint keeps names)."""
        project = BenchProject(self.work / "project_landing_dbt", "bm_landing_dbt", "br_landing_dbt", self.work / "inbox_landing_dbt")
        project.dbt("run-operation", "create_raw_tables")
        figures = []
        for run in range(1, runs + 1):
            for path in sorted(inbox.glob("*.json")):
                os.link(path, self.work / "inbox_landing_dbt" / f"run{run}-{path.name}")
            before = self.spark.table("br_landing_dbt.raw_events").count()
            _, seconds = project.dbt("run", "--select", "raw_events")
            landed = self.spark.table("br_landing_dbt.raw_events").count() - before
            figures.append({"seconds": round(seconds, 3), "landed": landed, "events_per_second": round(landed / seconds)})
            print(f"    through dbt (landing model, run {run}): {landed:,} events in {seconds:.1f} s = "
                  f"{figures[-1]['events_per_second']:,} events/s", flush=True)
        return figures

    def land_once(self, run: str, inbox: Path, parsers_jar: str | None) -> dict:
        from python_jobs.landing import land
        from python_jobs.landing.config import load_config

        project = BenchProject(self.work / f"project_landing_{run}", f"bm_landing_{run}", f"br_landing_{run}", inbox)
        project.dbt("run-operation", "create_raw_tables")
        previous = os.environ.get("CDC_MERGE_PARSERS_JAR")
        if parsers_jar is not None:
            os.environ["CDC_MERGE_PARSERS_JAR"] = parsers_jar
        try:
            self.memory.reset()
            with timed() as timer:
                summary = land.run(load_config(project.dir / "landing.yml"), spark=self.spark)
            jvm, total = self.memory.peaks()
        finally:
            if previous is None:
                os.environ.pop("CDC_MERGE_PARSERS_JAR", None)
            else:
                os.environ["CDC_MERGE_PARSERS_JAR"] = previous
        landed = summary.counts["event"]
        out = {"landed": landed, "quarantined": summary.counts["rejected"] + summary.counts["ignored"],
               "seconds": round(timer.seconds, 3), "batch_seconds": round(summary.seconds, 3),
               "events_per_second": round(landed / timer.seconds),
               "peak_jvm_gb": round(jvm / GB, 2), "peak_total_gb": round(total / GB, 2)}
        print(f"    {run}: {landed:,} events in {timer.seconds:.1f} s = {out['events_per_second']:,} events/s; "
              f"quarantined {out['quarantined']}; peak RSS JVM {out['peak_jvm_gb']} GB, with Python workers "
              f"{out['peak_total_gb']} GB", flush=True)
        if landed != self.args.landing_events:
            print(f"    WARNING: landed {landed} of {self.args.landing_events} events", flush=True)
        return out

    def parse_only(self, inbox: Path, events: int) -> dict:
        """Levers: the parse without the Iceberg write, and reading + splitting the lines alone."""
        from python_jobs.landing import io
        from python_jobs.landing.config import load_config
        from python_jobs.landing.transforms import events_parsed_in_jvm, parse_in_jvm, parsed_in_jvm, split_lines

        config = load_config(self.work / "project_landing_jvm_warm" / "landing.yml")
        lines = self.spark.read.format("text").option("wholetext", "true").load(str(inbox)).selectExpr(
            "_metadata.file_path as landed_file", "value as content")
        out = {}
        jvm_parser = io.register_jvm_parser(self.spark, config.key_columns)
        if jvm_parser:
            with timed() as parse:
                events_parsed_in_jvm(split_lines(lines), jvm_parser).selectExpr(
                    "sum(xxhash64(key, seq, raw_data))").collect()
            out["parse_only_seconds"] = round(parse.seconds, 3)
            out["parse_only_events_per_second"] = round(events / parse.seconds)
        with timed() as split:
            split_lines(lines).selectExpr("sum(octet_length(line_text))").collect()
        out["split_only_seconds"] = round(split.seconds, 3)
        print(f"    parse only (JVM, no write): {out.get('parse_only_seconds', float('nan')):.1f} s; "
              f"read+split lines only: {split.seconds:.1f} s", flush=True)
        if jvm_parser:
            out.update(self.quote_only(parsed_in_jvm(parse_in_jvm(split_lines(lines), jvm_parser)), events))
        return out

    def quote_only(self, events_df, events: int) -> dict:
        """The Databend sink's extra step, fractional numbers quoted: Python UDF vs the JVM function."""
        from python_jobs.landing import io
        from python_jobs.landing.transforms import exact_numbers_for_variant

        images = events_df.selectExpr("cast(raw_data as string) as raw_data", "cast(before_data as string) as before_data")
        images = images.persist()
        images.count()
        out = {}
        try:
            for name, quoter in (("python", None), ("jvm", io.register_jvm_number_quoter(self.spark))):
                with timed() as timer:
                    exact_numbers_for_variant(images, quoter).selectExpr("sum(xxhash64(raw_data, before_data))").collect()
                out[f"quote_{name}_seconds"] = round(timer.seconds, 3)
        finally:
            images.unpersist()
        print(f"    Databend sink, fractional numbers quoted ({events:,} events, cached images): Python UDF "
              f"{out['quote_python_seconds']:.1f} s, JVM {out['quote_jvm_seconds']:.1f} s", flush=True)
        return out

    def save(self) -> None:
        self.args.results.write_text(json.dumps(self.results, indent=1, default=str))


# --- the table -------------------------------------------------------------------------------------

def ratio(numerator, denominator) -> str:
    return f"{numerator / denominator:,.2f}x" if numerator and denominator else "-"


def best(methods_: dict, *names) -> float | None:
    values = [methods_[n]["seconds"] for n in names if n in methods_ and methods_[n].get("ok")]
    return min(values) if values else None


def rounds(methods_: dict, name: str) -> list[str]:
    """The measurements of a headline method: name, name_again, name_again_3, ... (--rounds)."""
    return [n for n in methods_ if n == name or n.startswith(name + "_again")]


def share(part, whole) -> str:
    return f"{part / whole:.0%} of it" if part is not None and whole else "-"


def best_run(methods_: dict, name: str) -> str | None:
    """The name of the fastest successful measurement of a headline method (the one the table shows)."""
    ok = [n for n in rounds(methods_, name) if methods_[n].get("ok")]
    return min(ok, key=lambda n: methods_[n]["seconds"]) if ok else None


APPLY_HEADER = ["events -> target rows", "method", "seconds", "vs product", "peak JVM RSS", "note"]
APPLY_NUMBERS = frozenset({2, 3, 4})


def apply_rows(scenario: dict) -> list[list]:
    """The table's rows of one scenario: [events -> rows, method, seconds, vs product, peak RSS, note].

    "vs product" is method seconds / product seconds for the methods, and the share of the product's
    run for its SQL. That SQL is the clock of the same run as the product's figure (statements inside
    dbt-spark's cursor, plus the adapter's checkpoint of the classified batch and its deletes by
    position); dbt runs one model at a time (threads: 1), so it cannot exceed the run it is part of."""
    m = scenario["methods"]
    fastest = best_run(m, "product")
    product = m[fastest]["seconds"] if fastest else None
    rows = [("product: dbt run cdc_merge", product, None, max(m[n]["peak_jvm_gb"] for n in rounds(m, "product")),
             "" if fastest else m["product"].get("error", "")[:70])]
    sql = m[fastest].get("sql_seconds") if fastest else None
    if sql is not None:
        rows.append(("  of which SQL in Spark (same run)", sql, share(sql, product), None,
                     "cursor + adapter's checkpoint and deletes by position"
                     + ("; MORE than the run: the clock counted overlapping statements" if sql > product else "")))
    rows.append(("1 hand-written dedup+MERGE (MOR)", best(m, *rounds(m, "handwritten_merge")), "", m["handwritten_merge"]["peak_jvm_gb"], ""))
    if "row_by_row" in m:
        d = m["row_by_row"]
        rows.append(("2 row-by-row DML (extrapolated)", d.get("extrapolated_seconds"), "", d["peak_jvm_gb"],
                     f"{d.get('seconds_per_statement', 0):.2f} s/statement x {scenario['keys_changed']:,} keys ({d.get('statements', 0)} timed)"
                     if d["ok"] else d["error"][:60]))
    if "full_rebuild" in m:
        rows.append(("3 full rebuild from the log", best(m, "full_rebuild"), "", m["full_rebuild"]["peak_jvm_gb"], ""))
    for key, label in (("builtin_merge", "4 dbt incremental merge"), ("builtin_merge_dedup", "4 dbt incremental merge + dedup")):
        if key in m:
            b = m[key]
            rows.append((label, b["seconds"] if b["ok"] else None, "", b["peak_jvm_gb"],
                         b.get("note", "") if b["ok"] else "FAILS: " + b["error"][:70]))
    rows.append(("5 key-column scan of the target", best(m, *rounds(m, "key_scan")), "", m["key_scan"]["peak_jvm_gb"], ""))
    for name, entry in m.items():
        if name.startswith("lever_"):
            note = entry.get("error", "")[:60] if not entry["ok"] else (f"{entry['delete_files']} delete files" if "delete_files" in entry else "")
            rows.append((name.replace("lever_", "lever: "), entry["seconds"] if entry["ok"] else None, "", entry["peak_jvm_gb"], note))
    label = f"{scenario['batch_events']:,} -> {scenario['target_rows']:,}"
    return [[label if i == 0 else "", name, f"{seconds:,.2f}" if seconds is not None else "-",
             versus or ("" if i == 0 else ratio(seconds, product)),
             f"{peak:.2f} GB" if peak is not None else "", note]
            for i, (name, seconds, versus, peak, note) in enumerate(rows)]


def print_table(results: dict) -> None:
    if results["scenarios"]:
        print("\napply: seconds (the best of the runs in this process); vs product = method seconds / product seconds "
              "(> 1: the product is that many times faster)\n")
        print(format_table(APPLY_HEADER, [row for scenario in results["scenarios"] for row in apply_rows(scenario)], APPLY_NUMBERS))
        print()
    idle = results.get("idle")
    if idle:
        print(f"idle dbt run, {idle['mirrors']} mirrors (warm session): {idle['seconds']:.2f} s wall, {idle['sql_seconds']:.2f} s SQL "
              f"({idle['statements']} statements) -> overhead beyond the SQL {idle['overhead_seconds']:.2f} s; "
              f"relation listing (show/describe): {idle['describe_statements']} statements, {idle['describe_seconds']:.2f} s"
              + (f"; cold new process: {idle['cold']['seconds']:.1f} s" if idle.get("cold") else "")
              + (f"; cdc-run in a new process, its runs: {', '.join(f'{x:.1f}' for x in idle['cdc_run']['runs_seconds'])} s"
                 if idle.get("cdc_run") else ""))
    landing = results.get("landing")
    if landing and "jvm_warm" in landing:
        python = landing["python"]["seconds"]
        warm_runs = len(landing.get("warm_seconds", [0]))
        for run, label in (("jvm_cold", "JVM fast path, first landing of the process"),
                           ("jvm_warm", "JVM fast path, second landing of the process"),
                           ("median", f"JVM fast path, warm (median of {warm_runs} landings after the first)"),
                           ("python", "Python parsers only (baseline)")):
            figures = landing if run == "median" else landing[run]
            print(f"landing {landing['events']:,} Debezium events, {label}: {figures['seconds']:.1f} s = "
                  f"{figures['events_per_second']:,} events/s, {ratio(python, figures['seconds'])} vs the baseline; "
                  f"peak RSS JVM {figures['peak_jvm_gb']} GB, with Python workers {figures['peak_total_gb']} GB")
        for run, figures in enumerate(landing.get("through_dbt", []), start=1):
            print(f"landing {figures['landed']:,} Debezium events through the landing model (dbt run in this process), run {run}: "
                  f"{figures['seconds']:.1f} s = {figures['events_per_second']:,} events/s")


def print_targets(results: dict) -> None:
    print("\ntargets of the issue:")
    lines = []
    for s in results["scenarios"]:
        m = s["methods"]
        product, hand, scan = (best(m, *rounds(m, name)) for name in ("product", "handwritten_merge", "key_scan"))
        if (s["target_rows"], s["batch_events"]) == (10_000_000, 1_000_000):
            lines.append(f"  1M events into 10M rows >= 2x faster than the hand-written MERGE: {hand / product:.2f}x -> "
                         f"{'MET' if hand / product >= 2 else 'NOT MET'}")
        if (s["target_rows"], s["batch_events"]) == (30_000_000, 10_000):
            lines.append(f"  10k events into 30M rows within 2x of one key-column scan: {product / scan:.2f}x the scan -> "
                         f"{'MET' if product / scan <= 2 else 'NOT MET'}")
    idle = results.get("idle")
    if idle:
        lines.append(f"  dbt run overhead beyond the SQL <= 3 s for {idle['mirrors']} mirrors: {idle['overhead_seconds']:.2f} s -> "
                     f"{'MET' if idle['overhead_seconds'] <= 3 else 'NOT MET'}")
    landing = results.get("landing")
    if landing:
        lines.append(f"  landing >= 250k events/s: {landing['events_per_second']:,} events/s warm (median) -> "
                     f"{'MET' if landing['events_per_second'] >= 250_000 else 'NOT MET'}")
    ten_m = [max(e["peak_jvm_gb"] for e in s["methods"].values()) for s in results["scenarios"] if s["target_rows"] == 10_000_000]
    if ten_m:
        lines.append(f"  everything at 10M rows within 8 GB of driver memory: peak JVM RSS {max(ten_m):.2f} GB "
                     f"(heap {results['driver_memory']}) -> {'MET' if max(ten_m) <= 8 else 'NOT MET'}")
    print("\n".join(lines) if lines else "  (none of the issue's sizes in this run)")


def main(argv=None) -> int:
    args = arguments(argv)
    bench = Bench(args)  # empties --work-dir first, so the log starts after it
    with tee_stdout(args.log):
        return run(bench, args)


def run(bench: Bench, args: argparse.Namespace) -> int:
    started = time.perf_counter()
    print(f"cdc_merge benchmarks: {bench.results['machine']}; driver memory {args.driver_memory}; work dir {args.work_dir}", flush=True)
    try:
        if not args.no_idle:
            bench.results["idle"] = bench.idle_overhead()
            bench.save()
        if not args.no_landing:
            bench.results["landing"] = bench.landing()
            bench.save()
        by_target: dict[int, list[tuple[int, bool]]] = {}
        for target, batch in args.main:
            by_target.setdefault(target, []).append((batch, True))
        for target, batch in args.plot:
            by_target.setdefault(target, []).append((batch, False))
        for target in sorted(by_target):
            env = bench.setup_target(target)
            for batch, main in sorted(by_target[target], key=lambda item: (not item[1], item[0])):
                bench.run_scenario(env, batch, main)
            bench.sql(f"drop namespace if exists {env['schema']} cascade") if False else None
    finally:
        bench.results["total_seconds"] = round(time.perf_counter() - started, 1)
        bench.results["load_average_at_end"] = os.getloadavg()
        bench.save()
        bench.memory.stop()
    print_table(bench.results)
    print(f"\ntotal {bench.results['total_seconds']:.0f} s; figures in {args.results}" + (f", log in {args.log}" if args.log else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
