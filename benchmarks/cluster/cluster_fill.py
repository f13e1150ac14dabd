"""Bulk data of benchmarks/cluster/cluster.py, written by a Spark session whose default catalog is the
target's: in-process for the embedded target, and submitted to the cluster with spark-submit for
the cluster target (its JDBC catalog is named `lake` there, as in the Thrift server: Iceberg's JDBC
catalog keeps each catalog name's tables apart).

    spark-submit ... benchmarks/cluster/cluster_fill.py fill <target_rows> <raw> <mirror> <offsets>
    spark-submit ... benchmarks/cluster/cluster_fill.py batch <target_rows> <raw> <events>

with python_jobs and benchmarks zipped in --py-files, as cluster.py submits it.
"""

from __future__ import annotations

import sys

from benchmarks.common import datagen


def fill(spark, target_rows: int, raw: str, mirror: str, offsets: str) -> None:
    """As benchmarks/apply/run.py's setup: the snapshot in the raw log, the mirror it gives, its offset at
    that snapshot."""
    datagen.snapshot_events(spark, target_rows).writeTo(raw).append()
    s0 = spark.sql(f"select snapshot_id from {raw}.refs where name = 'main'").first()[0]
    datagen.mirror_rows(spark, target_rows).writeTo(mirror).append()
    # A tombstone for a key that never exists, so the tombstones table has a snapshot to reset to.
    spark.sql(f"insert into {mirror}__cdc_tombstones values ('[\"-1\"]', '0', timestamp'2000-01-01 00:00:00')")
    spark.sql(f"""insert into {offsets} select '{mirror}', 1, '{raw}', '{datagen.SOURCE_TABLE}', '{s0}',
        {target_rows}, {target_rows}, 0, 0, 0, timestamp'2026-01-01 00:00:00', current_timestamp(), 'bench-setup'""")


def append_batch(spark, target_rows: int, raw: str, events: int) -> None:
    datagen.batch_events(spark, target_rows, events, 1).writeTo(raw).append()


def main(argv: list[str] | None = None) -> int:
    """fill or batch (the docstring's command lines) in the session spark-submit gives."""
    from pyspark.sql import SparkSession

    command, rows, *rest = sys.argv[1:] if argv is None else argv
    session = SparkSession.builder.appName("cdc_merge_bench_fill").getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    if command == "fill":
        fill(session, int(rows), *rest)
    else:
        append_batch(session, int(rows), rest[0], int(rest[1]))
    session.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
