"""Where a mirror's lock across machines is taken: the catalog's PostgreSQL database, read from the
Spark settings of the profile (python_jobs/catalog_locks.py)."""

from __future__ import annotations

from python_jobs.catalog_locks import CatalogDatabase, catalog_database, lock_key

JDBC = {"spark.sql.defaultCatalog": "lake", "spark.sql.catalog.lake.type": "jdbc",
        "spark.sql.catalog.lake.uri": "jdbc:postgresql://db.internal:6432/iceberg_catalog?sslmode=require",
        "spark.sql.catalog.lake.jdbc.user": "cdc", "spark.sql.catalog.lake.jdbc.password": "secret"}


def test_a_jdbc_catalog_on_postgresql_names_its_database():
    assert catalog_database(JDBC) == CatalogDatabase("lake", "db.internal", 6432, "iceberg_catalog", "cdc", "secret")
    in_uri = {**JDBC, "spark.sql.catalog.lake.uri": "jdbc:postgresql://db/cat?user=u&password=p"}
    del in_uri["spark.sql.catalog.lake.jdbc.user"], in_uri["spark.sql.catalog.lake.jdbc.password"]
    assert catalog_database(in_uri) == CatalogDatabase("lake", "db", 5432, "cat", "u", "p")


def test_other_catalogs_have_no_database_to_lock_in():
    assert catalog_database({**JDBC, "spark.sql.catalog.lake.type": "hadoop"}) is None
    assert catalog_database({**JDBC, "spark.sql.catalog.lake.uri": "jdbc:mysql://db/cat"}) is None
    assert catalog_database({**JDBC, "spark.sql.defaultCatalog": "other"}) is None


def test_each_mirror_has_its_own_key_whatever_its_name_case():
    database = catalog_database(JDBC)
    assert database is not None
    key = lock_key(database, "mirror", "mirror.shop_orders")
    assert -(2**63) <= key < 2**63
    assert key == lock_key(database, "mirror", "Mirror.Shop_Orders")
    assert key != lock_key(database, "mirror", "mirror.shop_customers")
