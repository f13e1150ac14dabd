"""Capture, landing and apply as one service under a steady write load on a real PostgreSQL:
lag from source commit to mirror commit, per write rate.

    .venv/bin/python -m benchmarks.capture.pipeline_lag [--rates 1000,5000,20000] [--seconds 120] [--every 2]

A project written by cdc-init (cdc_merge as a local package) mirrors shop.items; one `cdc-run
--every N --capture 'cdc-capture-postgres ...' -- run` process streams, lands and applies, as a user
runs it. A load thread commits a transaction every 0.1 s at each rate in turn (50% inserts, 40%
updates, 10% deletes). Lag of a change = the commit time of the mirror snapshot that wrote the row
version (Iceberg's snapshots) minus the change's source commit time (_cdc_source_ts), over every
row version live at the end, per rate by its commit time; maintenance is off so that no compaction
rewrites a row's file. At the end the mirror must equal the source table. Writes
benchmarks/results/pipeline_lag.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.common.init_project import init_project
from benchmarks.common.results import RESULTS_DIR
from harness.postgres_server import start_postgres

BIN = Path(sys.executable).parent
RESULTS = RESULTS_DIR / "pipeline_lag.json"


class Load(threading.Thread):
    """Transactions every 0.1 s at `rate` changes/s; phases record their source time windows."""

    def __init__(self, server, rate: int, seconds: float, first_id: int) -> None:
        super().__init__(daemon=True)
        self.server, self.rate, self.seconds, self.next_id = server, rate, seconds, first_id
        self.live: list[int] = []
        self.changes = 0
        self.window: tuple[float, float] = (0.0, 0.0)

    def run(self) -> None:
        chance = random.Random(self.rate)
        connection = self.server.connect()
        started = time.time()
        with connection.cursor() as cursor:
            tick = time.monotonic()
            while time.time() - started < self.seconds:
                per = max(1, self.rate // 10)
                inserts, updates = per // 2, per * 2 // 5
                deletes = min(per - inserts - updates, len(self.live) // 2)
                ids = list(range(self.next_id, self.next_id + inserts))
                self.next_id += inserts
                cursor.execute("insert into shop.items select g, md5(g::text), g * 0.01, clock_timestamp() "
                               "from unnest(%s::bigint[]) g", (ids,))
                if self.live:
                    cursor.execute("update shop.items set note = md5(note), price = price + 1, updated_at = clock_timestamp() "
                                   "where id = any(%s)", (chance.sample(self.live, min(updates, len(self.live))),))
                gone = chance.sample(self.live, deletes) if deletes else []
                if gone:
                    cursor.execute("delete from shop.items where id = any(%s)", (gone,))
                connection.commit()
                gone_set = set(gone)
                self.live = [i for i in self.live if i not in gone_set] + ids
                self.changes += inserts + min(updates, len(self.live)) + len(gone)
                tick += 0.1
                time.sleep(max(0.0, tick - time.monotonic()))
        self.window = (started, time.time())
        connection.close()


def lags(spark, warehouse: Path, windows: dict[int, tuple[float, float]]) -> dict:
    table = f"{warehouse}/mirror/shop_items"
    rows = spark.read.format("iceberg").load(table).selectExpr("_file as file", "_cdc_source_ts")
    entries = spark.read.format("iceberg").load(f"{table}#entries").selectExpr("data_file.file_path as file", "snapshot_id")
    snapshots = spark.read.format("iceberg").load(f"{table}#snapshots").selectExpr("snapshot_id", "committed_at")
    joined = (rows.join(entries, "file").join(snapshots, "snapshot_id")
              .selectExpr("cast(unix_millis(_cdc_source_ts) as double) / 1000 as source",
                          "cast(unix_millis(committed_at) as double) / 1000 as mirror")
              .collect())
    out = {}
    for rate, (start, end) in windows.items():
        found = sorted(row.mirror - row.source for row in joined if start <= row.source <= end)
        if found:
            out[rate] = {"row_versions": len(found), "median": round(found[len(found) // 2], 2),
                         "p95": round(found[int(len(found) * 0.95)], 2), "max": round(found[-1], 2)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rates", default="1000,5000,20000", help="changes per second, one phase each")
    parser.add_argument("--seconds", type=float, default=120.0, help="length of each phase")
    parser.add_argument("--every", type=float, default=2.0, help="cdc-run --every")
    parser.add_argument("--keep-work", action="store_true",
                        help="leave the project, with the service's log (service.log) and dbt's, in place")
    args = parser.parse_args()
    rates = [int(rate) for rate in args.rates.split(",")]
    work = Path(tempfile.mkdtemp(prefix="cdc-merge-pipeline-"))
    server = start_postgres(Path(tempfile.mkdtemp(prefix="cdc-merge-pipeline-postgres-")))
    service = None
    try:
        with server.connect() as connection, connection.cursor() as cursor:
            cursor.execute("create schema shop; create table shop.items (id bigint primary key, note text, "
                           "price numeric(14,2), updated_at timestamptz)")
            cursor.execute("insert into shop.items select g, md5(g::text), g * 0.01, now() from generate_series(1, 10000) g")
        project = init_project(work, server)
        warehouse = project / "warehouse"
        capture = (f"{BIN / 'cdc-capture-postgres'} --dsn '{server.dsn}' --tables shop.items --slot pipeline "
                   "--out data/inbox --state data/capture-state.json --max-wait-seconds 1")
        environment = {**os.environ, "CDC_MERGE_WAREHOUSE": str(warehouse), "DBT_PROFILES_DIR": str(project)}
        log = open(work / "service.log", "w")
        service = subprocess.Popen([BIN / "cdc-run", "--every", str(args.every), "--keep-going", "--capture", capture,
                                    "--", "run"], cwd=project, env=environment, stdout=log, stderr=subprocess.STDOUT)
        time.sleep(60)  # the snapshot, the first runs: the JVM and the session warm
        windows, figures, first_id = {}, {}, 10_001
        for rate in rates:
            load = Load(server, rate, args.seconds, first_id)
            load.start()
            load.join()
            first_id = load.next_id
            windows[rate] = load.window
            figures[rate] = {"changes": load.changes, "achieved_per_second": round(load.changes / args.seconds)}
            print(f"rate {rate}: {load.changes} changes in {args.seconds:.0f} s", flush=True)
        # Then time to catch up; whether it did is the mirror against the source, after the service stops.
        time.sleep(max(30.0, 6 * args.every))
        service.send_signal(signal.SIGTERM)
        service.wait(timeout=600)

        from python_jobs.landing.io import spark_session

        spark = spark_session("pipeline-lag", warehouse=str(warehouse))
        for rate, lag in lags(spark, warehouse, windows).items():
            figures[rate]["lag_seconds"] = lag
        with server.connect() as connection, connection.cursor() as cursor:
            cursor.execute("select id, note, price::text from shop.items")
            source = sorted(cursor.fetchall())
        mirrored = sorted(tuple(row) for row in spark.read.format("iceberg").load(f"{warehouse}/mirror/shop_items")
                          .selectExpr("id", "note", "cast(price as string)").collect())
        state = json.loads((project / "data" / "capture-state.json").read_text())
        result = {"every": args.every, "seconds_per_rate": args.seconds, "rates": figures,
                  "mirror_equals_source": mirrored == source, "rows": len(source),
                  "capture": state.get("following")}
        print((work / "service.log").read_text()[-3000:])  # the service's last lines
        print(json.dumps(result, indent=2))
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    finally:
        if service is not None and service.poll() is None:
            service.kill()
        server.stop()
        if args.keep_work:
            print(f"the project and the service's log: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
