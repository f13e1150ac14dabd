"""Deleting a mirror's rows by the positions the classification found them at.

The cdc_merge materialization reads the mirror's `_file` and `_pos` when it classifies a batch;
the rows it replaces are then deleted here with Iceberg position delete files, written by Spark and
committed by jvm/iceberg/cdc_merge/iceberg/PositionDeletes.java, instead of a MERGE that joins the
batch with the whole mirror again (BENCHMARKS.md, "Applied since (7)").
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
# Iceberg's reserved field ids of a position delete file's columns (MetadataColumns.DELETE_FILE_*).
FILE_PATH_FIELD_ID = 2147483546
POS_FIELD_ID = 2147483545


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
    """Deletes the rows at the positions positions_sql gives (columns file_path, pos) from branch of
    table, in one commit; the number of delete files added (one per data file with deleted rows)."""
    from pyspark.sql import functions as F

    java_class = position_deletes_class(spark)
    directory = java_class.newDirectory(spark._jsparkSession, table)
    positions = spark.sql(positions_sql)
    # Not null, so Parquet declares the columns required, as Iceberg's delete schema does; a null
    # would become a path or position that PositionDeletes.commit refuses.
    delete_file_rows = positions.select(
        F.coalesce(F.col("file_path"), F.lit("")).alias("file_path", metadata={"parquet.field.id": FILE_PATH_FIELD_ID}),
        F.coalesce(F.col("pos").cast("long"), F.lit(-1).cast("long")).alias("pos", metadata={"parquet.field.id": POS_FIELD_ID}),
        F.xxhash64("file_path").alias("data_file"),
    )
    previous_field_ids = spark.conf.get("spark.sql.parquet.fieldId.write.enabled", None)
    spark.conf.set("spark.sql.parquet.fieldId.write.enabled", "true")
    try:
        # One output file per data file (file-scoped deletes: a reader of one data file reads only its own).
        (
            delete_file_rows.repartition("data_file")
            .sortWithinPartitions("data_file", "file_path", "pos")
            .write.option("compression", "zstd")
            .option("mapreduce.fileoutputcommitter.marksuccessfuljobs", "false")
            .partitionBy("data_file")
            .parquet(directory)
        )
    except Exception:
        _remove(spark, directory)
        raise
    finally:
        if previous_field_ids is None:
            spark.conf.unset("spark.sql.parquet.fieldId.write.enabled")
        else:
            spark.conf.set("spark.sql.parquet.fieldId.write.enabled", previous_field_ids)
    # Removes the files itself when it refuses them or the commit fails.
    return java_class.commit(spark._jsparkSession, table, branch, directory, expected_positions)


def _remove(spark: Any, directory: str) -> None:
    """Best effort: files that no commit names are not part of the table either way."""
    try:
        path = spark._jvm.org.apache.hadoop.fs.Path(directory)
        path.getFileSystem(spark._jsc.hadoopConfiguration()).delete(path, True)
    except Exception as error:  # the original error matters more
        logger.warning(f"could not remove {directory}: {error}")
