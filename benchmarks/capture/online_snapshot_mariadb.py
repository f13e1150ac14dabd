"""Snapshot rate on a real MariaDB, beside mariadb-dump of the same table.

    .venv/bin/python -m benchmarks.capture.online_snapshot_mariadb [--rows 5000000] [--page-rows 10000]

A table of --rows rows of mixed types (bigint, varchar, int, decimal, datetime, boolean, json,
char(32)); on it, in one run:
- `mariadb-dump --single-transaction --quick` of the table to /dev/null (the limit: the server's
  own rendering and transfer, nothing done with the rows);
- `cdc-capture-mysql --snapshot consistent` (one consistent-snapshot transaction);
- `cdc-capture-mysql --snapshot online` (pages between watermark rows of the signal table);
- the online snapshot again in a `--follow` capture while another table takes --hot-rate changes a
  second: each change's capture lag (the time it was made, from the row itself, to its file on
  disk: the binlog's own timestamps are whole seconds), median and p95;
- `cdc-snapshot` of a key range of 1% of the table: the rows it reads.
Every capture's files are checked to hold each row once. Writes
benchmarks/results/online_snapshot_mariadb.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.capture.online_snapshot import snapshot_reads, timed
from benchmarks.common.results import RESULTS_DIR, write_results
from harness.mariadb_server import start_mariadb
from python_jobs.capture.mysql_pages import SIGNAL_TABLE, SIGNAL_TABLE_DDL

BIN = Path(sys.executable).parent
RESULTS = RESULTS_DIR / "online_snapshot_mariadb.json"
TABLE = """create table shop.big (id bigint primary key, name varchar(40), qty int, price decimal(12,2), created datetime,
    active boolean, attributes json, ref char(32))"""
FILL = """insert into shop.big select seq, concat('customer ', seq), seq % 1000, seq * 1.25,
    timestamp '2026-01-01 00:00:00' + interval seq second, seq % 3 = 0,
    json_object('tier', seq % 5, 'tags', json_array('a', seq % 7)), md5(seq) from seq_{first}_to_{last}"""


class HotLoad(threading.Thread):
    """shop.hot: an update of one row every 1/rate s, each committed alone, until stopped."""

    def __init__(self, server, rate: float) -> None:
        super().__init__(daemon=True)
        self.server, self.rate, self.stop, self.changes = server, rate, threading.Event(), 0

    def run(self) -> None:
        connection = self.server.connect(autocommit=True)
        with connection.cursor() as cursor:
            started = time.monotonic()
            while not self.stop.is_set():
                cursor.execute("update shop.hot set qty = qty + 1, at = now(6) where id = %s", (self.changes % 1000 + 1,))
                self.changes += 1
                wait = started + self.changes / self.rate - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
        connection.close()


def hot_lags(out: Path) -> list[float]:
    """Seconds from each shop.hot change (its `at`, UTC) to its file's last write."""
    lags = []
    for path in out.glob("*.json"):
        if "pages" in path.name:
            continue
        written = path.stat().st_mtime
        for line in path.open():
            if '"table":"hot"' in line and '"op":"u"' in line:
                made = dt.datetime.fromisoformat(json.loads(line)["after"]["at"]).replace(tzinfo=dt.timezone.utc)
                lags.append(written - made.timestamp())
    return lags


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--page-rows", type=int, default=10_000)
    parser.add_argument("--hot-rate", type=float, default=1000.0)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cdc-merge-bench-online-mariadb-"))
    server = start_mariadb(Path(tempfile.mkdtemp(prefix="cdc-merge-bench-mariadb-")))
    result: dict = {"rows": args.rows, "page_rows": args.page_rows}
    os.environ["MYSQL_PWD"] = ""
    connect = ["--host", "127.0.0.1", "--port", str(server.port), "--user", "root"]
    try:
        connection = server.connect(autocommit=True)
        with connection.cursor() as cursor:
            cursor.execute("create database shop")
            cursor.execute("use shop")
            cursor.execute(TABLE)
            for first in range(1, args.rows + 1, 1_000_000):
                cursor.execute(FILL.format(first=first, last=min(args.rows, first + 999_999)))
            cursor.execute("create table shop.hot (id int primary key, qty int, at datetime(6))")
            cursor.execute("insert into shop.hot select seq, 0, now(6) from seq_1_to_1000")
            cursor.execute("create database cdc_merge")
            cursor.execute(SIGNAL_TABLE_DDL.format(table=SIGNAL_TABLE))
        connection.close()
        print(f"{args.rows:,} rows in shop.big", flush=True)

        seconds = timed(["mariadb-dump", *connect, "--single-transaction", "--quick", "--result-file=/dev/null",
                         "shop", "big"])
        result["mariadb_dump"] = {"seconds": round(seconds, 1), "rows_per_second": round(args.rows / seconds)}
        print("mariadb-dump", result["mariadb_dump"], flush=True)

        for mode in ("consistent", "online"):
            out = work / mode
            command = [str(BIN / "cdc-capture-mysql"), *connect, "--tables", "shop.big", "--out", str(out),
                       "--state", str(work / f"{mode}.json"), "--snapshot", mode,
                       "--snapshot-page-rows", str(args.page_rows)]
            seconds = timed(command)
            reads, distinct = snapshot_reads(out)
            assert reads == distinct == args.rows, (mode, reads, distinct)
            result[mode] = {"seconds": round(seconds, 1), "rows_per_second": round(args.rows / seconds)}
            print(mode, result[mode], flush=True)

        out, state = work / "online-hot", work / "online-hot.json"
        load = HotLoad(server, args.hot_rate)
        command = [str(BIN / "cdc-capture-mysql"), *connect, "--tables", "shop.big,shop.hot", "--out", str(out),
                   "--state", str(state), "--snapshot", "online", "--snapshot-page-rows", str(args.page_rows),
                   "--server-id", "7001", "--follow", "--max-wait-seconds", "1"]
        following = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=open(work / "follow.log", "w"), text=True)
        load.start()
        started = time.monotonic()
        try:
            while True:
                try:
                    current = json.loads(state.read_text())
                    if current.get("snapshot_done") and not current.get("snapshots"):
                        break
                except (OSError, ValueError):
                    pass
                assert following.poll() is None, (work / "follow.log").read_text()[-2000:]
                time.sleep(0.5)
            seconds = time.monotonic() - started
            time.sleep(3)  # the hot changes of the last seconds into files
        finally:
            load.stop.set()
            load.join()
            following.terminate()
            following.wait(timeout=120)
        lags = sorted(hot_lags(out))
        reads, distinct = snapshot_reads(out)
        assert args.rows < distinct <= args.rows + 1000, distinct
        result["online_with_load"] = {
            "seconds": round(seconds, 1), "rows_per_second": round(args.rows / seconds), "hot_changes": load.changes,
            "hot_changes_per_second": round(load.changes / (seconds + 3)),
            "hot_lag_median_s": round(statistics.median(lags), 2),
            "hot_lag_p95_s": round(lags[int(len(lags) * 0.95)], 2), "hot_lag_max_s": round(lags[-1], 2)}
        print("online, with load", result["online_with_load"], flush=True)

        before, _ = snapshot_reads(out)
        first = args.rows // 2
        subprocess.run([str(BIN / "cdc-snapshot"), "--state", str(state), "--table", "shop.big", "--from", str(first),
                        "--to", str(first + args.rows // 100 - 1), "--wait-seconds", "0"], check=True, capture_output=True)
        seconds = timed([c for c in command if c not in ("--follow", "--max-wait-seconds", "1")])
        after, _ = snapshot_reads(out)
        result["range_reread"] = {"keys": args.rows // 100, "rows_read": after - before, "seconds": round(seconds, 1)}
        print("range re-read", result["range_reread"], flush=True)
    finally:
        server.stop()
    write_results(RESULTS, result)


if __name__ == "__main__":
    main()
