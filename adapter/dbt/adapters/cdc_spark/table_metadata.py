"""What the apply reads of an Iceberg table's metadata on every run of every mirror, in the JVM and
without a statement: the idle check's and maintenance's facts of a mirror (mirror_metadata), the
raw table's snapshot log (snapshot_log), a column's upper bound (column_upper_bound). Read in one
call each through the helper jar (jvm/iceberg/cdc_merge/iceberg/MetadataSummary.java); object by
object through py4j where the jar is turned off (several round trips per snapshot, 0.05-0.1 s a
mirror)."""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any, Dict, Optional, Tuple

from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.cdc_spark.iceberg_jvm import jvm_class
from dbt.adapters.cdc_spark.loaded_tables import refreshed_table

logger = AdapterLogger("cdc_spark")

METADATA_SUMMARY_CLASS = "cdc_merge.iceberg.MetadataSummary"
# The mirror table property that records the model SQL the mirror's columns were checked against.
MODEL_CHECKSUM_PROPERTY = "cdc-merge.model-sql-md5"

# 3/4 of Iceberg's default target file size (write.target-file-size-bytes, 512 MB).
SMALL_DATA_FILE_BYTES = 402653184


def mirror_metadata(spark: Any, table: str) -> Optional[Dict[str, Any]]:
    """What the idle check needs of a mirror, read from its Iceberg metadata in the JVM (no Spark
    job): the numbers of table_maintenance_state (macros/maintenance/table_state.sql) and the
    model checksum property; None when the table cannot be read so."""
    try:
        iceberg_table = refreshed_table(spark, table)
    except Exception as error:  # not an Iceberg table, or not loadable: the caller takes the full path
        logger.debug(f"{table}: no Iceberg metadata for the idle check: {str(error).splitlines()[0][:300]}")
        return None
    if iceberg_table is None:
        return None
    summary = jvm_class(spark, METADATA_SUMMARY_CLASS)
    state = _current_state(iceberg_table, summary)
    if state is None or state.get("total-data-files") is None or state.get("total-delete-files") is None:
        return None
    now_ms = dt.datetime.now(dt.timezone.utc).timestamp() * 1000
    return {
        "small_data_files": _small_data_files_at(iceberg_table, state["current"], summary),
        "data_files": int(state["total-data-files"]),
        "delete_files": int(state["total-delete-files"]),
        "older_snapshot_ages_seconds": [max(0.0, now_ms - millis) / 1000 for millis in state["older"]],
        "model_checksum": state["property"],
    }


def _current_state(iceberg_table: Any, summary: Optional[Any]) -> Optional[Dict[str, Any]]:
    """{'current': snapshot id, 'total-data-files', 'total-delete-files' (None when the summary
    lacks them), 'older': other snapshots' commit times in ms, 'property': the model checksum};
    None when the table has no snapshot."""
    if summary is not None:
        state: Dict[str, Any] = {"total-data-files": None, "total-delete-files": None, "older": [], "property": None}
        for line in summary.currentState(iceberg_table, MODEL_CHECKSUM_PROPERTY).splitlines():
            name, _, value = line.partition("\t")
            if name == "older":
                state["older"].append(int(value))
            else:
                state[name] = int(value) if name == "current" else value
        return state if "current" in state else None
    current = iceberg_table.currentSnapshot()
    if current is None:
        return None
    totals = current.summary()
    return {
        "current": current.snapshotId(),
        "total-data-files": totals.get("total-data-files"),
        "total-delete-files": totals.get("total-delete-files"),
        "older": [snapshot.timestampMillis() for snapshot in iceberg_table.snapshots() if snapshot.snapshotId() != current.snapshotId()],
        "property": iceberg_table.properties().get(MODEL_CHECKSUM_PROPERTY),
    }


_small_files_at: Dict[Tuple[str, int], int] = {}
_small_files_lock = threading.Lock()


def _small_data_files_at(iceberg_table: Any, snapshot_id: int, summary: Optional[Any]) -> int:
    """_small_data_files, kept per (table, snapshot): a snapshot's files never change, and listing
    them reads the snapshot's manifests, on every idle check and every maintenance decision."""
    key = (str(iceberg_table.location()), int(snapshot_id))
    with _small_files_lock:
        if key in _small_files_at:
            return _small_files_at[key]
    small = int(summary.smallDataFiles(iceberg_table, SMALL_DATA_FILE_BYTES)) if summary is not None else _small_data_files(iceberg_table)
    with _small_files_lock:
        if len(_small_files_at) > 10_000:
            _small_files_at.clear()
        _small_files_at[key] = small
    return small


