"""Replacing a view of the embedded target's catalog (HadoopViewOperations.java) again and again, as
dbt's view materialization does on every run: a replace that changes nothing a reader sees commits
nothing, a changed one commits and is read back, and the view's metadata folder keeps the current
metadata file and those of the few versions before it, not one file per replace."""

from __future__ import annotations

import pytest

# HadoopViewOperations.PREVIOUS_VERSIONS_KEPT, plus the current version.
VERSIONS_KEPT = 5


@pytest.fixture
def schema(spark, warehouse):
    spark.sql("create namespace if not exists catalog_views")
    spark.sql("create table if not exists catalog_views.events (id int) using iceberg")
    spark.sql("insert into catalog_views.events values (1), (2), (3)")
    yield warehouse / "catalog_views"
    for row in spark.sql("show views in catalog_views").collect():
        spark.sql(f"drop view if exists catalog_views.{row.viewName}")
    spark.sql("drop table if exists catalog_views.events")


def metadata_files(folder):
    return sorted(path.name for path in folder.iterdir() if path.name.endswith(".metadata.json"))


def state(folder):
    """Every file of the view's metadata folder with its modification time, and the file the hint names."""
    files = {path.name: path.stat().st_mtime_ns for path in folder.iterdir()}
    return files, (folder / "version-hint.text").read_text()


def ids(spark, view):
    return sorted(row.id for row in spark.table(view).collect())


def test_a_view_replaced_unchanged_commits_nothing_and_a_changed_one_commits(spark, schema):
    folder = schema / "replaced" / "view-metadata"
    unchanged = "create or replace view catalog_views.replaced comment 'ids' as select id from catalog_views.events"
    spark.sql(unchanged)
    first = state(folder)

    for _ in range(30):
        spark.sql(unchanged)

    assert state(folder) == first  # no file written or rewritten, the hint untouched
    assert len(metadata_files(folder)) == 1
    assert ids(spark, "catalog_views.replaced") == [1, 2, 3]

    # A changed query, schema or comment commits, and readers see it.
    spark.sql("create or replace view catalog_views.replaced comment 'ids' as select id from catalog_views.events where id > 1")
    assert ids(spark, "catalog_views.replaced") == [2, 3]
    assert state(folder)[1] != first[1]
    spark.sql("create or replace view catalog_views.replaced comment 'ids' as select id, id * 10 as tenfold from catalog_views.events where id > 1")
    assert [tuple(row) for row in spark.table("catalog_views.replaced").orderBy("id").collect()] == [(2, 20), (3, 30)]
    before_comment = state(folder)[1]
    spark.sql("create or replace view catalog_views.replaced comment 'other' as select id, id * 10 as tenfold from catalog_views.events where id > 1")
    assert state(folder)[1] != before_comment
    assert len(metadata_files(folder)) == 4


def test_a_view_replaced_many_times_keeps_the_metadata_of_its_last_few_versions(spark, schema):
    folder = schema / "bounded" / "view-metadata"
    for bound in range(1, 21):
        spark.sql(f"create or replace view catalog_views.bounded as select id from catalog_views.events where id <= {bound}")
        spark.sql("create or replace view catalog_views.bounded as select id from catalog_views.events "
                  f"where id <= {bound}")
        assert len(metadata_files(folder)) <= VERSIONS_KEPT

    files = metadata_files(folder)
    assert len(files) == VERSIONS_KEPT
    # The newest versions, the hint's among them, each with its checksum and no checksum without its file.
    assert [int(name.split("-")[0]) for name in files] == list(range(20 - VERSIONS_KEPT, 20))
    assert (folder / "version-hint.text").read_text().endswith(files[-1])
    checksums = sorted(path.name for path in folder.iterdir() if path.name.endswith(".crc"))
    assert checksums == sorted([f".{name}.crc" for name in files] + [".version-hint.text.crc"])
    assert ids(spark, "catalog_views.bounded") == [1, 2, 3]

    # A view loaded before its metadata file was deleted still answers, with the current version.
    namespace = spark._sc._gateway.new_array(spark._jvm.String, 1)
    namespace[0] = "catalog_views"
    catalog = spark._jsparkSession.sessionState().catalogManager().currentCatalog()
    loaded = catalog.loadView(spark._jvm.org.apache.spark.sql.connector.catalog.Identifier.of(namespace, "bounded"))
    for bound in range(VERSIONS_KEPT + 1):
        spark.sql(f"create or replace view catalog_views.bounded as select id from catalog_views.events where id = {bound}")
    assert files[-1] not in metadata_files(folder)
    assert loaded.query() == f"select id from catalog_views.events where id = {VERSIONS_KEPT}"
    assert ids(spark, "catalog_views.bounded") == []
