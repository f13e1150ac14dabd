"""Joins of rows the driver holds, computed in the driver (adapter/.../local_rows.py,
LocalJoins.java): the same rows as Spark's own join, no Spark job, and nothing done where a join is
not of that kind."""

from __future__ import annotations

import pytest

from dbt.adapters.cdc_spark import local_rows, raw_ranges
from test_raw_ranges import jobs_run_by

BATCH = [("a", 1, "x"), ("b", 2, "y"), ("b", 3, "y"), ("c", 4, None), (None, 5, "z"), ("e", 6, "w")]
STORED = [("a", 10, "x"), ("b", 20, "y"), ("b", 21, "q"), ("c", 30, None), (None, 40, "z"), ("d", 50, "w")]


@pytest.fixture
def views(spark):
    for name, rows in (("batch", BATCH), ("stored", STORED)):
        raw_ranges.in_driver(spark.createDataFrame(rows, "k string, seq int, tag string")).createOrReplaceTempView(f"local_{name}")
    yield
    for name in ("batch", "stored"):
        spark.catalog.dropTempView(f"local_{name}")


@pytest.mark.parametrize("sql", [
    # the classification's shape: each batch row with its key's stored row, if any
    "select b.k, b.seq, s.seq as stored_seq, case when s.seq is null then 'insert' when b.seq > s.seq then 'update' "
    "else 'skip' end as change from local_batch b left join local_stored s on b.k = s.k",
    "select /*+ broadcast(s) */ b.*, s.seq as stored_seq from local_batch b left outer join local_stored s on b.k = s.k",
    "select b.k, s.tag from local_batch b join local_stored s on b.k = s.k",
    # two keys, one of them null in some rows: null equals nothing
    "select b.k, b.seq, s.seq as stored from local_batch b left join local_stored s on b.k = s.k and b.tag = s.tag",
    # a null-safe key matches nulls
    "select b.seq, s.seq as stored from local_batch b join local_stored s on b.tag <=> s.tag",
    # a condition beside the key, evaluated on each pair
    "select b.seq, s.seq as stored from local_batch b left join local_stored s on b.k = s.k and s.seq > b.seq * 10",
    # a join of a join's projection
    "select x.k, x.stored, t.seq as third from (select b.k, s.seq as stored from local_batch b left join local_stored s "
    "on b.k = s.k) x left join local_stored t on x.stored = t.seq",
])
def test_a_join_of_local_rows_gives_spark_s_rows_without_a_job(spark, views, sql):
    query = spark.sql(sql)
    kept = []
    assert jobs_run_by(spark, lambda: kept.append(local_rows.computed_in_driver(query, 1000))) == 0
    assert kept[0] is not None
    computed = kept[0]
    assert computed.columns == query.columns
    assert sorted(map(tuple, computed.collect()), key=repr) == sorted(map(tuple, spark.sql(sql).collect()), key=repr)
    assert raw_ranges.rows_in_driver(computed, 1000)  # kept as a local relation: read with no job


@pytest.mark.parametrize("sql", [
    "select * from local_batch b full join local_stored s on b.k = s.k",
    "select * from local_batch b right join local_stored s on b.k = s.k",
    "select * from local_batch b join local_stored s on b.seq < s.seq",  # no key to hash
    "select * from local_batch b left join (select k, count(*) as n from local_stored group by k) s on b.k = s.k",
])
def test_other_joins_are_left_to_spark(spark, views, sql):
    assert local_rows.computed_in_driver(spark.sql(sql), 1000) is None


def test_a_left_join_with_columns_declared_not_null_on_the_right(spark, views):
    """A column Spark declares not null is null in a left join's rows that found no match."""
    raw_ranges.in_driver(spark.range(0, 6, 2).selectExpr("id", "cast(id as string) as k")).createOrReplaceTempView("local_ids")
    try:
        sql = "select b.seq, i.id, i.k from local_batch b left join local_ids i on cast(b.seq as string) = i.k"
        computed = local_rows.computed_in_driver(spark.sql(sql), 100)
        assert sorted(map(tuple, computed.collect())) == sorted(map(tuple, spark.sql(sql).collect()))
    finally:
        spark.catalog.dropTempView("local_ids")


def test_rows_over_the_limit_are_left_to_spark(spark, views):
    query = spark.sql("select * from local_batch b left join local_stored s on b.k = s.k")
    assert local_rows.computed_in_driver(query, 8) is not None  # 8 rows out: b matches two stored rows twice
    assert local_rows.computed_in_driver(query, 7) is None


def test_column_summaries_add_up_a_local_relation(spark, views):
    frame = spark.sql("select seq > 2 as later, cast(seq as bigint) as seq, tag from local_batch")
    later, largest, other, rows = local_rows.column_summaries(frame)
    assert (later, other, rows) == (4, -1, 6)
    assert largest == 5 and local_rows.string_at(frame, largest, 2) == "w"  # the row of seq 6
    assert local_rows.column_summaries(spark.range(3).groupBy().count()) is None  # not a local relation


def test_rows_a_job_computes_are_kept_as_its_plan_returns_them(spark):
    query = spark.range(0, 2000, 1, 4).selectExpr(
        "id", "cast(id as string) as text", "if(id % 7 = 0, null, id * 1.25) as maybe",
        "timestamp_micros(id * 1000003) as at", "cast(id / 3 as decimal(14, 2)) as price",
        "array(id, id + 1) as pair", "map('k', cast(id as string)) as tags", "named_struct('a', id, 'b', 'x') as nested")
    kept = []
    assert jobs_run_by(spark, lambda: kept.append(local_rows.collected(query))) >= 1
    rows = kept[0]
    assert rows.schema == query.schema
    assert raw_ranges.rows_in_driver(rows, 2000)
    assert jobs_run_by(spark, lambda: rows.where("id % 2 = 0").collect()) == 0  # read with no job
    assert sorted(map(tuple, rows.collect())) == sorted(map(tuple, query.collect()))
    # Rows the optimizer computes from a local relation itself: kept with no job at all.
    projected = rows.where("id < 10").select("text")
    assert jobs_run_by(spark, lambda: kept.append(local_rows.collected(projected))) == 0
    assert [row.text for row in kept[-1].collect()] == [str(n) for n in range(10)]
