"""The stored rows of a small batch's keys, read in the driver instead of by a Spark query.

A small batch (one commit, its keys listed: raw_ranges.key_hashes_in_driver) is classified against
the mirror and its tombstones by a query that scans both and joins them with the batch: a Spark job
in every mirror's run. Where the tables are small enough for one thread, Iceberg's generic reader
answers in the driver (jvm/iceberg/cdc_merge/iceberg/StoredKeys.java), the classification reads the
answer as a constant (classify.sql, stored_rows), and Spark's optimizer computes the classified batch
without a job (BENCHMARKS.md, "Levers tried").
"""

from typing import Any, List, Optional, Tuple

from dbt.adapters.cdc_spark import raw_ranges
from dbt.adapters.cdc_spark.iceberg_jvm import jvm_class
from python_jobs.apply import key_index

STORED_KEYS_CLASS = "cdc_merge.iceberg.StoredKeys"
KEY_INDEX_CLASS = "cdc_merge.iceberg.KeyIndex"

# Above this many rows a table's stored keys are read by Spark, on all cores, not by one driver thread.
MAX_DRIVER_RECORDS = 1_000_000


def stored_rows_hex(spark: Any, keys: Any, lookups: List[Tuple[str, Optional[str], bool]]) -> Optional[List[str]]:
    """For each (table, snapshot_id, with_positions) of lookups, the rows of table at snapshot_id whose
    _cdc_key is one of keys (a one-column frame), as hex-encoded UTF-8 JSON from key to {_cdc_seq,
    and with_positions _cdc_stored_file_hash, _cdc_stored_pos}; a table without a snapshot holds
    none. None, for all, when keys are not a local relation of at most raw_ranges.MAX_LISTED_KEYS
    rows, a table holds more than MAX_DRIVER_RECORDS rows (and is not indexed), or the helpers' jar
    is missing. Where this process keeps key indexes (key_index.py), answered from the table's."""
    if not raw_ranges.rows_in_driver(keys, raw_ranges.MAX_LISTED_KEYS):
        return None
    java_class = jvm_class(spark, STORED_KEYS_CLASS)
    if java_class is None:
        return None
    index_max_keys = key_index.max_keys()
    found = []
    for table, snapshot_id, with_positions in lookups:
        if snapshot_id is None:
            rows = "{}"
        else:
            rows = java_class.lookup(spark._jsparkSession, table, int(snapshot_id), keys._jdf, "_cdc_key", "_cdc_seq",
                                     bool(with_positions), MAX_DRIVER_RECORDS, index_max_keys)
        if rows is None:
            return None
        # Hex, so that no key's quotes or backslashes meet Spark's string literal rules (classify.sql decodes it).
        found.append(rows.encode("utf-8").hex())
    return found


def indexed_rows_views(spark: Any, keys: Any, lookups: List[Tuple[str, Optional[str], str]]) -> Optional[List[str]]:
    """For each (table, snapshot_id, view_name) of lookups, the rows of table at snapshot_id whose
    _cdc_key is one of keys, from the key index this process keeps (KeyIndex.java), as a temporary
    view of _cdc_key, _cdc_seq, _cdc_stored_file_hash and _cdc_stored_pos: a batch of more keys than
    stored_rows_hex lists. None, for all (no view made), where this process keeps no index, a table
    is not indexed (more rows than key_index.max_keys()) or the helpers' jar is missing."""
    index_max_keys = key_index.max_keys()
    java_class = jvm_class(spark, STORED_KEYS_CLASS) if index_max_keys else None
    if java_class is None:
        return None
    keys = raw_ranges.in_driver(keys)  # computed once for all lookups
    relations = []
    for table, snapshot_id, view_name in lookups:
        if snapshot_id is None:
            relation = java_class.noRows(spark._jsparkSession)
        else:
            relation = java_class.indexedRelation(spark._jsparkSession, table, int(snapshot_id), keys._jdf, "_cdc_key", "_cdc_seq",
                                                  index_max_keys)
        if relation is None:
            return None
        relations.append((relation, view_name))
    for relation, view_name in relations:
        relation.createOrReplaceTempView(view_name)
    return [view_name for _, view_name in relations]


def kept_index_keys(spark: Any, tables: List[str]) -> Optional[int]:
    """How many keys this process keeps in the key indexes of tables (0: none kept); None when the
    helpers' jar is missing."""
    java_class = jvm_class(spark, KEY_INDEX_CLASS)
    if java_class is None:
        return None
    return sum(max(0, int(java_class.keptKeys(table))) for table in tables)
