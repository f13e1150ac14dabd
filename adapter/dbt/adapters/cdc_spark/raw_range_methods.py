"""The adapter methods through which the cdc_merge macros read a raw range in dbt's Spark session:
the range read once for all the mirrors that read it (raw_ranges.py), its newest events deduplicated
once (shared_dedup.py) and its plan (range_plan.py). A mixin of CdcSparkAdapter, beside
MirrorWriteMethods (mirror_write_methods.py), which writes what the mirror makes of the range."""

from typing import Any, Dict, List, Optional

from dbt.adapters.base import BaseRelation, available
from dbt.adapters.base.meta import AdapterMeta

from dbt.adapters.cdc_spark import loaded_tables, range_plan, raw_ranges, table_metadata

from python_jobs.apply import shared_dedup


class RawRangeMethods(metaclass=AdapterMeta):
    """AdapterMeta collects the @available methods, as it does for the adapter class itself."""

    @available
    def create_appended_rows_view(
        self, view_name: str, table: str, after_snapshot: Optional[str], through_snapshot: str, events: Optional[int] = None
    ) -> bool:
        """The rows the snapshots after after_snapshot up to through_snapshot appended to table,
        as the temporary view view_name, shaped like Iceberg's changelog view (only inserts).

        Iceberg's incremental append scan, which Spark SQL 3.5 cannot ask for (no table options
        in SELECT); create_changelog_view reads the same files but then shuffles and sorts every
        row to find carried-over rows, which an append-only table has none of (BENCHMARKS.md: a
        1M-event read 5.5 s vs 2.5 s). A range of at most raw_ranges.MAX_KEPT_EVENTS events (the
        caller's count) is read once for all the mirrors that read it (raw_ranges.py). False when
        the SparkSession is not in this process (thrift): the caller uses create_changelog_view there."""
        spark = self._session_in_process()
        if spark is None:
            return False
        from pyspark.sql import functions as F


        def read() -> Any:
            reader = spark.read
            if after_snapshot is None:
                reader = reader.option("snapshot-id", through_snapshot)
            else:
                reader = reader.option("start-snapshot-id", after_snapshot).option("end-snapshot-id", through_snapshot)
            return reader.table(table).withColumn("_change_type", F.lit("INSERT"))

        session_id = loaded_tables.application_id(spark)
        raw_ranges.RANGES.rows(session_id, table, after_snapshot, through_snapshot, events, read).createOrReplaceTempView(view_name)
        return True

    @available
    def create_newest_events_view(self, view_name: str, table: str, after_snapshot: Optional[str], through_snapshot: str,
                                  plan: Optional[Dict[str, Any]], buckets: int, whole_range: bool,
                                  stored: Optional[List[Optional[BaseRelation]]] = None) -> bool:
        """The newest event of each source table and key of a range create_appended_rows_view kept in
        the driver, deduplicated once for all its mirrors, as the temporary view view_name, where it
        stands in for the mirror's own dedup (shared_dedup.py); False otherwise. stored: the mirror
        and its tombstones, whose newest seq a range with TOAST placeholders is checked against."""
        spark = self._session_in_process()
        if spark is None or not shared_dedup.applies(plan, int(buckets), bool(whole_range)):
            return False
        folded = shared_dedup.needs_placeholder_fold(plan)
        if folded and not _fold_is_newer_than_stored(spark, plan, stored or []):
            return False
        newest = raw_ranges.RANGES.newest(loaded_tables.application_id(spark), table, after_snapshot, through_snapshot, folded)
        if newest is None:
            return False
        newest.createOrReplaceTempView(view_name)
        return True

    @available
    def cdc_range_plan(self, table: str, after_snapshot: Optional[str], through_snapshot: str, source_table: str) -> Optional[Dict[str, Any]]:
        """What source_table's mirror needs to know of a range create_appended_rows_view kept, from one
        pass over the range for all its tables (range_plan.py); None when the range is not kept."""
        spark = self._session_in_process()
        if spark is None:
            return None
        return raw_ranges.RANGES.plan(loaded_tables.application_id(spark), table, after_snapshot, through_snapshot, source_table)

    @available
    def cdc_view_plan(self, view_name: str, source_table: str) -> Optional[Dict[str, Any]]:
        """range_plan.py's plan of source_table's events in a view of dbt's session (a chunk without a
        consistency group's deferred transactions), in one pass; None when the session is elsewhere."""
        from pyspark.sql import functions as F

        spark = self._session_in_process()
        if spark is None:
            return None
        events = spark.table(view_name).where(F.col("table_name") == source_table)
        plans = range_plan.plans_by_table(range_plan.range_plan_frame(events).collect())
        return dict(plans.get(source_table) or range_plan.empty_plan())

    @available
    def cdc_stored_seq_bounds(self, relations: List[Optional[BaseRelation]]) -> Optional[List[Optional[str]]]:
        """unsent_columns.sql: stored_seq_bounds of the mirror and its tombstones; None when the
        SparkSession is not in this process or the bounds are not known (the caller queries)."""
        spark = self._session_in_process()
        return None if spark is None else stored_seq_bounds(spark, relations)

    @available
    def cdc_plan_of_query(self, columns: List[str], values: List[Any]) -> Dict[str, Any]:
        """The plan raw_log.sql chunk_plan_sql read where the range is not kept here (range_plan.py)."""
        return range_plan.plan_from_query(list(columns), list(values))


def stored_seq_bounds(spark: Any, relations: List[Optional[BaseRelation]]) -> Optional[List[Optional[str]]]:
    """An upper bound of the newest _cdc_seq each of relations holds (None: it holds none), from its
    manifests (no statement; a bound cut to 16 characters is rounded up, so still one); None where
    some table's bounds are not known."""
    bounds = [table_metadata.column_upper_bound(spark, f"{relation.schema}.{relation.identifier}", "_cdc_seq")
              for relation in relations if relation is not None]
    return None if table_metadata.UNKNOWN_BOUND in bounds else bounds


def _fold_is_newer_than_stored(spark: Any, plan: Dict[str, Any], relations: List[Optional[BaseRelation]]) -> bool:
    """shared_dedup.fold_is_newer_than_stored for the mirror and tombstones (relations): first from
    their manifests' bounds of _cdc_seq, which can only be at or above the newest seq they hold, so
    a range newer than the bounds is newer than every stored seq (no statement; the mirror's CREATE
    keeps the column's bounds whole, target.sql); by a max query where the bounds do not show it."""
    bounds = stored_seq_bounds(spark, relations)
    if bounds is not None:
        newest_bound = max((bound for bound in bounds if bound is not None), default=None)
        if shared_dedup.fold_is_newer_than_stored(plan, newest_bound):
            return True
    return shared_dedup.fold_is_newer_than_stored(plan, _newest_stored_seq(spark, relations))


def _newest_stored_seq(spark: Any, relations: List[Optional[BaseRelation]]) -> Optional[str]:
    """The newest _cdc_seq the tables hold (a missing table holds none); None when they hold none."""
    from pyspark.sql.utils import AnalysisException

    newest: Optional[str] = None
    for relation in relations:
        if relation is None:
            continue
        try:
            (row,) = spark.sql(f"select max(_cdc_seq) as seq from {relation.schema}.{relation.identifier}").collect()
        except AnalysisException:  # not created yet
            continue
        if row["seq"] is not None and (newest is None or row["seq"] > newest):
            newest = row["seq"]
    return newest
