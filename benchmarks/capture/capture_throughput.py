"""Capture throughput on real servers, beside each server's own decoding of the same changes.

    .venv/bin/python -m benchmarks.capture.capture_throughput [--changes 200000] [--transactions 20]

PostgreSQL 15 + wal2json: after a snapshot of --snapshot-rows rows, --changes row changes (inserts,
updates, deletes) in --transactions transactions; then, on the same slot's changes:
- `cdc-capture-postgres` one-shot catch-up (peek, write, confirm);
- `cdc-capture-postgres --follow` (the replication protocol), until the last change is in a file;
- `pg_recvlogical` with the same wal2json options to a file (the server's own decoding rate).
MariaDB: the same load; `cdc-capture-mysql` one-shot and `--follow` against `mysqlbinlog` of the
binlog files to /dev/null. Each capture starts from the same slot or binlog position (a copy of its
state), and every capture's files are checked to hold each change once. Writes
benchmarks/results/capture_throughput.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common.results import RESULTS_DIR
from harness.mariadb_server import start_mariadb
from harness.postgres_server import start_postgres
from python_jobs.capture.postgres_records import file_events

BIN = Path(sys.executable).parent
RESULTS = RESULTS_DIR / "capture_throughput.json"


def load_sql(changes: int, transactions: int, snapshot_rows: int) -> list[str]:
    """Statements of the load, one transaction each: 60% inserts, 30% updates, 10% deletes."""
    per = changes // transactions
    statements, next_id = [], snapshot_rows + 1
    for number in range(transactions):
        inserts, updates = per * 6 // 10, per * 3 // 10
        deletes = per - inserts - updates
        low = 1 + (number * updates) % max(1, snapshot_rows - updates)
        statements.append(
            f"insert into shop.items select g, 'new ' || g, g * 1.5 from generate_series({next_id}, {next_id + inserts - 1}) g;"
            f"update shop.items set note = 'updated', price = price + 1 where id between {low} and {low + updates - 1};"
            f"delete from shop.items where id between {next_id} and {next_id + deletes - 1};")
        next_id += inserts
    return statements


def count_changes(out: Path) -> tuple[int, int]:
    """(change events, distinct source positions) in a capture's change files (not snapshot files)."""
    events, positions = 0, set()
    for path in out.glob("*.json"):
        if "snapshot" in path.name:
            continue
        for event in file_events(path):
            if "op" in event:
                events += 1
                where = event["source"]
                positions.add((where.get("lsn"), where.get("file"), where.get("pos"), where.get("row")))
    return events, len(positions)


def timed_follow(command: list[str], state: Path, expected: int) -> float:
    """Seconds from the start of a --follow capture until its state says expected changes are in files
    (read from the state file, which it writes with each file: cheap to poll)."""
    started = time.monotonic()
    process = subprocess.Popen([*command, "--follow", "--max-wait-seconds", "1"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)

    def written() -> int:
        try:
            return json.loads(state.read_text()).get("following", {}).get("changes", 0)
        except (OSError, ValueError):
            return 0

    try:
        while written() < expected:
            if process.poll() is not None:
                raise RuntimeError(f"{command[0]} --follow ended: {process.stderr.read()[-2000:]}")
            time.sleep(0.05)
        return time.monotonic() - started
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=120)


def timed_capture(command: list[str], out: Path, state: Path, follow_until: int | None) -> dict:
    """A one-shot catch-up run, or with follow_until a --follow run until that many changes are written;
    its rate, and its files' change events checked one per source position."""
    if follow_until is not None:
        seconds = timed_follow(command, state, follow_until)
    else:
        started = time.monotonic()
        subprocess.run(command, check=True, capture_output=True, timeout=3600)
        seconds = time.monotonic() - started
    events, distinct = count_changes(out)
    return {"seconds": round(seconds, 2), "events": events, "distinct_positions": distinct,
            "changes_per_second": round(events / seconds)}


