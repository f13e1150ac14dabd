"""Maintenance steps of a small table in the driver, without a Spark job (macros/maintenance/,
docs/maintenance.md): its compaction (jvm/iceberg/cdc_merge/iceberg/SmallTableCompaction.java)
instead of Spark's rewrite_data_files and rewrite_position_delete_files, and its snapshot expiry
(SnapshotExpiry.java) instead of Spark's expire_snapshots."""

from typing import Any, Dict, List, Optional

from dbt.adapters.cdc_spark.iceberg_jvm import jvm_class

COMPACTION_CLASS = "cdc_merge.iceberg.SmallTableCompaction"
EXPIRY_CLASS = "cdc_merge.iceberg.SnapshotExpiry"

# A table of at most this many bytes of data and delete files is compacted in the driver, one thread
# reading and writing; larger ones by Spark's procedures, whose jobs use every core (at 27 MB the
# driver took 1.8-2.3 s against Spark's 2.5-3.2 s on 2 cores).
DRIVER_COMPACTION_MAX_BYTES = 32 * 1024 * 1024

# A table of at most this many live data and delete files has its snapshots expired in the driver,
# which reads the manifests of its snapshots one by one; Spark's procedure reads them in parallel jobs.
DRIVER_EXPIRY_MAX_FILES = 2000


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


def expire(spark: Any, table: str, kept: List[str], max_files: int = DRIVER_EXPIRY_MAX_FILES) -> Optional[Dict[str, int]]:
    """Expires the snapshots of table committed before the oldest of kept (snapshot ids), never the
    newest len(kept) ancestors of the current one: {snapshots_expired, files_removed} (data and delete
    files); None when the helpers are not available or the table has more than max_files live files,
    and nothing was done."""
    java_class = jvm_class(spark, EXPIRY_CLASS)
    if java_class is None or not kept:
        return None
    counts = java_class.expire(spark._jsparkSession, table, ",".join(str(snapshot) for snapshot in kept), int(max_files))
    if counts is None:
        return None
    expired, removed = list(counts)
    return {"snapshots_expired": int(expired), "files_removed": int(removed)}
