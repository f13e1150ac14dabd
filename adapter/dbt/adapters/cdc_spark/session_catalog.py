"""What dbt asks of the session's catalogs at the start of every invocation, asked of the JVM in dbt's
own SparkSession instead of by statements: the current catalog, its schemas, and the tables and views of
a schema.
Each statement is parsed, analyzed and turned into an agate table; a `cdc-run` cycle of the demo
asked six of them before any mirror ran."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Set, Tuple

_VIEW_CATALOG = "org.apache.spark.sql.connector.catalog.ViewCatalog"
# A name SHOW DATABASES lists as it is (others it quotes with backticks).
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_]+")


def current_catalog(spark: Any) -> Dict[str, str]:
    """The session's current catalog: its name, and its class as `set spark.sql.catalog.<name>` gives it."""
    name = _catalog_manager(spark).currentCatalog().name()
    return {"name": name, "class": spark.conf.get(f"spark.sql.catalog.{name}", "<undefined>")}


def schema_names(spark: Any, catalog_name: str) -> Optional[List[str]]:
    """The schemas (top-level namespaces) of catalog_name, as SHOW DATABASES lists them; None when the
    catalog cannot say (an empty Hadoop warehouse, a catalog without namespaces) or a name would need
    quoting there: the caller then asks by statement."""
    from py4j.protocol import Py4JError

    try:
        namespaces = _catalog_manager(spark).catalog(catalog_name).listNamespaces()
        names = [list(namespace) for namespace in namespaces]
    except Py4JError:
        return None
    if any(len(parts) != 1 or not _PLAIN_NAME.fullmatch(parts[0]) for parts in names):
        return None
    return [parts[0] for parts in names]


def schema_relations(spark: Any, catalog_name: str, schema: str) -> Optional[Tuple[List[str], Set[str]]]:
    """The names of the tables and of the views of schema in catalog_name, as SHOW TABLES and SHOW
    VIEWS list them (neither the session's temporary views); None when the catalog cannot say (no
    such schema, a catalog that is not a v2 one): the caller then asks by statement."""
    from py4j.protocol import Py4JError

    jvm = spark._jvm
    try:
        catalog = _catalog_manager(spark).catalog(catalog_name)
        namespace = spark.sparkContext._gateway.new_array(jvm.java.lang.String, 1)
        namespace[0] = schema
        tables = [identifier.name() for identifier in catalog.listTables(namespace)]
        views: Set[str] = set()
        if jvm.java.lang.Class.forName(_VIEW_CATALOG).isInstance(catalog):
            views = {identifier.name() for identifier in catalog.listViews(namespace)}
    except Py4JError:
        return None
    return tables, views


def _catalog_manager(spark: Any) -> Any:
    """The session's catalog manager, the session made active on the calling thread's JVM thread first:
    the manager reads the active session's settings, and where none is active (each Python thread
    calls through a JVM thread of its own) it would answer with Spark's defaults."""
    spark._jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)
    return spark._jsparkSession.sessionState().catalogManager()
