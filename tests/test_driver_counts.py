"""A classified batch the driver holds, counted without a Spark job (adapter/.../driver_counts.py):
the same counts as the aggregates counts.sql writes for the checkpoint's observation."""

from __future__ import annotations

from datetime import datetime

import pytest

from dbt.adapters.cdc_spark import driver_counts, raw_ranges
from test_raw_ranges import jobs_run_by

COUNTS = [
    ["events_read", "count", "*"],
    ["inserted", "count_if", "_cdc_change = 'insert'"],
    ["revived", "count_if", "_cdc_change = 'insert' and _cdc_tombstone_seq is not null"],
    ["max_source_ts", "max", "_cdc_source_ts"],
]
# What counts.sql change_counts_columns() makes of COUNTS.
COLUMNS = ["count(*) as events_read", "count_if(_cdc_change = 'insert') as inserted",
           "count_if(_cdc_change = 'insert' and _cdc_tombstone_seq is not null) as revived",
           "coalesce(cast(max(_cdc_source_ts) as string), '') as max_source_ts"]


def batch(spark, rows):
    return raw_ranges.in_driver(spark.createDataFrame(rows, "_cdc_change string, _cdc_tombstone_seq string, _cdc_source_ts timestamp"))


@pytest.mark.parametrize("rows", [
    [("insert", None, "2026-11-27 10:00:05"), ("insert", "7", "2026-11-27 10:00:05.5"), ("update", None, "2026-11-27 10:00:05.45"),
     ("skip", None, None), ("insert", None, "2025-01-01 00:00:00")],
    [("skip", None, None)],
    [],
])
def test_the_counts_are_the_aggregates_and_run_no_job(spark, rows):
    frame = batch(spark, [(change, seq, None if ts is None else datetime.fromisoformat(ts)) for change, seq, ts in rows])
    counted = {}
    assert jobs_run_by(spark, lambda: counted.update(driver_counts.counts_in_driver(frame, COUNTS))) == 0
    assert counted == frame.selectExpr(*COLUMNS).first().asDict()


def test_an_unknown_aggregate_is_named(spark):
    with pytest.raises(ValueError, match="count events_read: unknown aggregate 'sum'"):
        driver_counts.counts_in_driver(batch(spark, []), [["events_read", "sum", "*"]])
