"""The offsets and cdc_merge_runs rows of a run written without a Spark job (kept_rows.sql).

The last mirror of an invocation writes every mirror's offset and runs rows in one INSERT per table.
Each INSERT's SELECT reads its table (each mirror's newest offset ordinal, or its previous run) and
the quarantine (the lines quarantined since): Spark scans of small tables, joins and aggregates, then
a write job, about 0.3 s per INSERT on the path of the run's last mirror (docs/apply_design.md).
Here what those SELECTs compute from the tables (each row's offset ordinal, each run's quarantined
lines) is computed from the rows they read, read in the driver by Iceberg's generic reader
(jvm/iceberg/.../SmallTableRows.java: the mirrors' offsets; their runs of the last day, or all; the
quarantine since the earliest previous run), at most MAX_DRIVER_RECORDS of each. The SELECT is then
a projection of constants, which Spark computes without a job, and its rows are appended as one data
file written in the driver (OneCommitBatch.append). More rows, or a session without the helpers'
jar, keep the INSERT.

In a long-lived process the offsets and runs rows are not read at all while the tables are at the
snapshot of the process's own last append (followed_rows.py): what they held then, with the rows
appended, is what they hold; nor is the quarantine while it is at the snapshot it was read at.
"""

import bisect
import time
from typing import Any, Dict, List, Optional, Tuple

from pyspark.sql import DataFrame

from dbt.adapters.cdc_core import followed_rows
from dbt.adapters.cdc_core.run_state import STATE
from dbt.adapters.cdc_spark import loaded_tables
from dbt.adapters.cdc_spark.iceberg_jvm import jvm_class
from dbt.adapters.cdc_spark.position_deletes import ONE_COMMIT_BATCH_CLASS

SMALL_TABLE_ROWS_CLASS = "cdc_merge.iceberg.SmallTableRows"

# Above this many rows read, a table is read by the SELECT's Spark scan, on all cores.
MAX_DRIVER_RECORDS = 200_000
# A mirror's previous run is looked for among the runs of this last while first (their files only).
RECENT_RUNS_SECONDS = 24 * 3600


def offset_ordinals(spark: Any, offsets: str, targets: List[str]) -> Optional[List[int]]:
    """The offset_ordinal of each kept row (their target_table in order): its mirror's newest in
    offsets plus its place among that mirror's kept rows, as kept_offsets_sql computes it; None
    where offsets is not read in the driver, or the rows cannot be appended there."""
    if not appends_in_driver(spark):
        return None
    known = STATE.offsets.at(offsets, loaded_tables.current_snapshot_or_none(spark, offsets))
    newest = {target: row["offset_ordinal"] for target, row in (known or {}).items()}
    if known is None:
        stored = read_rows(spark, offsets, ["target_table", "offset_ordinal"], ["target_table", "offset_ordinal"],
                           "target_table", sorted(set(targets)))
        if stored is None:
            return None
        for target, ordinal in stored:
            if ordinal is not None:
                newest[target] = max(ordinal, newest.get(target, ordinal))
    ordinals = []
    for target in targets:
        newest[target] = newest.get(target, 0) + 1
        ordinals.append(newest[target])
    return ordinals


def lines_quarantined(spark: Any, runs: str, quarantine: Optional[str], targets: List[str]) -> Optional[List[Optional[int]]]:
    """The lines_quarantined of each kept runs row (their target_table in order): the quarantine's
    lines landed after its mirror's previous run started, as kept_runs_sql counts them (null without
    a quarantine); None where runs or quarantine is not read in the driver, or the rows cannot be
    appended there."""
    if not appends_in_driver(spark):
        return None
    if quarantine is None:
        return [None] * len(targets)
    wanted = sorted(set(targets))
    previous = previous_starts(spark, runs, wanted)
    if previous is None:
        return None
    moments = landed_since(spark, quarantine, min(previous.values()))
    if moments is None:
        return None
    after = {target: len(moments) - bisect.bisect_right(moments, start) for target, start in previous.items()}
    return [after[target] for target in targets]


