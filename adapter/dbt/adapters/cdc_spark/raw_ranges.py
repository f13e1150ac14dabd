"""The raw events of a snapshot range, read once and shared by the mirrors that read it.

Mirrors of one raw table usually stand at the same offset, so in one run they all read the same
range (after, through) and keep only their own source table's rows. The first to read a small
range keeps its rows in Spark's block store (a local checkpoint), or, when it is smaller still, in
the driver (a local relation), where Spark's planner keeps a mirror's own rows without a job or a
scan of the whole range; the others, in this invocation
or a later one of the same process (cdc-run), use those rows. A snapshot id names content that
never changes, so a kept range is never stale. Large ranges are not kept (each mirror reads its
own), and a raw table keeps only its newest few ranges. A kept range also answers, in one pass
for all its source tables, what each mirror needs to know of it before applying it (range_plan.py).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable, Dict, List, Optional, Tuple

from dbt.adapters.cdc_spark import local_rows, range_plan

# Above this many events a range is read by each mirror, not held in memory (about 1 KB each).
MAX_KEPT_EVENTS = 100_000
# At most this many events a range is kept in the driver (about 50 MB): a cycle of 10,000 changes/s.
MAX_DRIVER_EVENTS = 50_000
# Ranges kept per raw table: the newest run's, and the one before for mirrors that lag one run.
KEPT_PER_TABLE = 2

RangeKey = Tuple[str, str, Optional[str], str]


class RawRanges:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: "OrderedDict[RangeKey, Any]" = OrderedDict()
        self._plans: Dict[RangeKey, Dict[str, Dict[str, Any]]] = {}
        self._newest: Dict[RangeKey, Any] = {}
        # Every read of a range from the raw table's files, for benchmarks/many_mirrors/many_mirrors.py.
        self.reads: List[RangeKey] = []

    def rows(self, session_id: str, table: str, after: Optional[str], through: str, events: Optional[int],
             read: Callable[[], Any]) -> Any:
        """The range's rows: kept ones, or read() (kept now when events says it is small)."""
        key = (session_id, table, after, through)
        with self._lock:
            if key in self._kept:
                self._kept.move_to_end(key)
                return self._kept[key]
            self.reads.append(key)
            rows = read()
            if events is None or int(events) > MAX_KEPT_EVENTS:
                return rows
            rows = in_driver(rows) if int(events) <= MAX_DRIVER_EVENTS else rows.localCheckpoint(eager=True)
            self._kept[key] = rows
            self._forget_older(session_id, table)
            return rows

    def plan(self, session_id: str, table: str, after: Optional[str], through: str, source_table: str) -> Optional[Dict[str, Any]]:
        """source_table's plan of a kept range (range_plan.py), computed for all its tables at the first
        ask (in the driver where the range is held there: local_rows.range_plans); None when the range
        is not kept (large, or not read in this process)."""
        key = (session_id, table, after, through)
        with self._lock:
            rows = self._kept.get(key)
            if rows is None:
                return None
            if key not in self._plans:
                plans = local_rows.range_plans(rows)
                self._plans[key] = plans if plans is not None else range_plan.plans_by_table(range_plan.range_plan_frame(rows).collect())
            return dict(self._plans[key].get(source_table) or range_plan.empty_plan())

    def newest(self, session_id: str, table: str, after: Optional[str], through: str, folded: bool = False) -> Optional[Any]:
        """The newest event of each source table and key of a range kept in the driver, deduplicated
        there at the first ask for all its mirrors (local_rows.newest_events) and kept there too; None
        when the range is not kept there. folded: only rows whose TOAST placeholders were filled from
        their keys' older events (LocalRawRanges.java) will do; Spark's window does not fill them."""
        key = (session_id, table, after, through)
        with self._lock:
            rows = self._kept.get(key)
            if rows is None or rows._jdf.queryExecution().analyzed().getClass().getSimpleName() != "LocalRelation":
                return None
            if key not in self._newest:
                newest = local_rows.newest_events(rows)
                self._newest[key] = (newest, True) if newest is not None else (in_driver(newest_events(rows)), False)
            newest, filled = self._newest[key]
            return newest if filled or not folded else None

    def _forget_older(self, session_id: str, table: str) -> None:
        # Not freed here: a mirror on another thread may still read an older range through its view
        # (mirrors at other offsets, or applying in smaller chunks); Spark frees the blocks once no
        # view holds them.
        same_table = [key for key in self._kept if key[:2] == (session_id, table)]
        for key in same_table[:-KEPT_PER_TABLE]:
            self._kept.pop(key)
            self._plans.pop(key, None)
            self._newest.pop(key, None)
        # Ranges of an earlier SparkSession (tests start several in one process) are gone with it.
        for key in [key for key in self._kept if key[0] != session_id]:
            self._kept.pop(key)
            self._plans.pop(key, None)
            self._newest.pop(key, None)

    def forget(self) -> None:
        with self._lock:
            for rows in self._kept.values():
                _free(rows)
            self._kept.clear()
            self._plans.clear()
            self._newest.clear()