def postgres(work: Path, args: argparse.Namespace) -> dict:
    # Not under work: the server runs as another user, who cannot enter it.
    server = start_postgres(Path(tempfile.mkdtemp(prefix="cdc-merge-bench-postgres-")))
    try:
        with server.connect() as connection, connection.cursor() as cursor:
            cursor.execute("create schema shop; create table shop.items (id bigint primary key, note text, price numeric(12,2))")
            cursor.execute("insert into shop.items select g, 'row ' || g, g from generate_series(1, %s) g", (args.snapshot_rows,))
        base = ["--dsn", server.dsn, "--tables", "shop.items", "--slot", "bench"]
        subprocess.run([BIN / "cdc-capture-postgres", *base, "--out", work / "pg-snapshot", "--state", work / "pg-state.json"],
                       check=True, capture_output=True)
        # A second slot at the same point, for pg_recvlogical.
        with server.connect() as connection, connection.cursor() as cursor:
            cursor.execute("select pg_create_logical_replication_slot('recv', 'wal2json')")
        started = time.monotonic()
        for statement in load_sql(args.changes, args.transactions, args.snapshot_rows):
            with server.connect() as connection, connection.cursor() as cursor:
                cursor.execute(statement)
        load_seconds = time.monotonic() - started
        with server.connect() as connection, connection.cursor() as cursor:
            cursor.execute("select pg_current_wal_lsn()::text")
            (end_lsn,) = cursor.fetchone()
            # The copies of the slot for each capture: the slot's state is on the server, so each run
            # needs its own slot at the same point. Logical slots cannot be copied while in use: copy now.
            cursor.execute("select pg_copy_logical_replication_slot('bench', 'bench_follow')")
        result = {"changes": args.changes, "transactions": args.transactions, "load_seconds": round(load_seconds, 1)}

        recv_file = work / "recv.json"
        started = time.monotonic()
        subprocess.run(["pg_recvlogical", "-d", f"host=127.0.0.1 port={server.port} user=postgres dbname=postgres",
                        "--slot", "recv", "--start", "--endpos", end_lsn, "-f", str(recv_file), "--no-loop",
                        "-o", "format-version=2", "-o", "include-lsn=true", "-o", "include-timestamp=true",
                        "-o", "include-pk=true", "-o", "include-transaction=true", "-o", "add-tables=shop.items"],
                       check=True, capture_output=True, timeout=3600)
        recv_seconds = time.monotonic() - started
        recv_changes = sum(1 for line in recv_file.open() if '"action":"I"' in line or '"action":"U"' in line
                           or '"action":"D"' in line)
        result["pg_recvlogical"] = {"seconds": round(recv_seconds, 2), "changes": recv_changes,
                                    "changes_per_second": round(recv_changes / recv_seconds)}

        for name, slot, follow in (("one_shot", "bench", False), ("follow", "bench_follow", True)):
            out, state = work / f"pg-{name}", work / f"pg-{name}-state.json"
            state.write_text((work / "pg-state.json").read_text().replace('"bench"', f'"{slot}"'))
            command = [str(BIN / "cdc-capture-postgres"), "--dsn", server.dsn, "--tables", "shop.items",
                       "--slot", slot, "--out", str(out), "--state", str(state)]
            result[name] = timed_capture(command, out, state, recv_changes if follow else None)
        return result
    finally:
        server.stop()


def mariadb(work: Path, args: argparse.Namespace) -> dict:
    server = start_mariadb(Path(tempfile.mkdtemp(prefix="cdc-merge-bench-mariadb-")))
    try:
        connection = server.connect(autocommit=True)
        with connection.cursor() as cursor:
            cursor.execute("create database shop")
            cursor.execute("use shop")
            cursor.execute("create table shop.items (id bigint primary key, note text, price decimal(12,2))")
            # seq_<from>_to_<to>: MariaDB's Sequence engine.
            cursor.execute(f"insert into shop.items select seq, concat('row ', seq), seq from seq_1_to_{args.snapshot_rows}")
        connection.close()
        base = ["--host", "127.0.0.1", "--port", str(server.port), "--user", "root", "--tables", "shop.items"]
        subprocess.run([BIN / "cdc-capture-mysql", *base, "--out", work / "my-snapshot", "--state", work / "my-state.json"],
                       check=True, capture_output=True)
        started = time.monotonic()
        per = args.changes // args.transactions
        connection = server.connect(autocommit=True, database="shop")
        with connection.cursor() as cursor:
            next_id = args.snapshot_rows + 1
            for number in range(args.transactions):
                inserts, updates = per * 6 // 10, per * 3 // 10
                deletes = per - inserts - updates
                low = 1 + (number * updates) % max(1, args.snapshot_rows - updates)
                cursor.execute("begin")
                cursor.execute(f"insert into shop.items select seq, concat('new ', seq), seq * 1.5 "
                               f"from seq_{next_id}_to_{next_id + inserts - 1}")
                cursor.execute(f"update shop.items set note = 'updated', price = price + 1 where id between {low} and {low + updates - 1}")
                cursor.execute(f"delete from shop.items where id between {next_id} and {next_id + deletes - 1}")
                cursor.execute("commit")
                next_id += inserts
            cursor.execute("show binary logs")
            binlogs = [row[0] for row in cursor.fetchall()]
        connection.close()
        result = {"changes": args.changes, "transactions": args.transactions,
                  "load_seconds": round(time.monotonic() - started, 1)}

        started = time.monotonic()
        subprocess.run(["mysqlbinlog", "--read-from-remote-server", "--host=127.0.0.1", f"--port={server.port}",
                        "--user=root", "--verbose", *binlogs], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, timeout=3600)
        result["mysqlbinlog"] = {"seconds": round(time.monotonic() - started, 2),
                                 "changes_per_second": round(args.changes / (time.monotonic() - started))}

        for name, follow in (("one_shot", False), ("follow", True)):
            out, state = work / f"my-{name}", work / f"my-{name}-state.json"
            shutil.copy(work / "my-state.json", state)
            command = [str(BIN / "cdc-capture-mysql"), *base, "--out", str(out), "--state", str(state)]
            result[name] = timed_capture(command, out, state, args.changes if follow else None)
        return result
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--changes", type=int, default=200_000)
    parser.add_argument("--transactions", type=int, default=20)
    parser.add_argument("--snapshot-rows", type=int, default=100_000)
    parser.add_argument("--only", choices=["postgres", "mariadb"])
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cdc-merge-capture-bench-"))
    results = {}
    try:
        for name, run in (("postgres", postgres), ("mariadb", mariadb)):
            if args.only in (None, name):
                results[name] = run(work, args)
                print(name, json.dumps(results[name], indent=2), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
