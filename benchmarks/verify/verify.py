"""cdc-verify on a large mirror, beside the row counts of both sides, on a real PostgreSQL 15.

    .venv/bin/python -m benchmarks.verify.verify [--rows 10000000] [--differences 24]

A table of --rows rows (bigint key, text, int, numeric, timestamptz) captured online, landed and
applied into a mirror on the embedded `local` target (Spark + Iceberg) by the product itself; then,
in one run:
- `count(*)` of the source table and of the mirror (the baseline: the least a check reads);
- `cdc-verify` of the mirror, equal (every row by key ranges);
- --differences rows changed, deleted and added in the mirror behind the pipeline's back, spread over
  the key space: `cdc-verify` again, and whether each is reported with its key and kind;
- `cdc-verify --repair`, the capture reading the differing ranges again (rows read against the
  rows of those ranges), a run applying them, and `cdc-verify` clean again.
Writes benchmarks/results/verify.json. Both databases run on this machine's cores.
"""

from __future__ import annotations

import argparse
import json
import random

from benchmarks.common.big_table import COLUMNS, server_with_big_table
from benchmarks.common.process import product_process, timed_call
from benchmarks.common.results import RESULTS_DIR, write_results
from harness.dbt_project import PROFILES_DIR
from harness.mirror_project import make_project
from harness.postgres_server import create_capture_user
from python_jobs.capture import postgres as capture_postgres
from python_jobs.landing import io
from python_jobs.verify import cli as verify_cli

RESULTS = RESULTS_DIR / "verify.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--differences", type=int, default=24, help="changed, missing and extra rows, a third each")
    args = parser.parse_args()
    work = product_process("cdc-merge-bench-verify-")
    server = server_with_big_table(args.rows)
    result: dict = {"rows": args.rows}
    try:
        dsn = create_capture_user(server, ["shop"])
        spark = io.spark_session("cdc_merge_bench_verify", str(work / "warehouse"))
        project = make_project(spark, work, "local")
        project.write_model("big", "unique_key='id', source_table='shop.big'", COLUMNS)
        config = capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.big",), slot="verify", out=project.inbox,
                                                state=work / "state.json", snapshot_mode="online", page_rows=50_000)
        seconds, _ = timed_call(lambda: capture_postgres.run(config))
        print(f"captured {args.rows:,} rows in {seconds:.0f} s", flush=True)
        seconds, _ = timed_call(lambda: project.land({"shop.big": ["id"]}))
        print(f"landed in {seconds:.0f} s", flush=True)
        seconds, _ = timed_call(lambda: project.dbt("run", "--select", "big"))
        print(f"applied in {seconds:.0f} s", flush=True)
        mirror = f"{project.schema}.big"

        def verify(*options: str) -> int:
            return verify_cli.main(["--project-dir", str(project.project_dir), "--profiles-dir", str(PROFILES_DIR),
                                    "--target", "local", "--select", "big", "--postgres", dsn, *options])

        def count_both() -> int:
            with server.connect() as connection, connection.cursor() as cursor:
                cursor.execute("select count(*) from shop.big")
                source = cursor.fetchone()[0]
            return source + project.query(f"select count(*) as n from {mirror}")[0]["n"]

        seconds, counted = timed_call(count_both)
        assert counted == 2 * args.rows, counted
        result["count_both_sides_s"] = round(seconds, 1)
        seconds, status = timed_call(verify)
        assert status == 0, project.dbt_log()[-3000:]
        result["verify_equal_s"] = round(seconds, 1)
        print("count(*) both sides", result["count_both_sides_s"], "s; cdc-verify, equal:", result["verify_equal_s"], "s",
              flush=True)

        # Differences spread over the key space: a third changed, a third missing, a third extra.
        chance = random.Random(52)
        keys = chance.sample(range(1, args.rows + 1), 2 * (args.differences // 3))
        changed, missing = keys[:args.differences // 3], keys[args.differences // 3:]
        extra = [args.rows + 1 + index * 7 for index in range(args.differences - len(changed) - len(missing))]
        project.execute(f"update {mirror} set qty = -1 where id in ({', '.join(map(str, changed))})")
        project.execute(f"delete from {mirror} where id in ({', '.join(map(str, missing))})")
        project.execute(f"insert into {mirror} (id, name, qty, price, created, _cdc_key, _cdc_seq, _cdc_source_ts) values "
                        + ", ".join(f"({key}, 'extra', 1, 1.00, current_timestamp(), '[\"{key}\"]', "
                                    "'00000000000000000001', current_timestamp())" for key in extra))
        logged = len(project.dbt_log())
        seconds, status = timed_call(verify)
        log = project.dbt_log()[logged:]
        report = json.loads((project.project_dir / "target" / "cdc_verify.json").read_text())["checks"][0]
        reported = {kind: set(keys) for kind, keys in report["keys"].items()}
        found = {"changed": sum(f'["{key}"]' in reported["differing"] for key in changed),
                 "missing": sum(f'["{key}"]' in reported["missing"] for key in missing),
                 "extra": sum(f'["{key}"]' in reported["extra"] for key in extra)}
        assert status == 1 and found == {"changed": len(changed), "missing": len(missing), "extra": len(extra)}, (
            found, report, log[-3000:])
        assert sum(len(keys) for keys in reported.values()) == args.differences, report
        result["verify_with_differences"] = {"seconds": round(seconds, 1), "injected": args.differences,
                                             "found_with_their_keys": sum(found.values()),
                                             "rows_compared_one_by_one": report["compared_rows"],
                                             "ranges": report["ranges"], **found}
        print("cdc-verify with differences:", result["verify_with_differences"], flush=True)

        ranges = report["differing_ranges"]
        seconds, status = timed_call(lambda: verify("--repair", "--state", str(work / "state.json")))
        reread = capture_postgres.run(config).snapshot_rows
        project.land({"shop.big": ["id"]})
        project.dbt("run", "--select", "big")
        seconds, status = timed_call(verify)
        assert status == 0, project.dbt_log()[-3000:]
        result["repair"] = {"differing_ranges": len(ranges), "rows_in_those_ranges": report["compared_rows"],
                            "rows_read_again": reread, "verify_after_s": round(seconds, 1)}
        print("repair:", result["repair"], flush=True)
        spark.stop()
    finally:
        server.stop()
    write_results(RESULTS, result)


if __name__ == "__main__":
    main()
