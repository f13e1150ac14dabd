"""A column a history's model adds, taken in place (docs/history.md, "Columns the model adds") against
the history rebuilt from the raw log (what `dbt run --full-refresh` does), on a real PostgreSQL 15 and
the embedded `local` target (Spark + Iceberg).

    .venv/bin/python -m benchmarks.history.added_column [--rows 200000] [--updated 0.2]

A table of --rows rows is captured, landed and applied into a cdc_history model of all its columns but
price; then --updated of its rows are updated twice (two more versions each) and applied. The model then
selects price too: its `dbt run` is timed, and so is the first run of a second model of the same SQL,
built from the whole raw log. Ends with both times and whether every version holds the rebuilt one's
price. Writes benchmarks/results/history_added_column.json.
"""

from __future__ import annotations

import argparse

from benchmarks.common.big_table import COLUMNS, server_with_big_table
from benchmarks.common.process import product_process, timed_call
from benchmarks.common.results import RESULTS_DIR, run_header, write_results
from harness.mirror_project import make_project
from harness.postgres_server import create_capture_user
from python_jobs.capture import postgres as capture_postgres
from python_jobs.landing import io

RESULTS = RESULTS_DIR / "history_added_column.json"
CONFIG = "materialized='cdc_history', unique_key='id', source_table='shop.big'"
WITHOUT_PRICE = COLUMNS.replace(" 'price': 'decimal(12,2)',", "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--updated", type=float, default=0.2, help="share of the rows updated twice")
    args = parser.parse_args()
    work = product_process("cdc-merge-bench-history-added-column-")
    server = server_with_big_table(args.rows)
    result: dict = {**run_header(), "rows": args.rows, "updated": args.updated}
    try:
        dsn = create_capture_user(server, ["shop"], "cdc")
        spark = io.spark_session("cdc_merge_bench_history_added_column", str(work / "warehouse"))
        project = make_project(spark, work, "local")
        project.write_model("big_versions", CONFIG, WITHOUT_PRICE)
        config = capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.big",), slot="added_column", out=project.inbox,
                                                state=work / "state.json")
        capture_postgres.run(config)
        project.land({"shop.big": ["id"]})
        project.dbt("run", "--select", "big_versions")
        with server.connect() as connection, connection.cursor() as cursor:
            for _ in range(2):
                cursor.execute("update shop.big set qty = qty + 1, price = price + 0.5 where id %% %s = 0",
                               (round(1 / args.updated),))
        capture_postgres.run(config)
        project.land({"shop.big": ["id"]})
        project.dbt("run", "--select", "big_versions")
        versions = project.query(f"select count(*) as n from {project.schema}.big_versions")[0]["n"]
        result["versions"] = int(versions)
        print(f"a history of {int(versions):,} versions without price", flush=True)

        project.write_model("big_versions", CONFIG, COLUMNS)
        seconds, _ = timed_call(lambda: project.dbt("run", "--select", "big_versions"))
        result["in_place_s"] = round(seconds, 1)
        print(f"price added in place: {seconds:.1f} s", flush=True)
        project.write_model("big_versions_rebuilt", CONFIG, COLUMNS)
        seconds, _ = timed_call(lambda: project.dbt("run", "--select", "big_versions_rebuilt"))
        result["rebuilt_s"] = round(seconds, 1)
        print(f"the same history rebuilt from the raw log: {seconds:.1f} s", flush=True)
        differ = project.query(
            f"select count(*) as n from {project.schema}.big_versions as kept "
            f"full join {project.schema}.big_versions_rebuilt as rebuilt "
            "on kept._cdc_key = rebuilt._cdc_key and kept._cdc_seq = rebuilt._cdc_seq "
            "where not (kept.price <=> rebuilt.price) or kept._cdc_key is null or rebuilt._cdc_key is null")[0]["n"]
        result["versions_differing_from_rebuilt"] = int(differ)
        print(f"versions differing from the rebuilt history: {int(differ)}", flush=True)
        spark.stop()
    finally:
        server.stop()
    write_results(RESULTS, result)


if __name__ == "__main__":
    main()
