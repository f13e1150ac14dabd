"""A small table compacted in the driver (jvm/iceberg/cdc_merge/iceberg/SmallTableCompaction.java)
instead of by Spark's rewrite_data_files and rewrite_position_delete_files
(macros/maintenance/compaction.sql, docs/maintenance.md)."""

from typing import Any, Dict, Optional

from dbt.adapters.cdc_spark.iceberg_jvm import jvm_class

COMPACTION_CLASS = "cdc_merge.iceberg.SmallTableCompaction"

# A table of at most this many bytes of data and delete files is compacted in the driver, one thread
# reading and writing; larger ones by Spark's procedures, whose jobs use every core.
DRIVER_COMPACTION_MAX_BYTES = 32 * 1024 * 1024


def compact(spark: Any, table: str, max_bytes: int = DRIVER_COMPACTION_MAX_BYTES) -> Optional[Dict[str, int]]:
    """Compacts table in one commit: {files_added, files_removed, delete_files_left}; None when the
    helpers are not available or the table is not one the driver compacts (larger than max_bytes,
    or not as the product writes its tables), and nothing was done."""
    java_class = jvm_class(spark, COMPACTION_CLASS)
    if java_class is None:
        return None
    compaction = java_class.write(spark._jsparkSession, table, int(max_bytes))
    if compaction is None:
        return None
    compaction.commit()
    added, removed, left = list(compaction.counts())
    return {"files_added": int(added), "files_removed": int(removed), "delete_files_left": int(left)}
