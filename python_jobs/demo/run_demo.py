"""make demo: generate -> dbt run (per wave: land + merge) -> dbt test -> summary per table.

Each wave is one `dbt run`: the landing Python model (models/landing/raw_events.py)
appends the new files to the raw log, then the mirrors merge it. Everything runs in
one local SparkSession with the Iceberg catalog under data/demo.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import shutil
import sys
import time
from pathlib import Path

from python_jobs.demo import generate as generate_demo
from python_jobs.landing import io
from python_jobs.scheduler.dbt_artifacts import JsonArtifacts
from python_jobs.scheduler.run_loop import invoke_dbt

PROJECT_DIR = Path(__file__).resolve().parent.parent.parent
DEMO_DIR = PROJECT_DIR / "data" / "demo"
MIRRORS = {
    "shop.customers": "shop_customers",
    "shop.orders": "shop_orders",
    "shop.order_lines": "shop_order_lines",
}
HISTORY = "customers_history"


# As cdc-run: dbt's JSON artifacts written where they change (scheduler/dbt_artifacts.py).
ARTIFACTS = JsonArtifacts()


def dbt(*args: str) -> float:
    """Run a dbt command in this process (so in this SparkSession); return its seconds."""
    outcome = invoke_dbt([*args, "--project-dir", str(PROJECT_DIR), "--profiles-dir", str(PROJECT_DIR / "profiles")],
                         ARTIFACTS)
    if not outcome.success:
        raise SystemExit(f"demo: 'dbt {' '.join(args)}' failed: {outcome.error}")
    return outcome.seconds


def mirror_rows(spark, model: str, columns: list[str]) -> dict[tuple, dict]:
    rows = spark.sql(f"select * from mirror.{model}").collect()
    return {tuple(row[c] for c in columns): {k: v for k, v in row.asDict().items() if not k.startswith("_cdc_")} for row in rows}


def print_versions(spark) -> None:
    """The versions of the customer that changed most, from the history model (docs/history.md)."""
    (key,) = spark.sql(f"select _cdc_key from mirror.{HISTORY} group by _cdc_key order by count(*) desc, _cdc_key limit 1").first()
    print(f"\n== {HISTORY}: the versions of customer {key}")
    for row in spark.sql(
        f"select name, tier, valid_from, valid_to, is_current, is_deleted from mirror.{HISTORY} "
        f"where _cdc_key = '{key}' order by _cdc_seq"
    ).collect():
        print(f"{row.name or '':<24} {row.tier or '':<8} {row.valid_from!s:<26} -> {row.valid_to!s:<26} "
              f"{'current' if row.is_current else ''}{' deleted' if row.is_deleted else ''}")


def raw_counts(spark) -> tuple[int, int]:
    """Events in the raw log and lines in quarantine."""
    return (
        spark.table("cdc_raw.raw_events").count(),
        spark.table("cdc_raw.quarantine").count(),
    )


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("py4j").setLevel(logging.WARNING)
    shutil.rmtree(DEMO_DIR, ignore_errors=True)
    warehouse = DEMO_DIR / "warehouse"
    os.environ["CDC_MERGE_WAREHOUSE"] = str(warehouse)
    inbox = DEMO_DIR / "inbox"
    inbox.mkdir(parents=True)

    print("== generate: seeded Debezium JSON (Postgres connector) for shop.customers, shop.orders, shop.order_lines")
    # The source clock starts a minute ago, so the reported lag is what a live feed would show.
    one_minute_ago_ms = int(time.time() * 1000) - 60_000
    _, waves = generate_demo.build_waves(seed=7, events=20_000, waves=3, clock_start_ms=one_minute_ago_ms)
    spark = io.spark_session("cdc_merge_demo", str(warehouse))
    one_run = ("run", "--select", "raw_events", "schema_history", *MIRRORS.values(), HISTORY)

    run_seconds = []
    for wave in waves:
        generate_demo.write_wave(wave, inbox)
        print(f"== wave {wave.number}: {len(wave.delivered)} events in {len(wave.files)} files -> dbt run (land + merge)")
        run_seconds.append(dbt(*one_run))
    landed, quarantined = raw_counts(spark)

    print("== land the same files again, then dbt run with nothing new")
    for path in list(inbox.iterdir())[:3]:
        path.write_bytes(path.read_bytes())  # rewritten under the same name: the checkpoint knows it
    idle_seconds = dbt(*one_run)
    relanded = raw_counts(spark)[0] - landed

    print("== dbt test")
    dbt("test", "--exclude", "inventory_products", "customer_changes")

    expected = generate_demo.replay(e for wave in waves for e in wave.delivered)
    print("\n== summary")
    print(f"events landed: {landed}, quarantined lines: {quarantined}, re-landed the same files: {relanded} events")
    print(f"dbt run with nothing new: {idle_seconds:.1f} s vs {run_seconds[0]:.1f} s for the first run "
          f"({idle_seconds / run_seconds[0]:.2f}x)")
    header = f"{'source table':<18} {'events':>7} {'inserted':>9} {'updated':>8} {'deleted':>8} {'rows':>6} {'lag s':>7}  equals source"
    print(header)
    now = dt.datetime.utcnow()
    all_equal = True
    for table, model in MIRRORS.items():
        events = spark.sql(f"select count(*) from cdc_raw.raw_events where table_name = '{table}'").first()[0]
        stats = spark.sql(
            "select sum(rows_inserted), sum(rows_updated), sum(rows_deleted), max(max_source_ts) "
            f"from mirror.cdc_merge_offsets where target_table = 'mirror.{model}'"
        ).first()
        rows = mirror_rows(spark, model, list(generate_demo.KEYS[table]))
        equal = rows == expected[table]
        all_equal &= equal
        lag = (now - stats[3]).total_seconds() if stats[3] else float("nan")
        print(f"{table:<18} {events:>7} {stats[0]:>9} {stats[1]:>8} {stats[2]:>8} {len(rows):>6} {lag:>7.0f}  {'yes' if equal else 'NO'}")
    print("(lag: now minus the newest applied source commit time; the generated source clock started a minute before the demo)")
    print_versions(spark)
    return 0 if all_equal else 1


if __name__ == "__main__":
    sys.exit(main())