def previous_starts(spark: Any, runs: str, wanted: List[str]) -> Optional[Dict[str, int]]:
    """Each wanted mirror's latest run start in runs (micros, 0 without one): as followed since the
    process's last append (followed_rows.py), or read; None where runs is not read in the driver."""
    snapshot = loaded_tables.current_snapshot_or_none(spark, runs)
    known = STATE.run_starts.at(runs, snapshot) or {}
    if any(target not in known for target in wanted):
        recent = int((time.time() - RECENT_RUNS_SECONDS) * 1_000_000)
        columns, micros = ["target_table", "started_at"], ["target_table", "unix_micros(started_at)"]
        started = (read_rows(spark, runs, columns, micros, "target_table", wanted, ("started_at", recent), every_value=True)
                   or read_rows(spark, runs, columns, micros, "target_table", wanted))
        if started is None:
            return None
        known.update({target: None for target in wanted})
        for target, start in started:
            known[target] = followed_rows.latest_start(known[target], start)
        STATE.run_starts.store(runs, snapshot, known)
    # No previous run: every line counts (kept_runs_sql's previous_start of 1970).
    return {target: known[target] or 0 for target in wanted}


def landed_since(spark: Any, quarantine: str, since: int) -> Optional[List[int]]:
    """The landed_at (micros, in order) of the quarantine's lines landed at or after since: as read
    at the quarantine's current snapshot before, from at most that far back, or read now; None where
    the quarantine is not read in the driver. Lines are quarantined rarely, so mostly the same snapshot."""
    snapshot = loaded_tables.current_snapshot_or_none(spark, quarantine)
    known = STATE.quarantined.at(quarantine, snapshot)
    if known is None or known["since"] > since:
        landed = read_rows(spark, quarantine, ["landed_at"], ["unix_micros(landed_at)"],
                           since=("landed_at", since) if since else None)
        if landed is None:
            return None
        known = {"since": since, "moments": sorted(moment for (moment,) in landed if moment is not None)}
        STATE.quarantined.store(quarantine, snapshot, known)
    return known["moments"][bisect.bisect_left(known["moments"], since):]


def read_rows(spark: Any, table: str, columns: List[str], select: List[str], filter_column: Optional[str] = None,
              filter_values: Optional[List[str]] = None, since: Optional[Tuple[str, int]] = None,
              every_value: bool = False) -> Optional[List[tuple]]:
    """The select expressions over the columns of table, read in the driver (SmallTableRows.read): its
    rows whose filter_column is one of filter_values, when given, and whose since[0] is at or after
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
    # A projection of a local relation: collected from the driver's memory, no job.
    return [tuple(row) for row in DataFrame(rows, spark).selectExpr(*select).collect()]


def appends_in_driver(spark: Any) -> bool:
    """Whether rows are appended in the driver: only with the helpers' jar (OneCommitBatch.append)."""
    return jvm_class(spark, ONE_COMMIT_BATCH_CLASS) is not None


def append(spark: Any, statement: Dict[str, Any]) -> None:
    """Appends the rows of statement['select'] (statement['rows'] of them) to statement['append_to']
    in one commit; statement['follow'] ('offsets' or 'runs') says what of them followed_rows keeps."""
    rows = spark.sql(statement["select"])
    table, follow = statement["append_to"], statement.get("follow")
    commit = jvm_class(spark, ONE_COMMIT_BATCH_CLASS).append(spark._jsparkSession, table, rows._jdf, int(statement["rows"]))
    commit = (str(commit[0]), str(commit[1])) if commit is not None else None
    if follow == "offsets":
        appended = rows.selectExpr("target_table", "cast(offset_snapshot as string)", "offset_ordinal").collect()
        STATE.offsets.appended(table, commit, [(target, {"offset_snapshot": snapshot, "offset_ordinal": int(ordinal)})
                                         for target, snapshot, ordinal in appended], followed_rows.newest_offset)
    elif follow == "runs":
        appended = rows.selectExpr("target_table", "unix_micros(started_at)").collect()
        # Only the mirrors whose runs were read are known (previous_starts).
        STATE.run_starts.appended(table, commit, [(target, start) for target, start in appended], followed_rows.latest_start,
                                  every_mirror=False)
    else:
        STATE.offsets.appended(table, None, [], followed_rows.newest_offset)
        STATE.run_starts.appended(table, None, [], followed_rows.latest_start)


def _strings(spark: Any, values: List[str]) -> Any:
    array = spark.sparkContext._gateway.new_array(spark._jvm.java.lang.String, len(values))
    for index, value in enumerate(values):
        array[index] = value
    return array
