"""A small table's maintenance in the driver (adapter/dbt/adapters/cdc_spark/driver_maintenance.py),
on real Iceberg tables. Compaction (SmallTableCompaction.java): the same rows afterwards, each
partition's files as one, the delete files gone; a table too large, or a commit of another writer in
between, changes nothing. Snapshot expiry (SnapshotExpiry.java): what Spark's expire_snapshots
expires and deletes on a twin table, the kept snapshots still readable, a branch's head kept."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Callable

import pytest
from py4j.protocol import Py4JJavaError
from pyspark.testing import assertDataFrameEqual

from dbt.adapters.cdc_spark import driver_maintenance

_tables = itertools.count(1)
COLUMNS = ("id int, name string, amount decimal(12, 2), ratio double, active boolean, born date, "
           "changed timestamp, payload binary, table_name string")


@pytest.fixture()
def table(spark) -> str:
    """A format-2 merge-on-read table of 30 rows of every column type the mirrors hold, in three
    data files, with position deletes from a DELETE and an UPDATE."""
    name = f"driver_maintenance.t{next(_tables)}"
    spark.sql("create namespace if not exists driver_maintenance")
    spark.sql(f"create table {name} ({COLUMNS}) using iceberg tblproperties ('format-version' = '2', "
              "'write.delete.mode' = 'merge-on-read', 'write.update.mode' = 'merge-on-read')")
    for first in (0, 10, 20):
        write_rows(spark, name, first, first + 10)
    spark.sql(f"delete from {name} where id in (3, 14, 25)")
    spark.sql(f"update {name} set name = 'changed' where id = 7")
    return name


def write_rows(spark, name: str, first: int, last: int) -> None:
    spark.range(first, last).selectExpr(
        "cast(id as int) as id", "case when id % 9 = 0 then null else concat('name ', id) end as name",
        "cast(id * 1.25 as decimal(12, 2)) as amount", "id / 3.0 as ratio", "id % 2 = 0 as active",
        "date_add(date '2020-01-01', cast(id as int)) as born",
        "timestamp '2024-05-06 07:08:09.123456' + make_interval(0, 0, 0, 0, 0, 0, id) as changed",
        "cast(concat('b', id) as binary) as payload", "concat('inventory.t', id % 2) as table_name",
    ).coalesce(1).writeTo(name).append()


def files(spark, table: str, content: int) -> list[str]:
    return [row.file_path for row in spark.sql(f"select file_path from {table}.files where content = {content}").collect()]


def current_snapshot(spark, table: str) -> int:
    return spark.sql(f"select snapshot_id from {table}.refs where name = 'main'").first().snapshot_id


def test_the_rows_stay_the_same_in_one_data_file_without_delete_files(spark, table):
    before = spark.table(table).collect()
    rewritten = len(files(spark, table, 0))
    deletes = len(files(spark, table, 1))
    assert rewritten >= 3 and deletes >= 2

    counts = driver_maintenance.compact(spark, table)

    assert counts == {"files_added": 1, "files_removed": rewritten + deletes, "delete_files_left": 0}
    assertDataFrameEqual(spark.table(table), before)
    assert len(files(spark, table, 0)) == 1 and files(spark, table, 1) == []
    (snapshot,) = spark.sql(f"select operation, summary from {table}.snapshots order by committed_at desc limit 1").collect()
    assert snapshot.operation == "replace" and snapshot.summary["cdc-merge.maintenance"] == "compaction-in-driver"
    # A table with nothing worth rewriting is left alone: no commit.
    unchanged = current_snapshot(spark, table)
    assert driver_maintenance.compact(spark, table) == {"files_added": 0, "files_removed": 0, "delete_files_left": 0}
    assert current_snapshot(spark, table) == unchanged


def test_a_partitioned_table_is_compacted_per_partition_of_its_current_spec(spark):
    """Files written before the table was partitioned make every file rewritten, into the current
    spec's partitions; after that, a partition of one file without deletes is left as it was."""
    name = f"driver_maintenance.t{next(_tables)}"
    spark.sql(f"create table {name} ({COLUMNS}) using iceberg tblproperties ('format-version' = '2', "
              "'write.delete.mode' = 'merge-on-read')")
    write_rows(spark, name, 0, 10)
    write_rows(spark, name, 10, 20)
    spark.sql(f"alter table {name} add partition field table_name")
    write_rows(spark, name, 20, 30)
    before = spark.table(name).collect()

    driver_maintenance.compact(spark, name)

    assertDataFrameEqual(spark.table(name), before)
    assert sorted((row.table_name, row.spec_id) for row in data_files(spark, name)) == [("inventory.t0", 1), ("inventory.t1", 1)]

    spark.sql(f"delete from {name} where id = 21")
    spark.sql(f"insert into {name} select id + 100, name, amount, ratio, active, born, changed, payload, 'inventory.alone' "
              f"from {name} where id = 20")
    kept = {row.table_name: row.file_path for row in data_files(spark, name) if row.table_name != "inventory.t1"}
    before = spark.table(name).collect()

    counts = driver_maintenance.compact(spark, name)

    assertDataFrameEqual(spark.table(name), before)
    after = data_files(spark, name)
    assert sorted(row.table_name for row in after) == ["inventory.alone", "inventory.t0", "inventory.t1"]
    assert {row.table_name: row.file_path for row in after if row.table_name != "inventory.t1"} == kept
    assert files(spark, name, 1) == []
    assert counts == {"files_added": 1, "files_removed": 2, "delete_files_left": 0}


