"""Small batches into a history: its chain computed in steps (python_jobs/apply/history_stages.py)
against one statement, the way a session that keeps no computed relation computes it (a Thrift
server's), on a real PostgreSQL 15 and the embedded `local` target (Spark + Iceberg).

    .venv/bin/python -m benchmarks.history.small_batches [--rows 1000000] [--events 200] [--rounds 4]

A table of --rows rows is captured, landed and applied into a cdc_history model of it. Then, round
after round, --events random rows are updated, captured and landed, and the history's `dbt run`
timed, the chain in steps and as one statement in turn. Ends with each way's times and medians and
whether the history's current versions are the source's rows. Writes
benchmarks/results/history_small_batches.json.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics

from benchmarks.common.big_table import COLUMNS, server_with_big_table
from benchmarks.common.process import product_process, timed_call
from benchmarks.common.results import RESULTS_DIR, run_header, write_results
from harness.mirror_project import make_project
from harness.postgres_server import create_capture_user
from python_jobs.apply import history_stages
from python_jobs.capture import postgres as capture_postgres
from python_jobs.landing import io

RESULTS = RESULTS_DIR / "history_small_batches.json"
WAYS = ("in_steps", "one_statement")


@contextlib.contextmanager
def chain_as(way: str):
    """The history's chain computed as way says, for the runs in the block."""
    chain_stages = history_stages.chain_stages
    if way == "one_statement":
        history_stages.chain_stages = lambda *arguments: []
    try:
        yield
    finally:
        history_stages.chain_stages = chain_stages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--events", type=int, default=200, help="rows updated a round")
    parser.add_argument("--rounds", type=int, default=4, help="runs of each way, alternating")
    args = parser.parse_args()
    work = product_process("cdc-merge-bench-history-small-batches-")
    server = server_with_big_table(args.rows)
    result: dict = {**run_header(), "rows": args.rows, "events": args.events, "ways": {way: [] for way in WAYS}}
    try:
        dsn = create_capture_user(server, ["shop"], "cdc")
        spark = io.spark_session("cdc_merge_bench_history_small_batches", str(work / "warehouse"))
        project = make_project(spark, work, "local")
        project.write_model("big_versions", "materialized='cdc_history', unique_key='id', source_table='shop.big'", COLUMNS)
        config = capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.big",), slot="small_batches", out=project.inbox,
                                                state=work / "state.json")
        capture_postgres.run(config)
        project.land({"shop.big": ["id"]})
        seconds, _ = timed_call(lambda: project.dbt("run", "--select", "big_versions"))
        result["first_run_s"] = round(seconds, 1)
        print(f"a history of {args.rows:,} versions in {seconds:.1f} s", flush=True)
        for round_number in range(args.rounds):
            for way in WAYS:
                with server.connect() as connection, connection.cursor() as cursor:
                    cursor.execute("update shop.big set qty = qty + 1 where id in "
                                   "(select 1 + floor(random() * %s)::bigint from generate_series(1, %s))", (args.rows, args.events))
                capture_postgres.run(config)
                project.land({"shop.big": ["id"]})
                with chain_as(way):
                    seconds, _ = timed_call(lambda: project.dbt("run", "--select", "big_versions"))
                result["ways"][way].append(round(seconds, 2))
                print(f"round {round_number + 1}: {way} {seconds:.2f} s", flush=True)
        for way in WAYS:
            result[f"{way}_median_s"] = round(statistics.median(result["ways"][way]), 2)
        result["history_equals_source"] = history_equals_source(project, server)
        spark.stop()
    finally:
        server.stop()
    write_results(RESULTS, result)


def history_equals_source(project, server) -> bool:
    """The history's current, not deleted versions are the source's rows (ids and quantities)."""
    current = project.query(f"select id, qty from {project.schema}.big_versions where is_current and not is_deleted")
    with server.connect() as connection, connection.cursor() as cursor:
        cursor.execute("select id, qty from shop.big")
        source = cursor.fetchall()
    return sorted((int(row["id"]), int(row["qty"])) for row in current) == sorted((int(i), int(q)) for i, q in source)


if __name__ == "__main__":
    main()
