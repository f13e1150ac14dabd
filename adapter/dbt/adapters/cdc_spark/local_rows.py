"""Rows the driver holds (local relations), computed and read there without a Spark job.

Spark's optimizer computes a projection or a filter of a local relation itself; a join of two (a
batch's rows with its keys' stored rows, stored_keys.py) it leaves to a Spark job. Here a query
whose joins are of local relations is computed by the optimizer and LocalJoins.java, and its result
kept as the local relation it already is (jvm/iceberg/cdc_merge/iceberg/LocalJoins.java). A raw
range held in the driver is planned and deduplicated there likewise (LocalRawRanges.java). Rows a
Spark job computes are kept as the rows its plan returns (CollectedRows.java), where Dataset's
collectAsList and createDataFrame would convert each to a Row and back.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from dbt.adapters.cdc_spark import range_plan
from dbt.adapters.cdc_spark.iceberg_jvm import jvm_class
from python_jobs.landing.io.py4j_lookups import kept_class

LOCAL_JOINS_CLASS = "cdc_merge.iceberg.LocalJoins"
LOCAL_RAW_RANGES_CLASS = "cdc_merge.iceberg.LocalRawRanges"
COLLECTED_ROWS_CLASS = "cdc_merge.iceberg.CollectedRows"
# A join under a projection under a join: each round joins the innermost, the optimizer then folds
# the projection above it.
MAX_ROUNDS = 4


def _local(plan: Any, limit: int) -> bool:
    return plan.getClass().getSimpleName() == "LocalRelation" and plan.data().size() <= limit


def _datasets(spark: Any) -> Any:
    return kept_class("org.apache.spark.sql.Dataset", spark._sc._gateway._gateway_client)


def _frame_of(spark: Any, relation: Any) -> Any:
    """A DataFrame over a local relation: a new instance of it, since the kept rows' columns are not
    those of the query they came from."""
    from pyspark.sql import DataFrame

    return DataFrame(_datasets(spark).ofRows(spark._jsparkSession, relation.newInstance()), spark)


def computed_in_driver(frame: Any, limit: int) -> Optional[Any]:
    """frame's rows as a DataFrame over a local relation, when the optimizer and LocalJoins compute
    them in the driver, at most limit rows at every step; None otherwise (nothing was run)."""
    spark = frame.sparkSession
    datasets = _datasets(spark)
    plan = frame._jdf.queryExecution().optimizedPlan()
    joins = None
    for _ in range(MAX_ROUNDS):
        if _local(plan, limit):
            return _frame_of(spark, plan)
        joins = joins or jvm_class(spark, LOCAL_JOINS_CLASS)
        joined = joins.joined(plan, limit) if joins is not None else None
        if joined is None:
            return None
        plan = datasets.ofRows(spark._jsparkSession, joined).queryExecution().optimizedPlan()
    return None


def collected(frame: Any) -> Optional[Any]:
    """frame's rows computed now and held in the driver as a local relation, as the rows Spark's
    plan returns (CollectedRows.java) or, where the optimizer computes them itself, with no job;
    None without the helpers' jar."""
    spark = frame.sparkSession
    plan = frame._jdf.queryExecution().optimizedPlan()
    if plan.getClass().getSimpleName() != "LocalRelation":
        java_class = jvm_class(spark, COLLECTED_ROWS_CLASS)
        if java_class is None:
            return None
        plan = java_class.collected(frame._jdf)
    return _frame_of(spark, plan)


def column_summaries(frame: Any) -> Optional[List[int]]:
    """Per column of frame, when the optimizer computes it as a local relation: a boolean column's
    count of true values, a bigint column's row of its largest value (-1: none), -1 for others; with
    the row count last. None when frame is not computed so."""
    spark = frame.sparkSession
    plan = frame._jdf.queryExecution().optimizedPlan()
    joins = jvm_class(spark, LOCAL_JOINS_CLASS)
    if joins is None or plan.getClass().getSimpleName() != "LocalRelation":
        return None
    return [*joins.columnSummaries(plan), plan.data().size()]


def string_at(frame: Any, row: int, column: int) -> Optional[str]:
    """The text at a row and column of frame, a local relation column_summaries summed."""
    spark = frame.sparkSession
    return jvm_class(spark, LOCAL_JOINS_CLASS).stringAt(frame._jdf.queryExecution().optimizedPlan(), row, column)


def _local_raw_ranges(frame: Any) -> Optional[Any]:
    plan = frame._jdf.queryExecution().analyzed()
    if plan.getClass().getSimpleName() != "LocalRelation":
        return None
    return jvm_class(frame.sparkSession, LOCAL_RAW_RANGES_CLASS)


def range_plans(frame: Any) -> Optional[Dict[str, Dict[str, Any]]]:
    """range_plan.py's plans of a raw range's rows held in the driver, by source table, computed
    there; None where Spark computes them (rows elsewhere, a truncate among them, no helpers' jar)."""
    java_class = _local_raw_ranges(frame)
    text = java_class.plansJson(frame._jdf.queryExecution().analyzed()) if java_class is not None else None
    return None if text is None else range_plan.plans_from_json(text)


def newest_events(frame: Any) -> Optional[Any]:
    """raw_ranges.newest_events of a raw range's rows held in the driver, computed there and kept as
    a local relation; None where Spark computes it."""
    java_class = _local_raw_ranges(frame)
    newest = java_class.newest(frame._jdf.queryExecution().analyzed()) if java_class is not None else None
    return None if newest is None else _frame_of(frame.sparkSession, newest)
