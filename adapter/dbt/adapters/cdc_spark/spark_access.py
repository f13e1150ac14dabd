"""Where dbt's Spark SQL runs, asked in one place: in this process's SparkSession (the profile's
method session), or through a Thrift server (method thrift), where the apply's helpers are the
catalog's procedures when it has them. A mixin of CdcSparkAdapter, used by its other mixins."""

from typing import Any, Optional

from dbt.adapters.base import available
from dbt.adapters.base.meta import AdapterMeta
from dbt.adapters.spark.connections import SparkConnectionMethod

from dbt.adapters.cdc_spark.python_session import dbt_spark_session


class SparkAccess(metaclass=AdapterMeta):
    def _in_process(self) -> bool:
        """dbt's SparkSession is in this process: its JVM, Iceberg's metadata and the session's views are here."""
        return self.connections.profile.credentials.method == SparkConnectionMethod.SESSION  # type: ignore[attr-defined]

    def _on_thrift(self) -> bool:
        return self.connections.profile.credentials.method == SparkConnectionMethod.THRIFT  # type: ignore[attr-defined]

    def _session_in_process(self) -> Optional[Any]:
        """dbt's own SparkSession where it is in this process, else None (a Thrift server's is elsewhere)."""
        if not self._in_process():
            return None
        return dbt_spark_session(self.connections.profile.credentials.server_side_parameters)  # type: ignore[attr-defined]

    @available
    def cdc_analyzed_plan(self, sql: str) -> Optional[str]:
        """model_rows.sql: a query's analyzed plan as `explain extended` shows it, from dbt's SparkSession
        where it is in this process (its analysis alone: about a quarter of explain's time), else None."""
        session = self._session_in_process()
        if session is None:
            return None
        analyzed = session.sql(sql)._jdf.queryExecution().analyzed()
        return f"== Analyzed Logical Plan ==\n{analyzed.schema().simpleString()}\n{analyzed.treeString()}"
