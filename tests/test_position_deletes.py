"""Deleting rows by position (adapter/dbt/adapters/cdc_spark/position_deletes.py and
jvm/iceberg/cdc_merge/iceberg/PositionDeletes.java), on real Iceberg tables: the rows at the
positions given go, nothing else, and positions that do not fit the table are refused before
anything is committed."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from pyspark.testing import assertDataFrameEqual

from dbt.adapters.cdc_spark import position_deletes

BRANCH = "cdc_merge_batch"
_tables = itertools.count(1)


@pytest.fixture()
def table(spark) -> str:
    """An unpartitioned format-2 table of ids 0-9 in two data files (0-4, 5-9), with a branch."""
    name = f"position_deletes.t{next(_tables)}"
    spark.sql("create namespace if not exists position_deletes")
    spark.sql(f"create table {name} (id int, title string) using iceberg tblproperties ('format-version' = '2')")
    for first in (0, 5):
        spark.range(first, first + 5).selectExpr("cast(id as int) as id", "concat('v', id) as title").coalesce(1).writeTo(name).append()
    spark.sql(f"alter table {name} create branch {BRANCH}")
    return name


def positions_of(table: str, ids: str) -> str:
    return f"select xxhash64(_file) as file_hash, _pos as pos from {table}.branch_{BRANCH} where id in ({ids})"


def branch_ids(spark, table: str) -> list[int]:
    return [row.id for row in spark.sql(f"select id from {table}.branch_{BRANCH} order by id").collect()]


def delete_files_written(spark, table: str) -> list[Path]:
    location = spark.sql(f"describe table extended {table}").where("col_name = 'Location'").first().data_type
    return sorted((Path(location.removeprefix("file:")) / "data").glob("cdc-merge-deletes-*"))


def test_the_rows_at_the_positions_go_one_delete_file_per_data_file(spark, table):
    files = position_deletes.delete_rows(spark, table, BRANCH, positions_of(table, "1, 3, 8"), 3)

    assert files == 2
    assert len(delete_files_written(spark, table)) == 2
    assert branch_ids(spark, table) == [0, 2, 4, 5, 6, 7, 9]
    assert [row.id for row in spark.sql(f"select id from {table} order by id").collect()] == list(range(10))
    # Each delete file names the one data file it deletes from.
    assertDataFrameEqual(
        spark.sql(f"select referenced_data_file, record_count from {table}.delete_files version as of '{BRANCH}'"),
        spark.sql(f"select _file as referenced_data_file, count(*) as record_count from {table} "
                  "where id in (1, 3, 8) group by _file"),
    )
    (summary,) = spark.sql(f"select summary from {table}.snapshots where snapshot_id = "
                           f"(select snapshot_id from {table}.refs where name = '{BRANCH}')").collect()
    assert summary.summary["cdc-merge.deletes"] == "by-position"


@pytest.mark.parametrize("positions_sql, expected, refusal", [
    ("{positions}", 4, "are 3, expected 4"),
    ("select file_hash, pos + 10 as pos from ({positions})", 3, "which has 5 rows"),
    ("select file_hash, 0 as pos from ({positions})", 3, "positions must ascend, each once"),
    ("select file_hash + 1 as file_hash, pos from ({positions})", 3, "it is not a live data file"),
    ("select cast(null as bigint) as file_hash, pos from ({positions})", 3, "it is not a live data file"),
    ("select file_hash, cast(null as bigint) as pos from ({positions})", 3, "are 0, expected 3"),
])
def test_positions_that_do_not_fit_are_refused_and_their_files_removed(spark, table, positions_sql, expected, refusal):
    sql = positions_sql.format(positions=positions_of(table, "1, 3, 8"))
    with pytest.raises(Exception, match=refusal):
        position_deletes.delete_rows(spark, table, BRANCH, sql, expected)

    assert branch_ids(spark, table) == list(range(10))
    assert spark.sql(f"select * from {table}.delete_files version as of '{BRANCH}'").count() == 0
    assert delete_files_written(spark, table) == []


def test_positions_read_before_the_branch_was_rewritten_are_refused(spark, table):
    positions = spark.sql(positions_of(table, "1, 3")).collect()
    # The branch rewritten after the positions were found (as compaction would): the files they name are gone.
    spark.sql(f"insert overwrite {table}.branch_{BRANCH} select * from {table}.branch_{BRANCH}")
    values = ", ".join(f"({row.file_hash}, {row.pos})" for row in positions)
    with pytest.raises(Exception, match="it is not a live data file"):
        position_deletes.delete_rows(
            spark, table, BRANCH, f"select col1 as file_hash, col2 as pos from values {values}", 2)
    assert branch_ids(spark, table) == list(range(10))


def test_a_delete_file_that_cannot_be_written_fails_the_commit(spark, table, tmp_path):
    """The files are written on several threads: a write that fails fails the call with its own
    error, and nothing is committed."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    spark.sql(f"alter table {table} set tblproperties ('write.data.path' = 'file://{blocker}/data')")
    with pytest.raises(Exception, match="not-a-folder"):
        position_deletes.delete_rows(spark, table, BRANCH, positions_of(table, "1, 3, 8"), 3)

    assert branch_ids(spark, table) == list(range(10))
    assert spark.sql(f"select * from {table}.delete_files version as of '{BRANCH}'").count() == 0


def test_only_unpartitioned_format_2_tables_are_supported(spark, table):
    assert position_deletes.unsupported_reason(spark, table) is None

    spark.sql(f"alter table {table} add partition field bucket(4, id)")
    assert "it is partitioned" in position_deletes.unsupported_reason(spark, table)

    format_3 = f"position_deletes.t{next(_tables)}"
    spark.sql(f"create table {format_3} (id int) using iceberg tblproperties ('format-version' = '3')")
    assert "format-version 3" in position_deletes.unsupported_reason(spark, format_3)
