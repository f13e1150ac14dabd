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
    read = []
    columns = ["target_table", "started_at", "lines", "lag"]
    jobs = jobs_run_by(spark, lambda: read.extend([
        kept_rows_in_driver.read_rows(spark, table, columns, columns),
        kept_rows_in_driver.read_rows(spark, table, ["started_at", "target_table"], ["cast(started_at as string)", "target_table"],
                                      "target_table", ["a.m1", "a.m9"]),
    ]))

    assert jobs == 0
    everything, filtered = read
    assert sorted(everything, key=str) == sorted((tuple(row) for row in spark.table(table).collect()), key=str)
    assert sorted(filtered) == sorted(tuple(row) for row in spark.sql(
        f"select cast(started_at as string), target_table from {table} where target_table = 'a.m1'").collect())
    assert len(filtered) == 2


def test_only_rows_since_a_moment_and_every_value_found_or_none(spark, table):
    eleven = _micros(spark, "2026-11-27 11:00:00")
    columns = ["target_table", "lines"]
    assert kept_rows_in_driver.read_rows(spark, table, columns, columns, "target_table", ["a.m1"], ("started_at", eleven),
                                         every_value=True) == [("a.m1", 2)]
    # a.m2 has no row since eleven (its only one has no started_at): not every value found.
    assert kept_rows_in_driver.read_rows(spark, table, columns, columns, "target_table", ["a.m1", "a.m2"],
                                         ("started_at", eleven), every_value=True) is None


def test_offset_ordinals_follow_each_mirrors_newest(spark):
    offsets = f"kept_rows.offsets{next(_tables)}"
    spark.sql(f"create table {offsets} (target_table string, offset_ordinal bigint) using iceberg")
    spark.sql(f"insert into {offsets} values ('a.m1', 4), ('a.m1', 7), ('a.m2', 1)")

    assert kept_rows_in_driver.offset_ordinals(spark, offsets, ["a.m1", "a.m3", "a.m1", "a.m2"]) == [8, 1, 9, 2]
    assert kept_rows_in_driver.offset_ordinals(spark, "kept_rows.no_such_offsets", ["a.m1"]) is None


def test_lines_quarantined_since_each_mirrors_previous_run(spark, table):
    quarantine = f"{table}_quarantine"
    spark.sql(f"create table {quarantine} (landed_at timestamp, reason string) using iceberg")
    spark.sql(f"insert into {quarantine} values (timestamp '2026-11-27 09:00:00', 'old'), "
              "(timestamp '2026-11-27 10:30:00', 'since m1'), (timestamp '2026-11-27 11:30:00', 'since both'), (null, 'no time')")

    # a.m1's newest run started at 11:00; a.m2's has no start and a.m4 never ran: every line counts.
    assert kept_rows_in_driver.lines_quarantined(spark, table, quarantine, ["a.m1", "a.m2", "a.m4", "a.m1"]) == [1, 3, 3, 1]
    assert kept_rows_in_driver.lines_quarantined(spark, table, None, ["a.m1"]) == [None]


def _micros(spark, moment: str) -> int:
    return spark.sql(f"select unix_micros(timestamp '{moment}') as micros").first()["micros"]


def test_large_or_missing_tables_are_left_to_sql(spark, table, monkeypatch):
    assert kept_rows_in_driver.read_rows(spark, "kept_rows.no_such_table", ["target_table"], ["target_table"]) is None
    monkeypatch.setattr(kept_rows_in_driver, "MAX_DRIVER_RECORDS", 2)  # the table holds 3 live rows, a.m1 two
    assert kept_rows_in_driver.read_rows(spark, table, ["target_table"], ["target_table"]) is None
    assert kept_rows_in_driver.read_rows(spark, table, ["target_table"], ["target_table"], "target_table", ["a.m1"]) is not None
    monkeypatch.setattr(kept_rows_in_driver, "MAX_DRIVER_RECORDS", 0)
    assert kept_rows_in_driver.lines_quarantined(spark, table, "kept_rows.never_read", ["a.m1"]) is None
    with pytest.raises(Exception, match="lacks one of the columns"):
        kept_rows_in_driver.read_rows(spark, table, ["target_table", "no_such_column"], ["target_table"])


def test_constant_rows_are_appended_in_one_commit_without_a_job(spark, table):
    snapshots = spark.sql(f"select count(*) from {table}.snapshots").first()[0]
    # As kept_rows.sql's statements read their rows: a projection of (values ...).
    select = ("select target_table, cast(lines as bigint) as lines, current_timestamp() as started_at "
              "from (values ('a.m1', 3)) as kept (target_table, lines)")

    assert jobs_run_by(spark, lambda: kept_rows_in_driver.append(spark, {"append_to": table, "select": select, "rows": 1})) == 0

    assert spark.sql(f"select count(*) from {table}.snapshots").first()[0] == snapshots + 1
    added = spark.sql(f"select target_table, lines, lag from {table} where lines = 3").collect()
    assert [tuple(row) for row in added] == [("a.m1", 3, None)]  # a column the select lacks is null
    with pytest.raises(Exception, match="are 1, expected 2"):
        kept_rows_in_driver.append(spark, {"append_to": table, "select": "select * from (values ('a.m4')) as t (target_table)", "rows": 2})
    assert spark.sql(f"select count(*) from {table}.snapshots").first()[0] == snapshots + 1


def test_the_quarantine_is_read_again_only_at_a_new_snapshot_or_further_back(spark, table, monkeypatch):
    quarantine = f"{table}_quarantine"
    spark.sql(f"create table {quarantine} (landed_at timestamp, reason string) using iceberg")
    spark.sql(f"insert into {quarantine} values (timestamp '2026-11-27 10:30:00', 'since m1'), "
              "(timestamp '2026-11-27 11:30:00', 'since both')")
    read_rows, reads = kept_rows_in_driver.read_rows, []

    def counted(spark, name, *arguments, **options):
        reads.append(name)
        return read_rows(spark, name, *arguments, **options)

    monkeypatch.setattr(kept_rows_in_driver, "read_rows", counted)
    assert kept_rows_in_driver.lines_quarantined(spark, table, quarantine, ["a.m1"]) == [1]
    assert kept_rows_in_driver.lines_quarantined(spark, table, quarantine, ["a.m1"]) == [1]
    assert reads.count(quarantine) == 1
    # a.m4 never ran: every line counts, read from the start.
    assert kept_rows_in_driver.lines_quarantined(spark, table, quarantine, ["a.m1", "a.m4"]) == [1, 2]
    assert reads.count(quarantine) == 2
    spark.sql(f"insert into {quarantine} values (timestamp '2026-11-27 12:30:00', 'new')")
    assert kept_rows_in_driver.lines_quarantined(spark, table, quarantine, ["a.m1", "a.m4"]) == [2, 3]
    assert reads.count(quarantine) == 3
