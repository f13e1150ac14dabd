"""Small tables read, and rows appended, in the driver (adapter/dbt/adapters/cdc_spark/kept_rows_in_driver.py,
jvm/iceberg/cdc_merge/iceberg/SmallTableRows.java, OneCommitBatch.append), on real Iceberg tables:
the rows Spark reads (a delete file applied, timestamps and nulls as Spark gives them) without a
Spark job; the appended rows in one commit; large or missing tables left to SQL. A dbt run that
takes this path: tests/test_run_rows.py."""

from __future__ import annotations

import datetime as dt
import itertools

import pytest

from dbt.adapters.cdc_spark import kept_rows_in_driver
from test_raw_ranges import jobs_run_by

_tables = itertools.count(1)


@pytest.fixture()
def table(spark) -> str:
    """Runs-like rows in two data files, one of them deleted through a position delete file."""
    name = f"kept_rows.t{next(_tables)}"
    spark.sql("create namespace if not exists kept_rows")
    spark.sql(f"create table {name} (target_table string, started_at timestamp, lines bigint, lag double) using iceberg "
              "tblproperties ('format-version' = '2', 'write.delete.mode' = 'merge-on-read')")
    schema = "target_table string, started_at timestamp, lines bigint, lag double"
    first = [("a.m1", dt.datetime(2026, 11, 27, 10, 0, 0, 123456), 1, 0.5), ("a.m2", None, None, None)]
    second = [("a.m1", dt.datetime(2026, 11, 27, 11, 0), 2, 1.5), ("a.m3", dt.datetime(2026, 11, 27, 12, 0), 3, 2.5)]
    for rows in (first, second):
        spark.createDataFrame(rows, schema).coalesce(1).writeTo(name).append()
    spark.sql(f"delete from {name} where target_table = 'a.m3'")
    return name


def test_the_rows_are_what_spark_reads_without_a_job(spark, table):
    views = []
    jobs = jobs_run_by(spark, lambda: views.extend([
        kept_rows_in_driver.rows_view(spark, table, ["target_table", "started_at", "lines", "lag"]),
        kept_rows_in_driver.rows_view(spark, table, ["started_at", "target_table"], "target_table", ["a.m1", "a.m9"]),
    ]))

    assert jobs == 0
    everything, filtered = (spark.table(view) for view in views)
    assert sorted(everything.collect()) == sorted(spark.table(table).collect())
    assert sorted(filtered.collect()) == sorted(spark.sql(f"select started_at, target_table from {table} where target_table = 'a.m1'").collect())
    assert len(filtered.collect()) == 2
    assert everything.schema == spark.table(table).schema


def test_only_rows_since_a_moment_and_every_value_found_or_none(spark, table):
    eleven = _micros(spark, "2026-11-27 11:00:00")
    recent = kept_rows_in_driver.rows_view(spark, table, ["target_table", "lines"], "target_table", ["a.m1"],
                                           ("started_at", eleven), every_value=True)
    assert [tuple(row) for row in spark.table(recent).collect()] == [("a.m1", 2)]
    # a.m2 has no row since eleven (its only one has no started_at): not every value found.
    assert kept_rows_in_driver.rows_view(spark, table, ["target_table"], "target_table", ["a.m1", "a.m2"],
                                         ("started_at", eleven), every_value=True) is None


def test_runs_views_read_the_quarantine_since_the_earliest_previous_run(spark, table):
    quarantine = f"{table}_quarantine"
    spark.sql(f"create table {quarantine} (landed_at timestamp, reason string) using iceberg")
    spark.sql(f"insert into {quarantine} values (timestamp '2026-11-27 09:00:00', 'old'), "
              "(timestamp '2026-11-27 10:30:00', 'since m1'), (timestamp '2026-11-27 11:30:00', 'since both')")

    runs, lines = kept_rows_in_driver.runs_views(spark, table, quarantine, ["a.m1"])
    assert sorted(row["target_table"] for row in spark.table(runs).collect()) == ["a.m1", "a.m1"]
    # a.m1's newest run started at 11:00: the lines before are never counted, and not read.
    assert [row[0] for row in spark.sql(f"select cast(landed_at as string) from {lines}").collect()] == ["2026-11-27 11:30:00"]
    # a.m2 never started a run (its started_at is null): every line counts for it.
    _, lines = kept_rows_in_driver.runs_views(spark, table, quarantine, ["a.m1", "a.m2"])
    assert spark.table(lines).count() == 3
    assert kept_rows_in_driver.runs_views(spark, table, None, ["a.m1"])[0]


def _micros(spark, moment: str) -> int:
    return spark.sql(f"select unix_micros(timestamp '{moment}') as micros").first()["micros"]


def test_large_or_missing_tables_are_left_to_sql(spark, table, monkeypatch):
    assert kept_rows_in_driver.rows_view(spark, "kept_rows.no_such_table", ["target_table"]) is None
    monkeypatch.setattr(kept_rows_in_driver, "MAX_DRIVER_RECORDS", 2)  # the table holds 3 live rows, a.m1 two
    assert kept_rows_in_driver.rows_view(spark, table, ["target_table"]) is None
    assert kept_rows_in_driver.rows_view(spark, table, ["target_table"], "target_table", ["a.m1"]) is not None
    with pytest.raises(Exception, match="lacks one of the columns"):
        kept_rows_in_driver.rows_view(spark, table, ["target_table", "no_such_column"])


def test_rows_are_appended_in_one_commit_and_the_views_dropped(spark, table):
    view = kept_rows_in_driver.rows_view(spark, table, ["target_table", "lines"], "target_table", ["a.m1"])
    snapshots = spark.sql(f"select count(*) from {table}.snapshots").first()[0]
    select = f"select target_table, max(lines) + 1 as lines, current_timestamp() as started_at from {view} group by target_table"

    kept_rows_in_driver.append(spark, {"append_to": table, "select": select, "rows": 1, "views": [view]})

    assert spark.sql(f"select count(*) from {table}.snapshots").first()[0] == snapshots + 1
    added = spark.sql(f"select target_table, lines, lag from {table} where lines = 3").collect()
    assert [tuple(row) for row in added] == [("a.m1", 3, None)]  # a column the select lacks is null
    assert not spark.catalog.tableExists(view)
    with pytest.raises(Exception, match="are 1, expected 2"):
        kept_rows_in_driver.append(spark, {"append_to": table, "select": "select 'a.m4' as target_table", "rows": 2, "views": []})
    assert spark.sql(f"select count(*) from {table}.snapshots").first()[0] == snapshots + 1
