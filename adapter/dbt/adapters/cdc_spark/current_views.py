"""A view that dbt would create again exactly as it stands: its query text, its columns and the catalog
its names resolve in are those of the model's compiled SQL now. Every `dbt run` of the landing
(`schema_history`) created its view again: Spark parsed and analyzed the statement and the catalog
loaded and compared the view (committing nothing for an unchanged one), 0.06-0.11 s of the demo's
cycle; asking the catalog and analyzing the query (no job runs) takes 0.02-0.03 s. The stored view
is read each time (never kept), so a view replaced or dropped by anyone else is seen."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple

from dbt.adapters.cdc_spark.session_catalog import catalog_manager, is_view_catalog, namespace_array

Columns = Tuple[Tuple[str, str], ...]


@dataclass(frozen=True)
class ViewDefinition:
    """What decides a view's rows and shape: its query's text, the catalog and namespace its unqualified
    names resolve in, and its columns (name, Spark type)."""

    query: str
    catalog: str
    namespace: Tuple[str, ...]
    columns: Columns


def same_view(stored: ViewDefinition, wanted: ViewDefinition) -> bool:
    """Whether creating wanted would give the view stored. Spark keeps the query's text as parsed, without
    the whitespace around it; nullability is left out (a view's columns are nullable in Iceberg)."""
    return (stored.query.strip() == wanted.query.strip() and stored.catalog == wanted.catalog
            and stored.namespace == wanted.namespace and stored.columns == wanted.columns)


def stored_view(spark: Any, catalog_name: str, schema: str, name: str) -> Optional[ViewDefinition]:
    """The view schema.name of catalog_name as the catalog holds it now; None if it is not a view there
    or the catalog keeps no views."""
    from py4j.protocol import Py4JError

    jvm = spark._jvm
    try:
        catalog = catalog_manager(spark).catalog(catalog_name)
        if not is_view_catalog(spark, catalog):
            return None
        identifier = jvm.org.apache.spark.sql.connector.catalog.Identifier.of(namespace_array(spark, [schema]), name)
        if not catalog.viewExists(identifier):
            return None
        view = catalog.loadView(identifier)
        return ViewDefinition(query=view.query(), catalog=view.currentCatalog(),
                              namespace=tuple(view.currentNamespace()), columns=_columns(view.schema()))
    except Py4JError:
        return None


def query_view(spark: Any, sql: str) -> Optional[ViewDefinition]:
    """The view that `create view ... as sql` would make now: the query analyzed in dbt's session (no
    job runs), with the session's current catalog and namespace. None if the query does not analyze
    (the create then fails with Spark's own message)."""
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    try:
        columns = _columns(spark.sql(sql)._jdf.schema())
        manager = catalog_manager(spark)
        return ViewDefinition(query=sql, catalog=manager.currentCatalog().name(),
                              namespace=tuple(manager.currentNamespace()), columns=columns)
    except (Py4JError, PySparkException):
        return None


def _columns(struct: Any) -> Columns:
    return tuple((field.name(), field.dataType().simpleString()) for field in struct.fields())


def may_keep_view(settings: dict) -> bool:
    """Whether the view materialization may leave a current view as it is, given the model's settings:
    not with hooks or grants to run, docs to persist, a contract to check, or a full refresh asked for
    (each of those is done by creating the view again)."""
    persist_docs = settings.get("persist_docs") or {}
    return not (settings.get("hooks") or settings.get("grants") or settings.get("contract")
                or settings.get("full_refresh") or persist_docs.get("relation") or persist_docs.get("columns"))
