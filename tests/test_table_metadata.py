"""A table's Iceberg metadata as the idle check, maintenance and the chunk plan read it
(adapter/dbt/adapters/cdc_spark/table_metadata.py), on real Iceberg tables: the helper jar's one
call (jvm/iceberg/cdc_merge/iceberg/MetadataSummary.java) gives what py4j reads object by object,
and what the metadata tables say."""

from __future__ import annotations

import itertools

import pytest

from dbt.adapters.cdc_spark import iceberg_jvm, table_metadata

_tables = itertools.count(1)


@pytest.fixture
def table_with_history(spark):
    """An Iceberg table with appends, a delete and the model checksum property."""
    name = f"table_metadata.t{next(_tables)}"
    spark.sql("create namespace if not exists table_metadata")
    spark.sql(f"create table {name} (id bigint, note string) using iceberg "
              f"tblproperties ('format-version' = '2', '{table_metadata.MODEL_CHECKSUM_PROPERTY}' = 'abc123')")
    for first in (0, 10, 20):
        spark.range(first, first + 10).selectExpr("id", "cast(id as string) as note").writeTo(name).append()
    spark.sql(f"delete from {name} where id < 5")
    return name


def test_the_helper_reads_what_py4j_reads(spark, table_with_history, monkeypatch):
    with_helper = table_metadata.snapshot_log(spark, table_with_history), table_metadata.mirror_metadata(spark, table_with_history)
    monkeypatch.setenv("CDC_MERGE_ICEBERG_JVM_JAR", "")
    assert iceberg_jvm.jvm_class(spark, table_metadata.METADATA_SUMMARY_CLASS) is None
    without = table_metadata.snapshot_log(spark, table_with_history), table_metadata.mirror_metadata(spark, table_with_history)

    assert with_helper[0] == without[0]
    ages = [metadata.pop("older_snapshot_ages_seconds") for metadata in (with_helper[1], without[1])]
    assert with_helper[1] == without[1]
    assert len(ages[0]) == len(ages[1]) == 3 and all(age >= 0 for age in ages[0])


def test_the_snapshot_log_is_what_the_metadata_tables_say(spark, table_with_history):
    log = table_metadata.snapshot_log(spark, table_with_history)
    rows = spark.sql(f"select snapshot_id, parent_id, operation, cast(summary['added-records'] as bigint) as added, "
                     f"unix_millis(committed_at) as committed_ms from {table_with_history}.snapshots order by committed_at").collect()

    assert log["current"] == str(rows[-1].snapshot_id)
    assert log["snapshots"] == [
        {"snapshot_id": str(row.snapshot_id), "parent_id": str(row.parent_id) if row.parent_id is not None else None,
         "operation": row.operation, "added_records": row.added or 0, "committed_ms": row.committed_ms}
        for row in rows]
    metadata = table_metadata.mirror_metadata(spark, table_with_history)
    files = spark.sql(f"select count(*) as n from {table_with_history}.files where content = 0").first().n
    deletes = spark.sql(f"select count(*) as n from {table_with_history}.files where content > 0").first().n
    assert (metadata["data_files"], metadata["delete_files"], metadata["small_data_files"]) == (files, deletes, files)
    assert metadata["model_checksum"] == "abc123"


def test_a_table_without_snapshots_has_no_idle_facts(spark):
    name = f"table_metadata.t{next(_tables)}"
    spark.sql("create namespace if not exists table_metadata")
    spark.sql(f"create table {name} (id bigint) using iceberg")

    assert table_metadata.mirror_metadata(spark, name) is None
    assert table_metadata.snapshot_log(spark, name) == {"current": None, "snapshots": []}


def test_a_seq_column_s_upper_bound_is_its_newest_seq_where_its_bounds_are_kept_whole(spark):
    """The mirror's CREATE keeps _cdc_seq's bounds whole (target.sql seq_bounds_properties): the
    manifests then give the newest seq exactly, rows deleted since included. Iceberg's default
    truncates them to 16 characters and rounds the bound up, above every seq that shares the prefix."""
    spark.sql("create namespace if not exists table_metadata")
    seqs = [f"{n:020d}:{n:010d}" for n in (5, 30, 7, 12)]
    whole, truncated = (f"table_metadata.t{next(_tables)}" for _ in range(2))
    spark.sql(f"create table {whole} (id bigint, _cdc_seq string) using iceberg "
              "tblproperties ('format-version' = '2', 'write.delete.mode' = 'merge-on-read', "
              "'write.metadata.metrics.column._cdc_seq' = 'full')")
    spark.sql(f"create table {truncated} (id bigint, _cdc_seq string) using iceberg")

    assert table_metadata.column_upper_bound(spark, whole, "_cdc_seq") is None  # no data file yet
    for name in (whole, truncated):
        for first in (0, 2):  # two data files
            spark.createDataFrame([(first, seqs[first]), (first + 1, seqs[first + 1])], "id bigint, _cdc_seq string") \
                .coalesce(1).writeTo(name).append()
    spark.sql(f"delete from {whole} where _cdc_seq = '{seqs[1]}'")  # a position delete: the file keeps its bounds

    assert table_metadata.column_upper_bound(spark, whole, "_cdc_seq") == seqs[1]
    rounded_up = table_metadata.column_upper_bound(spark, truncated, "_cdc_seq")
    assert len(rounded_up) == 16 and rounded_up > max(seqs) and rounded_up[:15] == seqs[1][:15]
    assert table_metadata.column_upper_bound(spark, whole, "id") == table_metadata.UNKNOWN_BOUND  # not a string
    assert table_metadata.column_upper_bound(spark, "table_metadata.missing", "_cdc_seq") == table_metadata.UNKNOWN_BOUND
