"""How many events each raw snapshot added per source table, for a chunked mirror's plan
(python_jobs/apply/chunk_plan.py own_events).

The counts come from the manifests the snapshots added, read in the JVM by
jvm/iceberg/cdc_merge/iceberg/SnapshotEvents.java (the raw table is partitioned by table_name), and
are kept per snapshot: a snapshot id names content that never changes, so every mirror of the raw
table and every later run reuses them."""

import threading
from typing import Any, Dict, List, Sequence, Tuple

from dbt.adapters.cdc_spark import loaded_tables
from dbt.adapters.cdc_spark.iceberg_jvm import jvm_class

SNAPSHOT_EVENTS_CLASS = "cdc_merge.iceberg.SnapshotEvents"
PARTITION_COLUMN = "table_name"
# Snapshots kept; a landing cycle adds one or a few, so this covers days of a busy raw table.
MAX_KEPT = 100_000

_kept: Dict[Tuple[str, str, str], Dict[str, int]] = {}
_kept_lock = threading.Lock()


def added_by_table(spark: Any, table: str, snapshot_ids: Sequence[str]) -> Dict[str, Dict[str, int]]:
    """{snapshot_id: {table_name: records added}} for the snapshots of snapshot_ids that the
    helper could read; the others are left out (the plan then counts all their records)."""
    application = loaded_tables.application_id(spark)
    known: Dict[str, Dict[str, int]] = {}
    with _kept_lock:
        for snapshot_id in snapshot_ids:
            counts = _kept.get((application, table, snapshot_id))
            if counts is not None:
                known[snapshot_id] = counts
    missing = [snapshot_id for snapshot_id in snapshot_ids if snapshot_id not in known]
    if not missing:
        return known
    java_class = jvm_class(spark, SNAPSHOT_EVENTS_CLASS)
    iceberg_table = loaded_tables.refreshed_table(spark, table) if java_class is not None else None
    if iceberg_table is None:
        return known
    read = parse_lines(java_class.addedRecordsByValue(iceberg_table, ",".join(missing), PARTITION_COLUMN), missing)
    with _kept_lock:
        if len(_kept) + len(read) > MAX_KEPT:
            _kept.clear()
        for snapshot_id, counts in read.items():
            _kept[(application, table, snapshot_id)] = counts
    return {**known, **read}


def parse_lines(text: str, snapshot_ids: List[str]) -> Dict[str, Dict[str, int]]:
    """The helper's lines (snapshot_id TAB value TAB records) by snapshot. A snapshot that added no
    data file has no line and is left out, as its added records are 0 anyway."""
    asked = set(snapshot_ids)
    counts: Dict[str, Dict[str, int]] = {}
    for line in text.split("\n"):
        snapshot_id, _, rest = line.partition("\t")
        value, _, records = rest.rpartition("\t")
        if snapshot_id in asked and records.isdigit():
            counts.setdefault(snapshot_id, {})[value] = int(records)
    return counts
