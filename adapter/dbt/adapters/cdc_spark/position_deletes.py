"""Deleting a mirror's rows by the positions the classification found them at.

The cdc_merge materialization reads the mirror's `_file` and `_pos` when it classifies a batch;
the rows it replaces are then deleted here with Iceberg position delete files, written and committed
by jvm/iceberg/cdc_merge/iceberg/PositionDeletes.java, instead of a MERGE that joins the batch with
the whole mirror again (BENCHMARKS.md, "Applied since (7)").
"""

import os
from pathlib import Path
from typing import Any, Optional

from dbt.adapters.events.logging import AdapterLogger

logger = AdapterLogger("cdc_spark")

POSITION_DELETES_CLASS = "cdc_merge.iceberg.PositionDeletes"
# Built by `make jvm` against the Iceberg runtime jar; $CDC_MERGE_ICEBERG_JVM_JAR overrides it and
# an empty value turns deletes by position off (the apply then deletes with a MERGE).
JAR = Path(__file__).parent / "jars" / "cdc-merge-iceberg.jar"


def jar_path() -> str:
    return os.environ.get("CDC_MERGE_ICEBERG_JVM_JAR", str(JAR))


def position_deletes_class(spark: Any) -> Optional[Any]:
    """The JVM class, its jar added to the session first; None when the jar is missing or turned off."""
    from py4j.java_gateway import JavaClass

    jar = jar_path()
    if not jar:
        return None
    if os.path.isfile(jar):
        spark.sql(f"add jar '{jar}'")
    java_class = spark._jvm
    for part in POSITION_DELETES_CLASS.split("."):
        java_class = getattr(java_class, part)
    if not isinstance(java_class, JavaClass):
        logger.warning(f"{jar} not found (build it with 'make jvm'): cdc_merge deletes replaced rows with a MERGE")
        return None
    return java_class


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
