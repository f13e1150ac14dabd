"""Each raw snapshot's events per source table (adapter/dbt/adapters/cdc_spark/snapshot_events.py
and jvm/iceberg/cdc_merge/iceberg/SnapshotEvents.java), on real Iceberg tables: the counts a
chunked mirror plans with are its own table's, as the rows themselves say."""

from __future__ import annotations

import itertools

from dbt.adapters.cdc_spark import snapshot_events

_tables = itertools.count(1)


def append(spark, table: str, events: dict[str, int]) -> str:
    """Appends events rows per table_name in one commit; the new snapshot's id."""
    rows = [(name, f"k{i}") for name, count in events.items() for i in range(count)]
    spark.createDataFrame(rows, "table_name string, key string").writeTo(table).append()
    return str(spark.sql(f"select snapshot_id from {table}.refs where name = 'main'").first().snapshot_id)


def new_table(spark, partitioned: bool = True) -> str:
    name = f"snapshot_events.raw{next(_tables)}"
    spark.sql("create namespace if not exists snapshot_events")
    spark.sql(f"create table {name} (table_name string, key string) using iceberg"
              + (" partitioned by (table_name)" if partitioned else ""))
    return name


def test_each_snapshot_counts_its_events_per_table(spark):
    table = new_table(spark)
    first = append(spark, table, {"shop.orders": 3, "shop.lines": 7})
    second = append(spark, table, {"shop.lines": 5})
    third = append(spark, table, {"shop.orders": 2})

    counts = snapshot_events.added_by_table(spark, table, [first, second, third])

    assert counts == {first: {"shop.orders": 3, "shop.lines": 7}, second: {"shop.lines": 5}, third: {"shop.orders": 2}}
    # The same as the rows each snapshot added.
    for snapshot_id, by_table in counts.items():
        rows = spark.read.option("snapshot-id", snapshot_id).table(table) if snapshot_id == first else (
            spark.read.option("start-snapshot-id", str(_parent(spark, table, snapshot_id)))
            .option("end-snapshot-id", snapshot_id).table(table))
        assert {row.table_name: row["count"] for row in rows.groupBy("table_name").count().collect()} == by_table


def _parent(spark, table: str, snapshot_id: str) -> int:
    return spark.sql(f"select parent_id from {table}.snapshots where snapshot_id = {snapshot_id}").first().parent_id


def test_files_written_before_the_table_was_partitioned_count_for_every_table(spark):
    table = new_table(spark, partitioned=False)
    before = append(spark, table, {"shop.orders": 2, "shop.lines": 4})
    spark.sql(f"alter table {table} add partition field table_name")
    after = append(spark, table, {"shop.orders": 1, "shop.lines": 1})

    counts = snapshot_events.added_by_table(spark, table, [before, after])

    assert counts == {before: {"*": 6}, after: {"shop.orders": 1, "shop.lines": 1}}


def test_unknown_snapshots_are_left_out_and_known_ones_are_kept(spark):
    table = new_table(spark)
    first = append(spark, table, {"shop.orders": 1})

    assert snapshot_events.added_by_table(spark, table, ["123", first]) == {first: {"shop.orders": 1}}
    spark.sql(f"drop table {table}")
    # Kept from the first ask: the snapshot's content never changes, so the dropped table is not read.
    assert snapshot_events.added_by_table(spark, table, [first]) == {first: {"shop.orders": 1}}


def test_the_helpers_lines_are_parsed_by_snapshot():
    text = "1\tshop.orders\t3\n1\tshop.lines\t7\n2\t*\t5\n9\tother\t1\nbroken\n"

    assert snapshot_events.parse_lines(text, ["1", "2"]) == {"1": {"shop.orders": 3, "shop.lines": 7}, "2": {"*": 5}}