def newest_events(rows: Any) -> Any:
    """Each source table's key events of rows (a raw range), the newest per key: what a mirror's
    batch view keeps of its own table's events in one round (dedup.sql: table_events_cte,
    ranked_events_cte with rounds = 1), for every table at once."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    newest_first = Window.partitionBy("table_name", "key").orderBy(
        F.col("seq").desc_nulls_last(), F.col("landed_file").desc_nulls_last(), F.col("landed_line").desc_nulls_last()
    )
    key_events = rows.where((F.col("_change_type") == "INSERT") & ~F.col("action").isin(*range_plan.TABLE_ACTIONS))
    return key_events.withColumn("_cdc_rank", F.row_number().over(newest_first)).where(F.col("_cdc_rank") == 1).drop("_cdc_rank")


def in_driver(rows: Any, as_rows: bool = False) -> Any:
    """rows computed now and kept in the driver's memory as a local relation (local_rows.collected).
    as_rows: collected as Rows by Dataset's own action, for a query with an observation, whose
    values that action gathers."""
    from pyspark.sql import DataFrame

    kept = None if as_rows else local_rows.collected(rows)
    if kept is not None:
        return kept
    computed = rows._jdf
    spark = rows.sparkSession
    return DataFrame(spark._jsparkSession.createDataFrame(computed.collectAsList(), computed.schema()), spark)


# At most this many keys of a batch are written into its classification as a list of hashes.
MAX_LISTED_KEYS = 1_000


def key_hashes_in_driver(keys: Any, limit: Optional[int] = None) -> Optional[List[int]]:
    """Spark's xxhash64 of each key of keys (one string column), read without a Spark job: only
    when the optimizer answers keys from a local relation (a range kept in the driver) of at most
    limit rows; else None. A classification that lists them filters the stored keys by the list
    instead of broadcasting the batch's hashes (a Spark job of its own)."""
    from pyspark.sql import functions as F

    hashes = keys.select(F.xxhash64(keys.columns[0]).alias("key_hash"))
    if not rows_in_driver(hashes, MAX_LISTED_KEYS if limit is None else limit):
        return None
    return [int(row[0]) for row in hashes.collect()]


def rows_in_driver(frame: Any, limit: int) -> bool:
    """Whether the optimizer answers frame from a local relation of at most limit rows: reading it
    then runs no Spark job."""
    plan = frame._jdf.queryExecution().optimizedPlan()
    return plan.getClass().getSimpleName() == "LocalRelation" and plan.data().size() <= limit


def _free(rows: Any) -> None:
    """Frees a local checkpoint's blocks now, not at the JVM's next garbage collection (a local
    relation holds none)."""
    try:
        plan = rows._jdf.logicalPlan()
        if plan.getClass().getSimpleName() == "LogicalRDD":
            plan.rdd().unpersist(True)
    except Exception:  # the session may be stopped already; its blocks went with it
        pass


# One per process, like the SparkSession it holds rows of.
RANGES = RawRanges()
