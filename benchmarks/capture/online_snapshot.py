"""Snapshot rate on a real PostgreSQL 15, beside the server's own COPY of the same table.

    .venv/bin/python -m benchmarks.capture.online_snapshot [--rows 5000000] [--page-rows 10000]

A table of --rows rows of mixed types (bigint, text, int, numeric, timestamptz, boolean, jsonb,
uuid); on it, in one run:
- `COPY (select * from shop.big) TO STDOUT` read by the client (the limit: the server's own
  rendering and transfer, nothing done with the rows);
- `cdc-capture-postgres --snapshot exported` (one transaction at the slot's start);
- `cdc-capture-postgres --snapshot online` (pages between watermarks, one-shot run);
- the online snapshot again in a `--follow` capture while another table takes --hot-rate changes a
  second: each of its changes' capture lag (its commit to its file on disk), median and p95;
- `cdc-snapshot` of a key range of 1% of the table: the rows it reads.
Every capture's files are checked to hold each row once. Writes benchmarks/results/online_snapshot.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.common.results import RESULTS_DIR, write_results
from harness.postgres_server import start_postgres
from python_jobs.capture.postgres_records import file_events

BIN = Path(sys.executable).parent
RESULTS = RESULTS_DIR / "online_snapshot.json"
TABLE = """create table shop.big (id bigint primary key, name text, qty int, price numeric(12,2), created timestamptz,
    active boolean, attributes jsonb, ref uuid)"""
FILL = """insert into shop.big select g, 'customer ' || g, g %% 1000, g * 1.25, timestamptz '2026-01-01' + g * interval '1 s',
    g %% 3 = 0, jsonb_build_object('tier', g %% 5, 'tags', jsonb_build_array('a', g %% 7)), md5(g::text)::uuid
    from generate_series(%s, %s) g"""


def snapshot_reads(out: Path) -> tuple[int, int]:
    """(snapshot read events, distinct rows) in a capture's files."""
    reads, rows = 0, set()
    for path in out.glob("*.json"):
        for line in path.open():
            if '"op":"r"' in line:
                reads += 1
                event = json.loads(line)
                rows.add((event["source"]["table"], event["after"]["id"]))
    return reads, len(rows)


def timed(command: list[str]) -> float:
    started = time.monotonic()
    subprocess.run(command, check=True, capture_output=True, timeout=7200)
    return time.monotonic() - started


def copy_seconds(server) -> float:
    class Sink:
        def write(self, data):
            return len(data)

    with server.connect() as connection, connection.cursor() as cursor:
        started = time.monotonic()
        cursor.copy_expert("copy (select * from shop.big) to stdout", Sink(), size=1 << 20)
        return time.monotonic() - started


class HotLoad(threading.Thread):
    """shop.hot: an update of one row every 1/rate s, each committed alone, until stopped."""

    def __init__(self, server, rate: float) -> None:
        super().__init__(daemon=True)
        self.server, self.rate, self.stop, self.changes = server, rate, threading.Event(), 0

    def run(self) -> None:
        connection = self.server.connect()
        connection.autocommit = True
        with connection.cursor() as cursor:
            started = time.monotonic()
            while not self.stop.is_set():
                cursor.execute("update shop.hot set qty = qty + 1, at = clock_timestamp() where id = %s", (self.changes % 1000 + 1,))
                self.changes += 1
                wait = started + self.changes / self.rate - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
        connection.close()


def hot_lags(out: Path) -> list[float]:
    """Seconds from each shop.hot change's commit to its file's last write."""
    lags = []
    for path in out.glob("*.json"):
        if "pages" in path.name:
            continue
        written = path.stat().st_mtime
        for event in file_events(path):
            if event.get("op") == "u" and event["source"]["table"] == "hot":
                lags.append(written - event["source"]["ts_ms"] / 1000)
    return lags


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--page-rows", type=int, default=10_000)
    parser.add_argument("--hot-rate", type=float, default=1000.0)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cdc-merge-bench-online-"))
    server = start_postgres(Path(tempfile.mkdtemp(prefix="cdc-merge-bench-postgres-")))
    result: dict = {"rows": args.rows, "page_rows": args.page_rows}
    try:
        with server.connect() as connection, connection.cursor() as cursor:
            cursor.execute("create schema shop")
            cursor.execute(TABLE)
            for start in range(1, args.rows + 1, 1_000_000):
                cursor.execute(FILL, (start, min(args.rows, start + 999_999)))
            cursor.execute("create table shop.hot (id int primary key, qty int, at timestamptz)")
            cursor.execute("insert into shop.hot select g, 0, now() from generate_series(1, 1000) g")
            cursor.execute("analyze shop.big")
        print(f"{args.rows:,} rows in shop.big", flush=True)

        seconds = copy_seconds(server)
        result["copy_to_stdout"] = {"seconds": round(seconds, 1), "rows_per_second": round(args.rows / seconds)}
        print("COPY TO STDOUT", result["copy_to_stdout"], flush=True)

        for mode in ("exported", "online"):
            out = work / mode
            command = [str(BIN / "cdc-capture-postgres"), "--dsn", server.dsn, "--tables", "shop.big", "--slot", mode,
                       "--out", str(out), "--state", str(work / f"{mode}.json"), "--snapshot", mode,
                       "--snapshot-page-rows", str(args.page_rows)]
            seconds = timed(command)
            reads, distinct = snapshot_reads(out)
            assert reads == distinct == args.rows, (mode, reads, distinct)
            result[mode] = {"seconds": round(seconds, 1), "rows_per_second": round(args.rows / seconds)}
            print(mode, result[mode], flush=True)
            with server.connect() as connection, connection.cursor() as cursor:
                cursor.execute("select pg_drop_replication_slot(%s)", (mode,))

        out, state = work / "online-hot", work / "online-hot.json"
        load = HotLoad(server, args.hot_rate)
        command = [str(BIN / "cdc-capture-postgres"), "--dsn", server.dsn, "--tables", "shop.big,shop.hot",
                   "--slot", "hot", "--out", str(out), "--state", str(state), "--snapshot", "online",
                   "--snapshot-page-rows", str(args.page_rows), "--follow", "--max-wait-seconds", "1"]
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
        # shop.big is not written: all its rows are reads; a shop.hot row changed inside its page's
        # window is its change instead of a read.
        assert args.rows < distinct <= args.rows + 1000, distinct
        result["online_with_load"] = {
            "seconds": round(seconds, 1), "rows_per_second": round(args.rows / seconds), "hot_changes": load.changes,
            "hot_changes_per_second": round(load.changes / (seconds + 3)),
            "hot_lag_median_s": round(statistics.median(lags), 2),
            "hot_lag_p95_s": round(lags[int(len(lags) * 0.95)], 2), "hot_lag_max_s": round(lags[-1], 2)}
        print("online, with load", result["online_with_load"], flush=True)

        range_out = work / "online-hot"
        before, _ = snapshot_reads(range_out)
        first = args.rows // 2
        subprocess.run([str(BIN / "cdc-snapshot"), "--state", str(state), "--table", "shop.big", "--from", str(first),
                        "--to", str(first + args.rows // 100 - 1), "--wait-seconds", "0"], check=True, capture_output=True)
        seconds = timed([c for c in command if c not in ("--follow", "--max-wait-seconds", "1")])
        after, _ = snapshot_reads(range_out)
        result["range_reread"] = {"keys": args.rows // 100, "rows_read": after - before, "seconds": round(seconds, 1)}
        print("range re-read", result["range_reread"], flush=True)
    finally:
        server.stop()
    write_results(RESULTS, result)


if __name__ == "__main__":
    main()
