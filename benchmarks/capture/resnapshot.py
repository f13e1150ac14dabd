"""A lost replication slot recovered with `--resnapshot`, in one transaction (exported) and online in
pages, on a real PostgreSQL 15 and a mirror on the embedded `local` target (Spark + Iceberg).

    .venv/bin/python -m benchmarks.capture.resnapshot [--rows 1000000] [--page-rows 10000]

A table of --rows rows is captured, landed and applied into its mirror by the product. Then, for each
way in turn: the slot is dropped, and while nothing captures, 1% of the rows are deleted, 1% updated
and 1% added; the capture runs once with `--resnapshot` (and `--snapshot exported` or `online`), the
files are landed and `dbt run` applies them; cdc-verify then compares the mirror with the table. For
each way: the capture's seconds and rows, the longest transaction the source held open for it (polled
from pg_stat_activity every 10 ms), the landing's and the run's seconds, and whether the mirror
equals the source. Writes benchmarks/results/resnapshot.json. Both databases run on this machine.

With --history, a cdc_history model of the table beside the mirror: its `dbt run` after each way's
mirror run, and whether its current versions are the mirror's rows (results/resnapshot_history.json).
"""

from __future__ import annotations

import argparse
import threading
import time

from benchmarks.common.big_table import COLUMNS, server_with_big_table
from benchmarks.common.process import product_process, timed_call
from benchmarks.common.results import RESULTS_DIR, run_header, write_results
from harness.dbt_project import PROFILES_DIR
from harness.mirror_project import make_project
from harness.postgres_server import create_capture_user
from python_jobs.capture import postgres as capture_postgres
from python_jobs.landing import io
from python_jobs.verify import cli as verify_cli

RESULTS = RESULTS_DIR / "resnapshot.json"
CAPTURE_USER = "cdc"
# While no slot keeps the changes: every 100th row deleted, every 100th (another) updated, 1% added.
LOST_CHANGES = [
    "delete from shop.big where id %% 100 = %(round)s",
    "update shop.big set qty = -qty, name = name || ' changed' where id %% 100 = %(round)s + 50",
    "insert into shop.big select g, 'added ' || g, 1, 1.00, now() from generate_series(%(first)s, %(first)s + %(added)s - 1) g",
]


class LongestTransaction:
    """The longest open transaction of the capture's user, polled from pg_stat_activity."""

    def __init__(self, server) -> None:
        self.server, self.longest, self._stop, self._polled = server, 0.0, threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        connection = self.server.connect()
        connection.autocommit = True  # each poll a statement of its own: the server's statistics read anew
        try:
            with connection.cursor() as cursor:
                while not self._stop.is_set():
                    cursor.execute("select coalesce(max(extract(epoch from clock_timestamp() - xact_start)), 0) "
                                   "from pg_stat_activity where usename = %s and xact_start is not null", (CAPTURE_USER,))
                    self.longest = max(self.longest, float(cursor.fetchone()[0]))
                    self._polled.set()
                    time.sleep(0.01)
        finally:
            connection.close()

    def __enter__(self) -> "LongestTransaction":
        self._thread.start()
        self._polled.wait(30)
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--page-rows", type=int, default=10_000)
    parser.add_argument("--history", action="store_true", help="a cdc_history model of the table too")
    args = parser.parse_args()
    models = ("big", "big_versions") if args.history else ("big",)
    work = product_process("cdc-merge-bench-resnapshot-")
    server = server_with_big_table(args.rows)
    result: dict = {**run_header(), "rows": args.rows, "page_rows": args.page_rows, "ways": {}}
    try:
        dsn = create_capture_user(server, ["shop"], CAPTURE_USER)
        spark = io.spark_session("cdc_merge_bench_resnapshot", str(work / "warehouse"))
        project = make_project(spark, work, "local")
        project.write_model("big", "unique_key='id', source_table='shop.big'", COLUMNS)
        if args.history:
            project.write_model("big_versions", "materialized='cdc_history', unique_key='id', source_table='shop.big'", COLUMNS)
        config = capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.big",), slot="resnapshot", out=project.inbox,
                                                state=work / "state.json", page_rows=args.page_rows)
        capture_postgres.run(config)
        project.land({"shop.big": ["id"]})
        project.dbt("run", "--select", *models)
        print(f"a mirror of {args.rows:,} rows", flush=True)

        def verify() -> int:
            return verify_cli.main(["--project-dir", str(project.project_dir), "--profiles-dir", str(PROFILES_DIR),
                                    "--target", "local", "--select", "big", "--postgres", dsn])

        added = args.rows // 100
        for round_number, way in enumerate(("exported", "online")):
            with server.connect() as connection, connection.cursor() as cursor:
                cursor.execute("select pg_drop_replication_slot('resnapshot')")
                for statement in LOST_CHANGES:
                    cursor.execute(statement, {"round": round_number, "first": args.rows + 1 + round_number * added,
                                               "added": added})
            with LongestTransaction(server) as longest:
                capture_seconds, summary = timed_call(lambda: capture_postgres.run(capture_postgres.CaptureConfig(
                    **{**config.__dict__, "resnapshot": True, "snapshot_mode": way})))
            land_seconds, _ = timed_call(lambda: project.land({"shop.big": ["id"]}))
            run_seconds, _ = timed_call(lambda: project.dbt("run", "--select", "big"))
            equal = verify() == 0
            figures = {"capture_s": round(capture_seconds, 1), "rows_read": summary.snapshot_rows,
                       "rows_per_s": round(summary.snapshot_rows / capture_seconds),
                       "longest_source_transaction_s": round(longest.longest, 2),
                       "land_s": round(land_seconds, 1), "dbt_run_s": round(run_seconds, 1), "mirror_equals_source": equal}
            if args.history:
                history_seconds, _ = timed_call(lambda: project.dbt("run", "--select", "big_versions"))
                figures.update({"history_dbt_run_s": round(history_seconds, 1),
                                "history_equals_mirror": history_equals_mirror(project)})
            result["ways"][way] = figures
            print(way, figures, flush=True)
        spark.stop()
    finally:
        server.stop()
    write_results(RESULTS.with_name("resnapshot_history.json") if args.history else RESULTS, result)


def history_equals_mirror(project) -> bool:
    """The history's current, not deleted versions are the mirror's rows, column for column."""
    columns = "id, name, qty, price, created"
    current = f"select {columns} from {project.schema}.big_versions where is_current and not is_deleted"
    mirror = f"select {columns} from {project.schema}.big"
    differing = project.query(f"select count(*) as n from (({mirror} except all {current}) union all ({current} except all {mirror}))")
    return int(differing[0]["n"]) == 0


if __name__ == "__main__":
    main()
