"""cdc-verify while the pipeline runs under a steady write load: false reports per check.

    .venv/bin/python -m benchmarks.verify.verify_under_load [--rate 5000] [--checks 10] [--wait-seconds 60]

A project written by cdc-init mirrors shop.items (--rows, 1,000,000); one `cdc-run --every 2
--capture 'cdc-capture-postgres ...' -- run` process streams, lands and applies (as
benchmarks/capture/pipeline_lag.py runs it) while a load commits --rate changes a second in 10 transactions a second (40% inserts, 40%
updates and 20% deletes of random rows of the whole table). Meanwhile
`cdc-verify` runs --checks times in its own process (each at the source's log position, the keys
changed after it left out: python_jobs/verify/in_flight.py); nothing is wrong in the mirror, so
every difference it reports is a false report. After the load, once the service caught up, a last
check must be clean. Writes
benchmarks/results/verify_under_load.json.
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
RESULTS = RESULTS_DIR / "verify_under_load.json"


class Load(threading.Thread):
    """--rate changes a second over the whole table: inserts of new keys, updates and deletes of
    random keys (one that is gone already changes nothing), 10 transactions a second."""

    def __init__(self, server, rate: int, rows: int) -> None:
        super().__init__(daemon=True)
        self.server, self.rate, self.rows, self.next_id = server, rate, rows, rows + 1
        self.stop, self.changes, self.window = threading.Event(), 0, (0.0, 0.0)

    def run(self) -> None:
        chance = random.Random(self.rate)
        connection = self.server.connect()
        started = time.time()
        tick = time.monotonic()
        with connection.cursor() as cursor:
            while not self.stop.is_set():
                per = max(1, self.rate // 10)
                inserts, updates = per * 2 // 5, per * 2 // 5
                deletes = per - inserts - updates
                ids = list(range(self.next_id, self.next_id + inserts))
                self.next_id += inserts
                cursor.execute("insert into shop.items select g, md5(g::text), g * 0.01, clock_timestamp() "
                               "from unnest(%s::bigint[]) g", (ids,))
                cursor.execute("update shop.items set note = md5(note), price = price + 1, updated_at = clock_timestamp() "
                               "where id = any(%s)", ([chance.randrange(1, self.next_id) for _ in range(updates)],))
                cursor.execute("delete from shop.items where id = any(%s)",
                               ([chance.randrange(1, self.next_id) for _ in range(deletes)],))
                connection.commit()
                self.changes += per
                tick += 0.1
                time.sleep(max(0.0, tick - time.monotonic()))
        self.window = (started, time.time())
        connection.close()


def check(project: Path, environment: dict, wait: float) -> dict:
    """One cdc-verify in a process of its own; what it reported."""
    started = time.monotonic()
    done = subprocess.run([BIN / "cdc-verify", "--profiles-dir", ".", "--wait-seconds", str(wait)], cwd=project,
                          env=environment, capture_output=True, text=True, timeout=900)
    seconds = time.monotonic() - started
    if done.returncode == 2:
        raise RuntimeError(done.stdout[-3000:] + done.stderr[-3000:])
    report = json.loads((project / environment["DBT_TARGET_PATH"] / "cdc_verify.json").read_text())
    (checked,) = report["checks"]
    return {"seconds": round(seconds, 1), "status": done.returncode,
            "reported": checked["missing"] + checked["extra"] + checked["differing"],
            "rows": checked["source_rows"], "keys_in_flight": checked["in_flight"],
            "rows_compared_one_by_one": checked["compared_rows"], "source_position": checked["source_position"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=int, default=5000)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--checks", type=int, default=10)
    parser.add_argument("--wait-seconds", type=float, default=60.0)
    parser.add_argument("--every", type=float, default=2.0)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cdc-merge-verify-load-"))
    server = start_postgres(Path(tempfile.mkdtemp(prefix="cdc-merge-verify-load-postgres-")))
    service = load = None
    try:
        with server.connect() as connection, connection.cursor() as cursor:
            cursor.execute("create schema shop; create table shop.items (id bigint primary key, note text, "
                           "price numeric(14,2), updated_at timestamptz)")
            cursor.execute("insert into shop.items select g, md5(g::text), g * 0.01, now() from generate_series(1, %s) g", (args.rows,))
        project = init_project(work, server)
        warehouse = project / "warehouse"
        capture = (f"{BIN / 'cdc-capture-postgres'} --dsn '{server.dsn}' --tables shop.items --slot pipeline "
                   "--out data/inbox --state data/capture-state.json --max-wait-seconds 1")
        environment = {**os.environ, "CDC_MERGE_WAREHOUSE": str(warehouse), "DBT_PROFILES_DIR": str(project)}
        service = subprocess.Popen([BIN / "cdc-run", "--every", str(args.every), "--keep-going", "--capture", capture,
                                    "--", "run"], cwd=project, env=environment, stdout=open(work / "service.log", "w"),
                                   stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 900  # the snapshot landed and applied
        while f"{args.rows} inserted" not in (work / "service.log").read_text():
            if time.monotonic() > deadline or service.poll() is not None:
                raise RuntimeError("the snapshot was not applied: " + (work / "service.log").read_text()[-3000:])
            time.sleep(2)
        # The checks' own dbt folders: the service's dbt writes the project's target/ and logs/.
        checker = {**environment, "DBT_TARGET_PATH": "target-verify", "DBT_LOG_PATH": str(work / "verify-logs")}
        load = Load(server, args.rate, args.rows)
        load.start()
        time.sleep(30)  # the load's lag settles
        checks = []
        for number in range(args.checks):
            checks.append(check(project, checker, args.wait_seconds))
            print(f"check {number + 1}:", checks[-1], flush=True)
        load.stop.set()
        load.join()
        achieved = round(load.changes / (load.window[1] - load.window[0]))
        time.sleep(max(30.0, 10 * args.every))  # the service catches up
        final = check(project, checker, args.wait_seconds)
        print("after the load:", final, flush=True)
        service.send_signal(signal.SIGTERM)
        service.wait(timeout=600)
        result = {"rate": args.rate, "achieved_changes_per_second": achieved, "every": args.every,
                  "wait_seconds": args.wait_seconds, "rows": checks[0]["rows"], "checks": checks,
                  "false_reports": sum(c["reported"] for c in checks), "after_the_load": final}
        print(json.dumps(result, indent=2))
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    finally:
        if load is not None:
            load.stop.set()
        if service is not None and service.poll() is None:
            service.kill()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
