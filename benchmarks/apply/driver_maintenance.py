"""A maintenance's steps on small tables in the driver (adapter/dbt/adapters/cdc_spark/driver_maintenance.py)
against Spark's procedures, on the same tables.

    .venv/bin/python -m benchmarks.apply.driver_maintenance --rounds 5 --cycles 8

Compaction (SmallTableCompaction.java against rewrite_data_files and rewrite_position_delete_files):
the demo's four mirrors (landing included, as cdc-run runs them) take --cycles cycles of --events
events with maintenance off; then every table one maintenance compacts (each mirror and its
tombstones, the raw, offsets and runs tables) is compacted both ways from the same snapshot: one way,
timed, then rolled back to that snapshot (Iceberg's rollback_to_snapshot), then the other way,
timed; the way that goes first alternates by round. Each way must leave the table's rows as they
were.

Snapshot expiry (SnapshotExpiry.java against expire_snapshots): expiry deletes files, so it cannot
be rolled back; each round writes two tables the same way (--snapshots small appends, a position
delete after every third, a compaction) and expires all but the current snapshot of one in the
driver and of the other by the procedure, which goes first alternating. Both must leave one
snapshot and no data or delete file it does not reference.

Prints each round and the medians; writes benchmarks/results/driver_maintenance.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

import yaml

from benchmarks.common import warm
from benchmarks.common.measure import tee_stdout
from benchmarks.common.project import demo_project
from benchmarks.common.results import RESULTS_DIR, run_header

SPARK_WAY = ("call system.rewrite_data_files(table => '{table}', options => map('min-input-files', '2', "
             "'delete-file-threshold', '1', 'remove-dangling-deletes', 'true'))")
SPARK_DELETES = "call system.rewrite_position_delete_files(table => '{table}', options => map('rewrite-all', 'true'))"


def arguments(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="rounds of cycles, then both compactions (default 5)")
    parser.add_argument("--cycles", type=int, default=8, help="demo cycles before each round's compactions (default 8)")
    parser.add_argument("--events", type=int, default=300, help="events per cycle (default 300)")
    parser.add_argument("--snapshots", type=int, default=30, help="snapshots of each expiry round's tables (default 30)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/cdc_merge_driver_maintenance_bench"))
    parser.add_argument("--results", type=Path, default=RESULTS_DIR / "driver_maintenance.json")
    return parser.parse_args(argv)


def maintenance_off(project) -> None:
    """The mirrors do not maintain themselves: the benchmark compacts."""
    path = project.dir / "dbt_project.yml"
    config = yaml.safe_load(path.read_text())
    config["models"]["cdc_merge"]["mirrors"]["+maintenance"] = "off"
    path.write_text(yaml.safe_dump(config, sort_keys=False))


def in_driver(spark, table: str) -> None:
    from dbt.adapters.cdc_spark import driver_maintenance

    if driver_maintenance.compact(spark, table) is None:
        raise RuntimeError(f"{table} is not one the driver compacts")


def by_spark(spark, table: str) -> None:
    """As macros/maintenance/compaction.sql does without the driver."""
    from dbt.adapters.cdc_spark import table_metadata

    spark.sql(SPARK_WAY.format(table=table)).collect()
    if (table_metadata.mirror_metadata(spark, table) or {}).get("delete_files", 0) > 1:
        spark.sql(SPARK_DELETES.format(table=table)).collect()


def rows(spark, table: str) -> list:
    return sorted(spark.table(table).collect())


def snapshot(spark, table: str) -> int | None:
    main = spark.sql(f"select snapshot_id from {table}.refs where name = 'main'").first()
    return main.snapshot_id if main else None


def compact_both_ways(spark, tables: list[str], driver_first: bool) -> dict:
    """Seconds of each way for all tables, each table from the same snapshot both ways."""
    seconds = {"driver": 0.0, "spark": 0.0}
    ways = [("driver", in_driver), ("spark", by_spark)]
    if not driver_first:
        ways.reverse()
    for table in tables:
        start, before = snapshot(spark, table), rows(spark, table)
        if start is None:  # never written (a quiet source's tombstones)
            continue
        for number, (name, way) in enumerate(ways):
            started = time.perf_counter()
            way(spark, table)
            seconds[name] += time.perf_counter() - started
            if rows(spark, table) != before:
                raise AssertionError(f"{name} compaction changed the rows of {table}")
            if number == 0:
                spark.sql(f"call system.rollback_to_snapshot('{table}', {start})").collect()
    return {name: round(value, 3) for name, value in seconds.items()}


def twin_history(spark, name: str, snapshots: int) -> None:
    spark.sql(f"create table {name} (id bigint, v string) using iceberg tblproperties ('format-version' = '2', "
              "'write.delete.mode' = 'merge-on-read')")
    for number in range(snapshots):
        spark.range(number * 100, number * 100 + 100).selectExpr("id", "cast(id as string) as v").coalesce(1).writeTo(name).append()
        if number % 3 == 0:
            spark.sql(f"delete from {name} where id = {number * 100}")
    spark.sql(f"call system.rewrite_data_files(table => '{name}', options => map('min-input-files', '2', "
              "'delete-file-threshold', '1'))").collect()


def expire_both_ways(spark, round_number: int, snapshots: int, driver_first: bool) -> dict:
    """Seconds and counts of each way on twin tables, all but the current snapshot expired."""
    from dbt.adapters.cdc_spark import driver_maintenance

    tables = {way: f"bm_expiry.{way}_{round_number}" for way in ("driver", "spark")}
    for name in tables.values():
        twin_history(spark, name, snapshots)
    outcome = {}
    for way in (["driver", "spark"] if driver_first else ["spark", "driver"]):
        table = tables[way]
        current = snapshot(spark, table)
        committed = spark.sql(f"select committed_at from {table}.snapshots where snapshot_id = {current}").first().committed_at
        started = time.perf_counter()
        if way == "driver":
            counts = driver_maintenance.expire(spark, table, [str(current)])
            removed = counts["files_removed"]
        else:
            (row,) = spark.sql(f"call system.expire_snapshots(table => '{table}', older_than => timestamp '{committed}', "
                               "retain_last => 1)").collect()
            removed = row.deleted_data_files_count + row.deleted_position_delete_files_count
        outcome[way] = {"seconds": round(time.perf_counter() - started, 3), "files_removed": removed,
                        "snapshots_left": len(spark.sql(f"select 1 from {table}.snapshots").collect()),
                        "unreferenced_files_left": len(unreferenced_data_files(spark, table))}
    if any(outcome[way]["snapshots_left"] != 1 or outcome[way]["unreferenced_files_left"] for way in outcome):
        raise AssertionError(f"an expiry left a snapshot or a file it should have removed: {outcome}")
    return outcome


def unreferenced_data_files(spark, table: str) -> set[str]:
    """Files in the table's data folder that no snapshot of it references."""
    location = spark.sql(f"describe table extended {table}").where("col_name = 'Location'").first().data_type
    on_disk = {str(path) for path in (Path(location.removeprefix("file:")) / "data").rglob("*.parquet")}
    referenced = {row.file_path.removeprefix("file:") for row in spark.sql(f"select file_path from {table}.all_files").collect()}
    return on_disk - referenced