def _small_data_files(iceberg_table: Any) -> int:
    """Data files under 3/4 of Iceberg's 512 MB target size: the files compaction would rewrite,
    as table_maintenance_state counts them (macros/maintenance/table_state.sql). Three JVM calls a file."""
    tasks = iceberg_table.newScan().planFiles()
    try:
        files = tasks.iterator()
        small = 0
        while files.hasNext():
            if files.next().file().fileSizeInBytes() < SMALL_DATA_FILE_BYTES:
                small += 1
        return small
    finally:
        tasks.close()


# column_upper_bound's answer when the manifests cannot give a bound.
UNKNOWN_BOUND = "unknown"


def column_upper_bound(spark: Any, table: str, column: str) -> Optional[str]:
    """A value at or above every value of string column `column` in the table, from its manifests'
    column bounds (MetadataSummary.columnUpperBound, no data file read); None when the table holds
    no data file; UNKNOWN_BOUND where a file keeps no bound for the column, the table is not an
    Iceberg table this session loads (or not created yet), or the helper jar is off."""
    try:
        iceberg_table = refreshed_table(spark, table)
    except Exception:  # noqa: BLE001 - not created yet, or not loadable: the caller asks by SQL
        return UNKNOWN_BOUND
    summary = jvm_class(spark, METADATA_SUMMARY_CLASS)
    if iceberg_table is None or summary is None:
        return UNKNOWN_BOUND
    answer = summary.columnUpperBound(iceberg_table, column)
    if answer is None:
        return UNKNOWN_BOUND
    kind, _, value = str(answer).partition("\t")
    return value if kind == "upper" else None


def snapshot_log(spark: Any, table: str) -> Optional[Dict[str, Any]]:
    """The table's current snapshot and every snapshot it keeps (id, parent, operation, records
    added, commit time in ms), as the refs and snapshots metadata tables give them (raw_log.sql), from Iceberg's
    metadata in the JVM; None when the table is not an Iceberg table this session loads."""
    iceberg_table = refreshed_table(spark, table)
    if iceberg_table is None:
        return None
    summary = jvm_class(spark, METADATA_SUMMARY_CLASS)
    if summary is not None:
        return parse_snapshot_log(summary.snapshotLog(iceberg_table))
    current = iceberg_table.currentSnapshot()
    snapshots = []
    for snapshot in iceberg_table.snapshots():
        parent = snapshot.parentId()
        snapshots.append({
            "snapshot_id": str(snapshot.snapshotId()),
            "parent_id": str(parent) if parent is not None else None,
            "operation": snapshot.operation(),
            "added_records": int(snapshot.summary().get("added-records") or 0),
            "committed_ms": int(snapshot.timestampMillis()),
        })
    return {"current": str(current.snapshotId()) if current is not None else None, "snapshots": snapshots}


def parse_snapshot_log(text: str) -> Dict[str, Any]:
    """MetadataSummary.snapshotLog's lines as snapshot_log returns them."""
    log: Dict[str, Any] = {"current": None, "snapshots": []}
    for line in text.splitlines():
        kind, _, rest = line.partition("\t")
        if kind == "current":
            log["current"] = rest or None
        elif kind == "snapshot":
            snapshot_id, parent_id, operation, added, committed = rest.split("\t")
            log["snapshots"].append({"snapshot_id": snapshot_id, "parent_id": parent_id or None,
                                     "operation": operation, "added_records": int(added), "committed_ms": int(committed)})
    return log


def snapshot_history(log: Dict[str, Any], keep_seconds: float, now_ms: int) -> Dict[str, Any]:
    """A snapshot_log as macros/maintenance/expiry.sql reads snapshot_history_sql and the current
    snapshot: {'current', 'snapshots': [{snapshot_id, parent_id, recent}]}, recent = 1 for a snapshot
    committed in the keep_seconds before now_ms."""
    since = now_ms - keep_seconds * 1000
    return {"current": log["current"], "snapshots": [
        {"snapshot_id": snapshot["snapshot_id"], "parent_id": snapshot["parent_id"],
         "recent": 1 if snapshot["committed_ms"] >= since else 0}
        for snapshot in log["snapshots"]]}
