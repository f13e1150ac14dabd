"""Deleting a mirror's rows by the positions the classification found them at.

The cdc_merge materialization reads the mirror's `_file` and `_pos` when it classifies a batch;
the rows it replaces are then deleted here with Iceberg position delete files, written and committed
by jvm/iceberg/cdc_merge/iceberg/PositionDeletes.java, instead of a MERGE that joins the batch with
the whole mirror again (BENCHMARKS.md, "Applied since (7)").
"""

from typing import Any, Optional

from dbt.adapters.cdc_spark.iceberg_jvm import jvm_class

POSITION_DELETES_CLASS = "cdc_merge.iceberg.PositionDeletes"


def position_deletes_class(spark: Any) -> Optional[Any]:
    """The JVM class; None when its jar is missing or turned off (iceberg_jvm.jar_path)."""
    return jvm_class(spark, POSITION_DELETES_CLASS)


def unsupported_reason(spark: Any, table: str) -> Optional[str]:
    """Why the rows of table cannot be deleted by position, or None when they can."""
    java_class = position_deletes_class(spark)
    if java_class is None:
        return f"{POSITION_DELETES_CLASS} is not available"
    return java_class.unsupportedReason(spark._jsparkSession, table)


def delete_rows(spark: Any, table: str, branch: str, positions_sql: str, expected_positions: int) -> int:
    """Deletes the rows at the positions positions_sql gives (columns file_hash: xxhash64 of the
    data file's path, pos) from branch of table, in one commit; the number of delete files added
    (one per data file with deleted rows)."""
    from pyspark.sql import functions as F

    java_class = position_deletes_class(spark)
    # One row per data file reaches the driver: a batch's positions are bounded by max_events_per_chunk.
    positions_by_file = (
        spark.sql(positions_sql)
        .groupBy("file_hash")
        .agg(F.sort_array(F.collect_list(F.col("pos").cast("long"))).alias("positions"))
    )
    return java_class.commit(spark._jsparkSession, table, branch, positions_by_file._jdf, expected_positions)


ONE_COMMIT_BATCH_CLASS = "cdc_merge.iceberg.OneCommitBatch"


def commit_one_batch(spark: Any, table: str, classified_at: str, positions_sql: str, expected_positions: int,
                     rows_sql: str, expected_rows: int, before_commit: Any) -> int:
    """A small batch in one commit on main (jvm/iceberg/.../OneCommitBatch.java): the rows at the
    positions positions_sql gives deleted, the rows of rows_sql added, validated against the snapshot
    classified_at the positions were read at. before_commit() runs once the files are written (a
    crash point); the number of delete files added."""
    from pyspark.sql import functions as F

    java_class = jvm_class(spark, ONE_COMMIT_BATCH_CLASS)
    # Grouped by file in the driver: the batch is small, and kept there (create_checkpoint_view).
    positions = spark.sql(positions_sql)
    # The key stored at each position lets the table's key index follow the commit (KeyIndex.java).
    keys = ["_cdc_key"] if "_cdc_key" in positions.columns else []
    positions = positions.select("file_hash", F.col("pos").cast("long").alias("pos"), *keys)
    batch = java_class.write(spark._jsparkSession, table, int(classified_at), positions._jdf, int(expected_positions),
                             spark.sql(rows_sql)._jdf, int(expected_rows))
    try:
        before_commit()
    except BaseException:
        batch.abort()
        raise
    batch.commit()
    return batch.deleteFiles()