def main(argv=None) -> int:
    from python_jobs.demo.generate import build_waves, write_wave

    args = arguments(argv)
    with tee_stdout(args.results.with_suffix(".log")):
        shutil.rmtree(args.work_dir, ignore_errors=True)
        args.work_dir.mkdir(parents=True)
        spark = warm.session(args.work_dir / "warehouse")
        results = {**run_header(), "cycles_per_round": args.cycles, "events_per_cycle": args.events}
        print(f"driver maintenance: {results['machine']}", flush=True)
        project = demo_project(args.work_dir, "bm_compact", "br_compact")
        maintenance_off(project)
        warm.invoke(project, "run-operation", "create_raw_tables")
        waves_needed = args.rounds * args.cycles
        _, waves = build_waves(args.seed, events=args.events * waves_needed, waves=waves_needed, snapshot_rows=50)
        mirrors = [path.stem for path in sorted((project.dir / "models" / "mirrors").glob("*.sql"))]
        tables = ([f"{project.schema}.{name}" for name in mirrors] + [f"{project.schema}.{name}__cdc_tombstones" for name in mirrors]
                  + [f"{project.raw_schema}.raw_events", f"{project.schema}.cdc_merge_offsets", f"{project.schema}.cdc_merge_runs"])
        rounds, files_per_round = [], []
        for number in range(args.rounds):
            for wave in waves[number * args.cycles:(number + 1) * args.cycles]:
                write_wave(wave, project.dir.parent / "inbox_demo")
                warm.invoke(project, "run")
            files = sum(spark.sql(f"select count(*) as n from {table}.files").first().n for table in tables)
            seconds = compact_both_ways(spark, tables, driver_first=number % 2 == 0)
            rounds.append(seconds)
            files_per_round.append(files)
            print(f"round {number + 1}: {len(tables)} tables of {files} data and delete files: in the driver {seconds['driver']:.2f} s, "
                  f"Spark's procedures {seconds['spark']:.2f} s", flush=True)
        spark.sql("create namespace if not exists bm_expiry")
        expiries = []
        for number in range(args.rounds):
            outcome = expire_both_ways(spark, number, args.snapshots, driver_first=number % 2 == 0)
            expiries.append(outcome)
            print(f"expiry round {number + 1}: {args.snapshots + args.snapshots // 3 + 1} snapshots, "
                  f"{outcome['driver']['files_removed']} files deleted: in the driver {outcome['driver']['seconds']:.2f} s, "
                  f"Spark's procedure {outcome['spark']['seconds']:.2f} s", flush=True)
        expiry_driver = warm.median([outcome["driver"]["seconds"] for outcome in expiries])
        expiry_spark = warm.median([outcome["spark"]["seconds"] for outcome in expiries])
        results["expiry"] = {"rounds": expiries, "driver_median_seconds": expiry_driver, "spark_median_seconds": expiry_spark,
                             "speedup": round(expiry_spark / expiry_driver, 1)}
        print(f"expiry medians: in the driver {expiry_driver:.2f} s, Spark's procedure {expiry_spark:.2f} s "
              f"({results['expiry']['speedup']}x)")
        driver = warm.median([round_["driver"] for round_ in rounds])
        spark_seconds = warm.median([round_["spark"] for round_ in rounds])
        results["compaction"] = {"tables": len(tables), "files_per_round": files_per_round, "rounds": rounds,
                                 "driver_median_seconds": driver, "spark_median_seconds": spark_seconds,
                                 "speedup": round(spark_seconds / driver, 2)}
        print(f"compaction medians: in the driver {driver:.2f} s, Spark's procedures {spark_seconds:.2f} s "
              f"({results['compaction']['speedup']}x)")
        args.results.write_text(json.dumps(results, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
