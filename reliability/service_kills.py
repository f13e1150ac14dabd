"""The whole pipeline as one service (`cdc-run` with its PostgreSQL capture), killed with SIGKILL at
random moments while a real PostgreSQL takes writes, and restarted at once as a supervisor would; at
the end every mirror against the live source table, row by row, and cdc-verify's verdict beside it.

    .venv/bin/python -m reliability.service_kills                 # 10 kills (about 15 min on 2 cores)
    .venv/bin/python -m reliability.service_kills --kills 4

A project written by cdc-init (cdc_merge as a local package, maintenance on) mirrors shop.items and
shop.lines (a two-column key). A load thread commits a transaction every 0.1 s: inserts, updates,
deletes and key changes on both tables. Kills alternate between the service's process alone (its
capture and its JVM are left to notice) and its whole process group (the OOM killer, a stop
timeout), and between two moments: a random delay from the (re)start (the JVM's start, the
capture's snapshot, the first run's landing and apply) and a random delay after the restarted
service's first run ended (a warm service: the stream, later runs, their commits). After the last
restart the load stops, the service catches up and is stopped with SIGTERM. Figures (printed, and written to
reliability/results/service_kills.json): kills, kills that met a running service, restarts that
exited by themselves, rows lost / extra / wrong / duplicated against the source, and whether
cdc-verify said what the row comparison says.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from harness.dbt_project import PROJECT_DIR
from harness.postgres_server import start_postgres

BIN = Path(sys.executable).parent
RESULTS = Path(__file__).resolve().parent / "results" / "service_kills.json"
SCHEMA = """
create schema shop;
create table shop.items (id bigint primary key, note text, price numeric(14,2));
create table shop.lines (order_id bigint, line_no int, qty int, primary key (order_id, line_no));
insert into shop.items select g, md5(g::text), g * 0.01 from generate_series(1, 5000) g;
insert into shop.lines select g / 4, g % 4, g from generate_series(1, 5000) g;
"""
# Each table: its source query and its mirror's columns, in the same order and rendering.
TABLES = {
    "shop_items": ("select id, note, price::text from shop.items", "id, note, cast(price as string)", 1),
    "shop_lines": ("select order_id, line_no, qty from shop.lines", "order_id, line_no, qty", 2),
}


class Load(threading.Thread):
    """A transaction every 0.1 s until stopped: about `rate` changes a second over both tables."""

    def __init__(self, server, rate: int) -> None:
        super().__init__(daemon=True)
        self.server, self.rate, self.changes, self.stop = server, rate, 0, threading.Event()

    def run(self) -> None:
        chance = random.Random(7)
        connection = self.server.connect()
        next_id, next_order = 1_000_000, 1_000_000
        with connection.cursor() as cursor:
            while not self.stop.wait(0.1):
                per = max(4, self.rate // 10)
                cursor.execute("insert into shop.items select g, md5(g::text), g * 0.01 from generate_series(%s, %s) g",
                               (next_id, next_id + per // 4 - 1))
                next_id += per // 4
                cursor.execute("update shop.items set note = md5(note), price = price + 1 where id in "
                               "(select id from shop.items tablesample system (1) limit %s)", (per // 4,))
                cursor.execute("delete from shop.items where id in (select id from shop.items tablesample system (1) "
                               "limit %s)", (per // 8,))
                # A key change: the row moves to a key no other row has.
                cursor.execute("update shop.items set id = id + 10000000 where id = (select min(id) from shop.items "
                               "where id < 10000000)")
                cursor.execute("insert into shop.lines select %s, g, g from generate_series(0, %s) g",
                               (next_order, per // 8))
                next_order += 1
                cursor.execute("update shop.lines set qty = qty + 1 where order_id = %s", (chance.randrange(1, 1250),))
                cursor.execute("delete from shop.lines where order_id = %s", (chance.randrange(1, 1250),))
                connection.commit()
                self.changes += per // 4 * 2 + per // 8 * 2 + 1
        connection.close()


def make_project(work: Path, server) -> Path:
    project = work / "shop"
    subprocess.run([BIN / "cdc-init", project, "--postgres", server.dsn, "--tables", "shop.items,shop.lines",
                    "--package-local", PROJECT_DIR], check=True, capture_output=True)
    subprocess.run([BIN / "dbt", "deps", "--profiles-dir", "."], cwd=project, check=True, capture_output=True)
    return project


def start_service(project: Path, server, log, every: float) -> subprocess.Popen:
    capture = (f"{BIN / 'cdc-capture-postgres'} --dsn '{server.dsn}' --tables shop.items,shop.lines --slot kills "
               "--out data/inbox --state data/capture-state.json --max-wait-seconds 1")
    environment = {**os.environ, "CDC_MERGE_WAREHOUSE": str(project / "warehouse"), "DBT_PROFILES_DIR": str(project)}
    return subprocess.Popen([BIN / "cdc-run", "--every", str(every), "--keep-going", "--capture", capture, "--", "run"],
                            cwd=project, env=environment, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def wait_for_a_run(log_path: Path, offset: int, timeout: float) -> bool:
    """Whether the service's log, past offset, says a run ended (`run N: ok ...` or failed) within timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(log_path, errors="replace") as text:
            text.seek(offset)
            if re.search(r"cdc_merge run \d+: ", text.read()):
                return True
        time.sleep(1)
    return False


