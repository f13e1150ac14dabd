"""Dropping a table or view of the embedded target's catalog (CdcMergeHadoopCatalog.java) leaves its
name whole or gone at every moment: the folder stops being a table in one rename of its metadata
folder, then its files are deleted. A process killed between the two (tests/test_crash_points.py,
`table-drop`, kills one there) leaves files that no name refers to; these tests build that state
by hand and check what the catalog makes of it."""

from __future__ import annotations

import pytest
from pyspark.errors import AnalysisException


@pytest.fixture
def schema(spark, warehouse):
    spark.sql("create namespace if not exists catalog_drop")
    yield warehouse / "catalog_drop"
    for row in spark.sql("show tables in catalog_drop").collect():
        spark.sql(f"drop table if exists catalog_drop.{row.tableName}")


def test_a_dropped_table_and_view_leave_no_folder_and_their_names_can_be_made_again(spark, schema):
    spark.sql("create table catalog_drop.gone (id int) using iceberg")
    spark.sql("insert into catalog_drop.gone values (1), (2)")
    spark.sql("create or replace view catalog_drop.gone_view as select id from catalog_drop.gone")

    spark.sql("drop view catalog_drop.gone_view")
    spark.sql("drop table catalog_drop.gone")

    assert not (schema / "gone").exists() and not (schema / "gone_view").exists()
    spark.sql("create table catalog_drop.gone (id int) using iceberg")
    spark.sql("insert into catalog_drop.gone values (3)")
    assert [row.id for row in spark.table("catalog_drop.gone").collect()] == [3]


def test_a_drop_that_died_after_its_rename_leaves_no_table_and_the_name_can_be_made_again(spark, schema):
    spark.sql("create table catalog_drop.half (id int) using iceberg")
    spark.sql("insert into catalog_drop.half values (1)")
    spark.sql("insert into catalog_drop.half values (2)")
    folder = schema / "half"
    # The state a death right after the drop's rename leaves: the old data files, the metadata renamed away.
    (folder / "metadata").rename(folder / "metadata-dropped-killed")

    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.table("catalog_drop.half").collect()
    assert "half" not in {row.tableName for row in spark.sql("show tables in catalog_drop").collect()}
    assert spark.sql("show namespaces in catalog_drop").collect() == []  # not a namespace either

    spark.sql("create table catalog_drop.half (id int) using iceberg")
    spark.sql("insert into catalog_drop.half values (3)")
    assert [row.id for row in spark.table("catalog_drop.half").collect()] == [3]
    # The next drop takes the remains with it.
    spark.sql("drop table catalog_drop.half")
    assert not folder.exists()


def test_a_view_whose_hint_a_killed_commit_removed_is_still_the_view_it_was_replaced_with(spark, schema):
    spark.sql("create table catalog_drop.viewed (id int) using iceberg")
    spark.sql("insert into catalog_drop.viewed values (1), (2)")
    spark.sql("create or replace view catalog_drop.kept_view as select id from catalog_drop.viewed where id = 1")
    spark.sql("create or replace view catalog_drop.kept_view as select id from catalog_drop.viewed where id = 2")
    # A commit replaces the hint by deleting it and renaming a new one in place: killed in between, none is left.
    (schema / "kept_view" / "view-metadata" / "version-hint.text").unlink()

    assert [row.id for row in spark.table("catalog_drop.kept_view").collect()] == [2]
    assert "kept_view" in {row.viewName for row in spark.sql("show views in catalog_drop").collect()}
    spark.sql("create or replace view catalog_drop.kept_view as select id from catalog_drop.viewed")
    assert sorted(row.id for row in spark.table("catalog_drop.kept_view").collect()) == [1, 2]
    spark.sql("drop view catalog_drop.kept_view")
