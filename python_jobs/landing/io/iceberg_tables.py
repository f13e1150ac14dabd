"""The Iceberg table behind a name, as Spark SQL resolves it: for the landing's raw table identity
(sinks.py) and the adapter's loaded tables (cdc_spark/loaded_tables.py)."""

from __future__ import annotations

from typing import Any, Optional

SPARK_TABLE_CLASS = "org.apache.iceberg.spark.source.SparkTable"


def iceberg_table(spark: Any, table: str) -> Optional[Any]:
    """The Iceberg table (a JVM object) behind table, resolved by analysis only (no job); None when
    the name is not an Iceberg table."""
    plan = spark._jsparkSession.table(table).queryExecution().analyzed()
    while plan.getClass().getSimpleName() == "SubqueryAlias":
        plan = plan.child()
    if plan.getClass().getSimpleName() != "DataSourceV2Relation":
        return None
    spark_table = plan.table()
    return spark_table.table() if spark_table.getClass().getName() == SPARK_TABLE_CLASS else None
