"""Iceberg tables of dbt's SparkSession kept loaded in the adapter, so that the checks a run makes
on every mirror (the idle check, the chunk plan, the one-commit path) read their metadata pointer
instead of loading the table again through Spark's analyzer; and what to forget when a statement
drops or replaces one of them (forget_dropped)."""

from __future__ import annotations

import re
import threading
import weakref
from typing import Any, Dict, List, Optional, Tuple

from python_jobs.landing.io.iceberg_tables import iceberg_table as resolved_iceberg_table

# Each SparkContext's application id, asked of the JVM once (two py4j calls each time otherwise).
_application_ids: "weakref.WeakKeyDictionary[Any, str]" = weakref.WeakKeyDictionary()


def application_id(spark: Any) -> str:
    """The Spark application of the session: what keeps the adapter's loaded tables, raw ranges
    and counts apart when a process stops its SparkContext and starts another."""
    context = spark.sparkContext
    known = _application_ids.get(context)
    if known is None:
        known = _application_ids[context] = context.applicationId
    return known


# Tables asked about on every run (the offsets table once per mirror, the raw table and each
# mirror by the idle check and the chunk plan), kept loaded: (Spark application, table) -> Iceberg
# table. Refreshing one reads its metadata pointer only; loading it again through Spark's analyzer
# re-reads and parses its whole metadata (0.02-0.05 s a table).
_loaded: Dict[Tuple[str, str], Any] = {}
_loaded_lock = threading.Lock()


def refreshed_table(spark: Any, table: str) -> Optional[Any]:
    """The Iceberg table behind a name at its newest metadata, or None when it is not an Iceberg
    table. Raises what loading raises (not created yet, dropped)."""
    key = (application_id(spark), table)
    with _loaded_lock:
        iceberg_table = _loaded.get(key)
    if iceberg_table is not None:
        try:
            iceberg_table.refresh()
            # A Hadoop table dropped since refreshes to no metadata instead of failing.
            if iceberg_table.operations().current() is not None:
                return iceberg_table
        except Exception:  # noqa: BLE001 - dropped since, perhaps re-created: load it again by name
            pass
        with _loaded_lock:
            _loaded.pop(key, None)
    iceberg_table = resolved_iceberg_table(spark, table)
    if iceberg_table is not None:
        with _loaded_lock:
            _loaded[key] = iceberg_table
    return iceberg_table


def table_loads(spark: Any, table: str) -> bool:
    """False when the catalog lists the table but cannot load it: a process killed inside a Hadoop
    catalog's CREATE leaves the table's directory with an uncommitted metadata file and no version."""
    try:
        refreshed_table(spark, table)
    except Exception as error:  # noqa: BLE001 - only "not found" means a table without a version
        if "TABLE_OR_VIEW_NOT_FOUND" in str(error):
            return False
        raise
    return True


def column_names(spark: Any, table: str) -> Optional[List[str]]:
    """The table's column names from its Iceberg schema (no statement); None when it cannot be loaded."""
    try:
        iceberg_table = refreshed_table(spark, table)
    except Exception:  # noqa: BLE001 - dropped or not created yet: the caller asks by SQL
        return None
    if iceberg_table is None:
        return None
    columns = iceberg_table.schema().columns()
    return [str(columns.get(index).name()) for index in range(columns.size())]


def snapshot_column_names(spark: Any, table: str, snapshot_id: str) -> List[str]:
    """The column names of the table's schema at one of its snapshots: a time-travel read sees those,
    not columns added since (no statement)."""
    iceberg_table = refreshed_table(spark, table)
    schema_id = iceberg_table.snapshot(int(snapshot_id)).schemaId()
    schema = iceberg_table.schemas().get(schema_id) if schema_id is not None else iceberg_table.schema()
    columns = schema.columns()
    return [str(columns.get(index).name()) for index in range(columns.size())]


def column_types(spark: Any, table: str) -> Optional[List[Tuple[str, str]]]:
    """The table's columns and their Spark types as DESCRIBE spells them, from its Iceberg schema (no
    statement); None when it cannot be loaded."""
    import json

    from py4j.java_gateway import JavaClass
    from pyspark.sql.types import StructType

    try:
        iceberg_table = refreshed_table(spark, table)
    except Exception:  # noqa: BLE001 - dropped or not created yet: the caller asks by SQL
        return None
    if iceberg_table is None:
        return None
    schema_util = JavaClass("org.apache.iceberg.spark.SparkSchemaUtil", spark._sc._gateway._gateway_client)
    spark_type = StructType.fromJson(json.loads(schema_util.convert(iceberg_table.schema()).json()))
    return [(field.name, field.dataType.simpleString()) for field in spark_type.fields]


def current_snapshot_or_none(spark: Any, table: str) -> Optional[str]:
    """The table's current snapshot id, its metadata refreshed (a file read, no Spark analysis), or
    None when the table cannot be loaded (not created yet)."""
    try:
        iceberg_table = refreshed_table(spark, table)
    except Exception:  # dropped or not created yet: the query that follows says what is wrong, if anything is
        return None
    snapshot = iceberg_table.currentSnapshot() if iceberg_table is not None else None
    return str(snapshot.snapshotId()) if snapshot is not None else None


def current_snapshot(spark: Any, table: str) -> Optional[str]:
    """The table's current snapshot id (its main branch), as the refs metadata table gives it."""
    iceberg_table = refreshed_table(spark, table)
    snapshot = iceberg_table.currentSnapshot() if iceberg_table is not None else None
    return str(snapshot.snapshotId()) if snapshot is not None else None


# The table a statement drops or replaces, after any leading comments (dbt's query comment).
_DROPS_TABLE = re.compile(
    r"^\s*(?:/\*.*?\*/\s*)*(?:drop\s+table(?:\s+if\s+exists)?|create\s+or\s+replace\s+table|replace\s+table)\s+([`\w.]+)",
    re.IGNORECASE | re.DOTALL,
)


def forget_dropped(sql: str) -> None:
    """Forgets the kept table that sql drops or replaces, so that the next ask loads it by name. A
    Hadoop table created again under its name numbers its metadata files from v1 again, and
    refreshing the old object keeps its old metadata while the version numbers are the same: it
    would give the dropped table's snapshots."""
    match = _DROPS_TABLE.match(sql)
    if match is None:
        return
    dropped = match.group(1).replace("`", "").lower()
    with _loaded_lock:
        for key in [key for key in _loaded if key[1].replace("`", "").lower() == dropped]:
            _loaded.pop(key)