def data_files(spark, table: str) -> list:
    return spark.sql(f"select partition.table_name as table_name, spec_id, file_path from {table}.files where content = 0").collect()


def test_a_table_larger_than_the_limit_is_left_to_spark(spark, table):
    unchanged = current_snapshot(spark, table)
    assert driver_maintenance.compact(spark, table, max_bytes=1000) is None
    assert current_snapshot(spark, table) == unchanged


def test_a_delete_committed_by_another_writer_in_between_fails_the_compaction_and_stays(spark, table):
    compaction = driver_maintenance.jvm_class(spark, driver_maintenance.COMPACTION_CLASS).write(
        spark._jsparkSession, table, driver_maintenance.DRIVER_COMPACTION_MAX_BYTES)
    location = spark.sql(f"describe table extended {table}").where("col_name = 'Location'").first().data_type
    written = sorted((Path(location.removeprefix("file:")) / "data").glob("cdc-merge-compacted-*"))
    assert len(written) == 1
    spark.sql(f"delete from {table} where id = 11")
    after_delete = spark.table(table).collect()

    with pytest.raises(Py4JJavaError, match="[Cc]annot commit|[Ff]ound new conflicting delete"):
        compaction.commit()

    assertDataFrameEqual(spark.table(table), after_delete)
    assert 11 not in [row.id for row in after_delete]
    assert not written[0].exists()


def twin_tables(spark) -> tuple[str, str]:
    """Two tables written the same way: 9 snapshots of appends, position deletes and a compaction."""
    names = []
    for _ in range(2):
        name = f"driver_compaction.t{next(_tables)}"
        spark.sql(f"create table {name} ({COLUMNS}) using iceberg tblproperties ('format-version' = '2', "
                  "'write.delete.mode' = 'merge-on-read')")
        for first in (0, 10, 20, 30):
            write_rows(spark, name, first, first + 10)
            spark.sql(f"delete from {name} where id = {first + 1}")
        spark.sql(f"call system.rewrite_data_files(table => '{name}', options => map('min-input-files', '2', "
                  "'delete-file-threshold', '1'))").collect()
        names.append(name)
    return names[0], names[1]


def snapshots(spark, table: str) -> list[int]:
    return [row.snapshot_id for row in spark.sql(f"select snapshot_id from {table}.snapshots order by committed_at").collect()]


