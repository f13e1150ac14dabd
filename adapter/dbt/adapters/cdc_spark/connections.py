import dataclasses
import os
import sys
from dataclasses import dataclass
from typing import Any, Dict, List, Tuple

from dbt.adapters.contracts.connection import Connection
from dbt.adapters.spark.connections import (
    PyhiveConnectionWrapper,
    SparkConnectionManager,
    SparkConnectionMethod,
    SparkCredentials,
)

# What Spark's Thrift server describes a statement without rows with (DDL, INSERT, MERGE): one
# string column "Result" (SparkExecuteStatementOperation), whose row set then has no columns.
_NO_ROWS_DESCRIPTION = [("Result", "STRING_TYPE", None, None, None, None, True)]
# Settings a session cannot change (the server has them), or the Thrift server's own catalog;
# on the thrift method they are for the Python models' spark-submit only (python_submit.py).
_SERVER_SETTINGS = ("spark.master", "spark.jars", "spark.driver.", "spark.executor.", "spark.cores.",
                    "spark.pyspark.", "spark.sql.extensions", "spark.sql.catalog.", "spark.sql.catalogImplementation",
                    "spark.sql.defaultCatalog", "spark.ui.")


class ThriftConnectionWrapper(PyhiveConnectionWrapper):
    """dbt-spark's PyHive wrapper, reading a statement without rows as no rows.

    PyHive fails on such a row set with "'NoneType' object is not iterable", which reached every
    cdc_merge model through run_query (its DDL and MERGEs) as a compilation error."""

    def fetchall(self) -> List[Any]:
        assert self._cursor, "Cursor not available"
        try:
            return self._cursor.fetchall()
        except TypeError:
            if self._cursor.description == _NO_ROWS_DESCRIPTION:
                return []
            raise


def session_settable(server_side_parameters: Dict[str, str]) -> Dict[str, str]:
    """The settings a Thrift session may set for itself."""
    return {name: value for name, value in server_side_parameters.items() if not name.startswith(_SERVER_SETTINGS)}


@dataclass
class CdcSparkCredentials(SparkCredentials):
    @property
    def type(self) -> str:
        return "cdc_spark"

    def _connection_keys(self) -> Tuple[str, ...]:
        # `method` reaches Jinja's `target`, where the landing model checks it.
        return ("method", *super()._connection_keys())


class CdcSparkConnectionManager(SparkConnectionManager):
    TYPE = "cdc_spark"

    @classmethod
    def open(cls, connection: Connection) -> Connection:
        if connection.credentials.method == SparkConnectionMethod.SESSION:
            # Python UDFs of in-session models must run on dbt's own interpreter (its venv),
            # and Spark reads this once, when the first connection creates the SparkContext.
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        if connection.credentials.method != SparkConnectionMethod.THRIFT:
            return super().open(connection)
        credentials = connection.credentials
        connection.credentials = dataclasses.replace(
            credentials, server_side_parameters=session_settable(credentials.server_side_parameters)
        )
        try:
            connection = super().open(connection)
        finally:
            connection.credentials = credentials
        handle = connection.handle
        if isinstance(handle, PyhiveConnectionWrapper) and not isinstance(handle, ThriftConnectionWrapper):
            connection.handle = ThriftConnectionWrapper(
                handle.handle, handle.poll_interval, handle.query_timeout, handle.query_retries
            )
        return connection
