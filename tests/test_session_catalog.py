"""The current catalog, its schemas and a schema's tables and views, asked of the JVM
(adapter/dbt/adapters/cdc_spark/session_catalog.py), are what the statements they replace answer."""

from __future__ import annotations

import threading

from dbt.adapters.cdc_spark import session_catalog


def test_the_current_catalog_is_what_the_statements_say_on_any_thread(spark):
    name = spark.sql("select current_catalog() as name").first()["name"]
    setting = spark.sql(f"set spark.sql.catalog.{name}").first()["value"]
    assert setting != "<undefined>"  # the tests' session has a catalog of its own, not Spark's default
    asked = []
    # dbt asks from its worker threads, whose JVM threads have no active session.
    thread = threading.Thread(target=lambda: asked.append(session_catalog.current_catalog(spark)))
    thread.start()
    thread.join()
    assert asked == [{"name": name, "class": setting}]


def test_a_schemas_tables_and_views_are_what_show_tables_and_show_views_list(spark):
    spark.sql("create namespace if not exists session_catalog_listed")
    spark.sql("create table if not exists session_catalog_listed.kept (id int) using iceberg")
    spark.sql("create table if not exists session_catalog_listed.other (id int) using iceberg")
    spark.sql("create or replace view session_catalog_listed.seen as select id from session_catalog_listed.kept")
    spark.sql("create or replace temporary view session_catalog_temporary as select 1 as id")
    catalog = session_catalog.current_catalog(spark)["name"]

    tables, views = session_catalog.schema_relations(spark, catalog, "session_catalog_listed")

    shown = spark.sql("show tables in session_catalog_listed").collect()
    assert sorted(tables) == sorted(row.tableName for row in shown if not row.isTemporary) == ["kept", "other"]
    assert views == {row.viewName for row in spark.sql("show views in session_catalog_listed").collect() if not row.isTemporary} == {"seen"}
    # A schema that does not exist: not known here, so the statements answer (and fail) as before.
    assert session_catalog.schema_relations(spark, catalog, "session_catalog_absent") is None


def test_the_schemas_are_what_show_databases_lists(spark):
    spark.sql("create namespace if not exists session_catalog_schema")
    catalog = session_catalog.current_catalog(spark)["name"]

    names = session_catalog.schema_names(spark, catalog)

    assert sorted(names) == sorted(row[0] for row in spark.sql("show databases").collect())
    assert "session_catalog_schema" in names
    spark.sql("drop namespace session_catalog_schema")
    assert "session_catalog_schema" not in session_catalog.schema_names(spark, catalog)