def test_expiry_in_the_driver_expires_and_deletes_what_the_procedure_does(spark):
    """Twin tables (their files may differ by one: Spark's writes are not deterministic) expired down
    to their compaction's snapshot, one in the driver, one by the procedure: each keeps that snapshot,
    readable, and no data or delete file it does not reference; the driver counts what it deleted."""
    in_driver, by_spark = twin_tables(spark)
    kept = snapshots(spark, in_driver)[-1:]  # the compaction: the files before it go
    kept_by_spark = snapshots(spark, by_spark)[-1:]
    oldest = spark.sql(f"select committed_at from {by_spark}.snapshots where snapshot_id = {kept_by_spark[0]}").first().committed_at
    rows = spark.table(in_driver).collect()
    on_disk = data_folder_files(spark, in_driver)

    counts = driver_maintenance.expire(spark, in_driver, [str(snapshot) for snapshot in kept])
    spark.sql(f"call system.expire_snapshots(table => '{by_spark}', older_than => timestamp '{oldest}', retain_last => 1)").collect()

    assert snapshots(spark, in_driver) == kept and snapshots(spark, by_spark) == kept_by_spark
    assert counts["snapshots_expired"] == 8
    assert counts["files_removed"] == len(on_disk - data_folder_files(spark, in_driver)) > 0
    for table in (in_driver, by_spark):
        referenced = {row.file_path.removeprefix("file:") for row in spark.sql(f"select file_path from {table}.all_files").collect()}
        assert referenced and data_folder_files(spark, table) == referenced, table
    assertDataFrameEqual(spark.table(in_driver), rows)
    assertDataFrameEqual(spark.sql(f"select * from {in_driver} version as of {kept[0]}"), rows)


def data_folder_files(spark, table: str) -> set[str]:
    location = spark.sql(f"describe table extended {table}").where("col_name = 'Location'").first().data_type
    return {str(path) for path in (Path(location.removeprefix("file:")) / "data").rglob("*.parquet")}


def test_expiry_in_the_driver_keeps_a_branch_head_and_leaves_a_large_table_alone(spark):
    table, _ = twin_tables(spark)
    history = snapshots(spark, table)
    spark.sql(f"alter table {table} create branch cdc_merge_batch as of version {history[1]}")
    branch_rows = spark.sql(f"select * from {table}.branch_cdc_merge_batch").collect()

    assert driver_maintenance.expire(spark, table, [str(history[-1])], max_files=1) is None
    assert snapshots(spark, table) == history

    driver_maintenance.expire(spark, table, [str(history[-1])])

    assert snapshots(spark, table) == [history[1], history[-1]]
    assertDataFrameEqual(spark.sql(f"select * from {table}.branch_cdc_merge_batch"), branch_rows)


# Helpers of tests/test_maintenance.py, which runs maintenance through dbt on either path.
def record_compactions(monkeypatch, statements: list[str]) -> Callable[[], list[str]]:
    """What lists the tables compacted so far: in the driver (driver_maintenance.py), then those Spark's
    rewrite_data_files compacted among statements (record_statements)."""
    in_driver = []
    compact = driver_maintenance.compact

    def recorded(spark, table, *args, **kwargs):
        in_driver.append(table)
        return compact(spark, table, *args, **kwargs)

    monkeypatch.setattr(driver_maintenance, "compact", recorded)

    def compacted() -> list[str]:
        return in_driver + [sql.split("table => '")[1].split("'")[0] for sql in statements if "rewrite_data_files" in sql]
    return compacted


def die_at_expiry(monkeypatch, dies_at: str) -> None:
    """The run dies (raises) where the driver would expire the snapshots of the table dies_at names
    ("expiry of <table>", driver_maintenance.py)."""
    expire = driver_maintenance.expire

    def dying(spark, table, *args, **kwargs):
        if dies_at == f"expiry of {table}":
            raise RuntimeError(f"killed at {dies_at}")
        return expire(spark, table, *args, **kwargs)

    monkeypatch.setattr(driver_maintenance, "expire", dying)
