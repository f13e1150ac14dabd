"""make cluster-demo: the demo on a Spark cluster started for it (cdc-cluster): generate -> per
wave one `dbt run --target cluster` (the landing model spark-submitted to the master, the mirrors
applied through the Thrift server) -> dbt test -> summary per table; the cluster stops at the end.

Everything lives under data/cluster-demo: the cluster's folder (logs, pids, catalog database,
warehouse), the generated files and the landing checkpoint.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import time
from pathlib import Path

import yaml

from python_jobs.cluster import cli, thrift
from python_jobs.demo import generate as generate_demo
from python_jobs.scheduler.run_loop import invoke_dbt

PROJECT_DIR = Path(__file__).resolve().parent.parent.parent
DEMO_DIR = PROJECT_DIR / "data" / "cluster-demo"
MIRRORS = {
    "shop.customers": "shop_customers",
    "shop.orders": "shop_orders",
    "shop.order_lines": "shop_order_lines",
}
EVENTS = int(os.environ.get("CDC_MERGE_CLUSTER_DEMO_EVENTS", "10000"))


def dbt(*args: str) -> float:
    """A dbt command on the `cluster` target, in this process; its seconds."""
    outcome = invoke_dbt([*args, "--target", "cluster", "--project-dir", str(PROJECT_DIR),
                          "--profiles-dir", str(PROJECT_DIR / "profiles")])
    if not outcome.success:
        raise SystemExit(f"cluster demo: 'dbt {' '.join(args)}' failed: {outcome.error}")
    return outcome.seconds


def write_landing_config(inbox: Path) -> Path:
    path = DEMO_DIR / "landing.yml"
    path.write_text(yaml.safe_dump({
        "input": str(inbox),
        "checkpoint": str(DEMO_DIR / "checkpoints" / "landing"),
        "raw_table": "cdc_raw.raw_events",
        "quarantine_table": "cdc_raw.quarantine",
        "format": "debezium",
        "tables": {table: {"key": list(key)} for table, key in generate_demo.KEYS.items()},
    }))
    return path


def mirror_rows(model: str, columns: list[str]) -> dict[tuple, dict]:
    return {
        tuple(row[c] for c in columns): {k: v for k, v in row.items() if not k.startswith("_cdc_")}
        for row in thrift.rows(f"select * from mirror.{model}")
    }


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    shutil.rmtree(DEMO_DIR, ignore_errors=True)
    inbox = DEMO_DIR / "inbox"
    inbox.mkdir(parents=True)
    folder = DEMO_DIR / "cluster"
    started = time.monotonic()
    print("== cdc-cluster up: catalog PostgreSQL, Spark master, 2 workers, Thrift server")
    try:
        state = cli.up(folder, folder / "warehouse", dict.fromkeys(("catalog", "master", "master_webui", "thrift"), 0),
                       worker_cores=2, worker_memory="2g",
                       driver_memory=os.environ.get("CDC_MERGE_DRIVER_MEMORY", "2g"), executor_memory="1g")
    except cli.ClusterError as error:
        raise SystemExit(f"cluster demo: {error}") from None
    try:
        os.environ.update(state.env())
        up_seconds = time.monotonic() - started
        landing_config = write_landing_config(inbox)
        one_run = ("run", "--select", "raw_events", *MIRRORS.values(),
                   "--vars", f"{{cdc_merge_landing_config: '{landing_config}'}}")
        print(f"== generate: {EVENTS} seeded Debezium events (Postgres connector) in 2 waves")
        one_minute_ago_ms = int(time.time() * 1000) - 60_000
        _, waves = generate_demo.build_waves(seed=7, events=EVENTS, waves=2, clock_start_ms=one_minute_ago_ms)
        run_seconds = []
        for wave in waves:
            generate_demo.write_wave(wave, inbox)
            print(f"== wave {wave.number}: {len(wave.delivered)} events in {len(wave.files)} files -> "
                  "dbt run --target cluster (landing on the cluster + mirrors through the Thrift server)")
            run_seconds.append(dbt(*one_run))
        print("== dbt test --target cluster")
        test_seconds = dbt("test", "--select", *MIRRORS.values())

        expected = generate_demo.replay(e for wave in waves for e in wave.delivered)
        landed = thrift.rows("select count(*) as n from cdc_raw.raw_events")[0]["n"]
        quarantined = thrift.rows("select count(*) as n from cdc_raw.quarantine")[0]["n"]
        print("\n== summary")
        print(f"cluster up in {up_seconds:.0f} s; dbt run per wave: {', '.join(f'{s:.0f} s' for s in run_seconds)}; "
              f"dbt test: {test_seconds:.0f} s")
        print(f"events landed: {landed}, quarantined lines: {quarantined}")
        print(f"{'source table':<18} {'events':>7} {'inserted':>9} {'updated':>8} {'deleted':>8} {'rows':>6}  equals source")
        all_equal = True
        for table, model in MIRRORS.items():
            events = thrift.rows(f"select count(*) as n from cdc_raw.raw_events where table_name = '{table}'")[0]["n"]
            stats = thrift.rows(
                "select sum(rows_inserted) as i, sum(rows_updated) as u, sum(rows_deleted) as d "
                f"from mirror.cdc_merge_offsets where target_table = 'mirror.{model}'"
            )[0]
            rows = mirror_rows(model, list(generate_demo.KEYS[table]))
            equal = rows == expected[table]
            all_equal &= equal
            print(f"{table:<18} {events:>7} {stats['i']:>9} {stats['u']:>8} {stats['d']:>8} {len(rows):>6}  "
                  f"{'yes' if equal else 'NO'}")
        print(f"logs of every component: {folder}")
        return 0 if all_equal else 1
    finally:
        print("== cdc-cluster down")
        cli.down(folder)


if __name__ == "__main__":
    sys.exit(main())