def compare(spark, project: Path, server) -> dict:
    """Per mirror: keys the source has and the mirror lacks, the other way, rows that differ, keys twice."""
    found = {}
    for model, (source_sql, columns, key_width) in TABLES.items():
        with server.connect() as connection, connection.cursor() as cursor:
            cursor.execute(source_sql)
            source = {tuple(row[:key_width]): tuple(row) for row in cursor.fetchall()}
        mirrored = [tuple(row) for row in spark.read.format("iceberg").load(f"{project}/warehouse/mirror/{model}")
                    .selectExpr(*columns.split(", ")).collect()]
        mirror = {row[:key_width]: row for row in mirrored}
        found[model] = {"source_rows": len(source), "lost": len(source.keys() - mirror.keys()),
                        "extra": len(mirror.keys() - source.keys()),
                        "wrong": sum(1 for key in source.keys() & mirror.keys() if source[key] != mirror[key]),
                        "duplicated": len(mirrored) - len(mirror)}
    return found


def verify(project: Path) -> tuple[int, str]:
    environment = {**os.environ, "CDC_MERGE_WAREHOUSE": str(project / "warehouse")}
    done = subprocess.run([BIN / "cdc-verify", "--profiles-dir", "."], cwd=project, env=environment,
                          capture_output=True, text=True, timeout=900)
    return done.returncode, (done.stdout + done.stderr)[-2000:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--rate", type=int, default=500, help="changes per second the load writes")
    parser.add_argument("--every", type=float, default=2.0, help="cdc-run --every")
    parser.add_argument("--delay", type=float, nargs=2, default=(5.0, 60.0), metavar=("LOW", "HIGH"),
                        help="seconds from a (re)start to a kill in the warm-up, drawn uniformly")
    parser.add_argument("--warm-delay", type=float, nargs=2, default=(0.0, 20.0), metavar=("LOW", "HIGH"),
                        help="seconds from the end of a restarted service's first run to a warm kill")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep-work", action="store_true", help="leave the project and service.log in place")
    args = parser.parse_args()
    chance = random.Random(args.seed)
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="cdc-merge-service-kills-"))
    # A folder of its own: the server runs as its own user, who cannot enter work (mode 0700).
    postgres_dir = Path(tempfile.mkdtemp(prefix="cdc-merge-service-kills-postgres-"))
    server = start_postgres(postgres_dir)
    service, load = None, None
    try:
        with server.connect() as connection, connection.cursor() as cursor:
            cursor.execute(SCHEMA)
        project = make_project(work, server)
        log = open(work / "service.log", "w")
        load = Load(server, args.rate)
        load.start()
        restarted_at = 0
        service = start_service(project, server, log, args.every)
        kills = []
        for number in range(args.kills):
            warm = number % 4 >= 2
            if warm and not wait_for_a_run(work / "service.log", restarted_at, 900):
                raise RuntimeError(f"the service ran no run within 900 s of its restart: {work / 'service.log'}")
            delay = chance.uniform(*(args.warm_delay if warm else args.delay))
            time.sleep(delay)
            running = service.poll() is None
            whole_group = number % 2 == 1
            if running:
                if whole_group:
                    os.killpg(service.pid, signal.SIGKILL)
                else:
                    service.kill()
            exited = service.wait(timeout=60)
            kills.append({"after_seconds": round(delay, 1), "after_a_run": warm, "whole_group": whole_group,
                          "met_a_running_service": running, "exit_status": exited})
            print(f"kill {number + 1}/{args.kills} {delay:.1f} s after {'a run' if warm else 'the start'} "
                  f"({'group' if whole_group else 'process'}): "
                  f"{'running' if running else f'had exited by itself with {exited}'}", flush=True)
            log.write(f"\n===== killed ({'group' if whole_group else 'process'}) =====\n")
            log.flush()
            restarted_at = log.tell()
            service = start_service(project, server, log, args.every)
        load.stop.set()
        load.join()
        time.sleep(max(45.0, 10 * args.every))  # catching up: the capture's last changes, landed and applied
        service.send_signal(signal.SIGTERM)
        service.wait(timeout=600)

        from python_jobs.landing.io import spark_session

        spark = spark_session("service-kills", warehouse=str(project / "warehouse"))
        mirrors = compare(spark, project, server)
        status, said = verify(project)
        differs = any(figure[name] for figure in mirrors.values() for name in ("lost", "extra", "wrong", "duplicated"))
        result = {
            "kills": len(kills), "after_a_run": sum(kill["after_a_run"] for kill in kills),
            "met_a_running_service": sum(kill["met_a_running_service"] for kill in kills),
            "exited_by_themselves": sum(not kill["met_a_running_service"] for kill in kills),
            "changes_written": load.changes, "rate": args.rate, "every": args.every,
            "mirrors": mirrors, "mirrors_equal_source": not differs,
            "verify_exit_status": status, "verify_agrees": (status == 0) == (not differs),
            "wall_seconds": round(time.monotonic() - started), "kill_list": kills,
        }
        if differs or status != 0:
            result["verify_output"] = said
            print((work / "service.log").read_text()[-4000:])
        print(json.dumps({key: value for key, value in result.items() if key != "kill_list"}, indent=2))
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    finally:
        if load is not None:
            load.stop.set()
        if service is not None and service.poll() is None:
            os.killpg(service.pid, signal.SIGKILL)
        server.stop()
        shutil.rmtree(postgres_dir, ignore_errors=True)
        if args.keep_work:
            print(f"the project and the service's log: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
