"""The offsets and cdc_merge_runs rows of a run written without a Spark job (kept_rows.sql).

The last mirror of an invocation writes every mirror's offset and runs rows in one INSERT per table.
Each INSERT's SELECT reads its table (each mirror's newest offset ordinal, or its previous run) and
the quarantine (the lines quarantined since): Spark scans of tables of a few thousand rows, then a
write job, about 0.3 s per INSERT on the path of the run's last mirror (docs/apply_design.md). Here
the rows the SELECT reads (the mirrors' offsets; their runs of the last day, or all; the quarantine
since the earliest previous run), at most MAX_DRIVER_RECORDS of each, are read in the driver by
Iceberg's generic reader as local relations (jvm/iceberg/.../SmallTableRows.java); the same SELECT
reads them, and its rows are appended as one data file written in the driver (OneCommitBatch.append).
More rows, or a session without the helpers' jar, keep the INSERT.
"""

import itertools
import time
from typing import Any, Dict, List, Optional, Tuple

from dbt.adapters.cdc_spark.iceberg_jvm import jvm_class
from dbt.adapters.cdc_spark.position_deletes import ONE_COMMIT_BATCH_CLASS

SMALL_TABLE_ROWS_CLASS = "cdc_merge.iceberg.SmallTableRows"

# Above this many rows read, a table is read by the SELECT's Spark scan, on all cores.
MAX_DRIVER_RECORDS = 200_000
# A mirror's previous run is looked for among the runs of this last while first (their files only).
RECENT_RUNS_SECONDS = 24 * 3600

_view_numbers = itertools.count()


def offsets_view(spark: Any, offsets: str, targets: List[str]) -> Optional[str]:
    """The target_table and offset_ordinal of the targets' rows of offsets (maintenance keeps
    offsets_history of them per mirror), as a temporary view; None where not read in the driver."""
    return rows_view(spark, offsets, ["target_table", "offset_ordinal"], "target_table", targets)


def runs_views(spark: Any, runs: str, quarantine: Optional[str], targets: List[str]) -> Optional[List[str]]:
    """Views of the rows kept_runs_sql reads: the targets' runs (target_table, started_at), those of
    the last RECENT_RUNS_SECONDS when every target ran since, and the quarantine's landed_at since
    the earliest of the targets' previous runs (when quarantine is given); None where not read so."""
    recent = int((time.time() - RECENT_RUNS_SECONDS) * 1_000_000)
    columns = ["target_table", "started_at"]
    view = (rows_view(spark, runs, columns, "target_table", targets, ("started_at", recent), every_value=True)
            or rows_view(spark, runs, columns, "target_table", targets))
    if view is None or quarantine is None:
        return None if view is None else [view]
    # A projection of a local relation: the driver's rows, no job. A target without a run counts from the start.
    starts: Dict[str, int] = {}
    for row in spark.sql(f"select target_table, unix_micros(started_at) as micros from {view}").collect():
        if row["micros"] is not None:
            starts[row["target_table"]] = max(row["micros"], starts.get(row["target_table"], row["micros"]))
    since = min((starts.get(target) for target in targets), key=lambda micros: -1 if micros is None else micros)
    lines = rows_view(spark, quarantine, ["landed_at"], since=None if since is None else ("landed_at", since))
    if lines is None:
        spark.catalog.dropTempView(view)
        return None
    return [view, lines]


def rows_view(spark: Any, table: str, columns: List[str], filter_column: Optional[str] = None,
              filter_values: Optional[List[str]] = None, since: Optional[Tuple[str, int]] = None,
              every_value: bool = False) -> Optional[str]:
    """A temporary view of the columns of table, read in the driver (SmallTableRows.read): its rows
    whose filter_column is one of filter_values, when given, and whose since[0] is at or after
    since[1] (micros), when given. None when more than MAX_DRIVER_RECORDS rows would be read, when
    every_value and some filter value has no row, when the table is missing, or the jar is."""
    java_class = jvm_class(spark, SMALL_TABLE_ROWS_CLASS)
    if java_class is None:
        return None
    since_column, since_micros = since or (None, 0)
    rows = java_class.read(spark._jsparkSession, table, _strings(spark, columns), filter_column,
                           _strings(spark, filter_values or []), since_column, since_micros, every_value, MAX_DRIVER_RECORDS)
    if rows is None:
        return None
    name = f"cdc_merge_rows_in_driver_{next(_view_numbers)}"
    rows.createOrReplaceTempView(name)
    return name


def append(spark: Any, statement: Dict[str, Any]) -> None:
    """Appends the rows of statement['select'] (statement['rows'] of them, over views of rows_view)
    to statement['append_to'] in one commit, then drops statement['views']."""
    try:
        jvm_class(spark, ONE_COMMIT_BATCH_CLASS).append(
            spark._jsparkSession, statement["append_to"], spark.sql(statement["select"])._jdf, int(statement["rows"])
        )
    finally:
        for view in statement["views"]:
            spark.catalog.dropTempView(view)


def _strings(spark: Any, values: List[str]) -> Any:
    array = spark.sparkContext._gateway.new_array(spark._jvm.java.lang.String, len(values))
    for index, value in enumerate(values):
        array[index] = value
    return array
