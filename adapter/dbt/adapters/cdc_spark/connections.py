import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Generator, Tuple

from dbt.adapters.contracts.connection import Connection
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.connections import SparkConnectionManager, SparkConnectionMethod, SparkCredentials
from dbt_common.exceptions import DbtRuntimeError

logger = AdapterLogger("cdc_spark")
# Iceberg's optimistic commits: another writer committed first, and this statement committed nothing.
_LOST_COMMIT_RACE = ("CommitFailedException", "ValidationException", "Cannot fast-forward", "CommitStateUnknownException")


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
        return super().open(connection)

    @contextmanager
    def exception_handler(self, sql: str) -> Generator[None, None, None]:
        """An error of the JVM says what failed (Py4J's own line is only "An error occurred while
        calling o55.sql."), and a lost commit race says that nothing was committed and what to do."""
        try:
            yield
        except Exception as error:
            message = engine_error_message(error)
            if message is None:
                with super().exception_handler(sql):
                    raise
                raise
            logger.debug(f"Error while running:\n{sql}")
            raise DbtRuntimeError(message) from None


def engine_error_message(error: BaseException) -> "str | None":
    """What to show for an error of the JVM: every Py4J error (its own text is only "An error
    occurred while calling o55.sql."), and an error PySpark converted when it is a lost commit race;
    None for the others, whose text already says what failed."""
    java = getattr(error, "java_exception", None)
    if java is not None:
        return java_error_message(java)
    origin = getattr(error, "_origin", None)
    if origin is not None:
        message = java_error_message(origin)
        if any(marker in message for marker in _LOST_COMMIT_RACE):
            return message
    return None


def java_error_message(java: Any) -> str:
    """The JVM exception and its causes, one line each, and what to do when another writer won."""
    lines = []
    cause = java
    while cause is not None and len(lines) < 5:
        lines.append(str(cause.toString()))
        cause = cause.getCause()
    message = "\n  caused by: ".join(lines)
    if any(marker in message for marker in _LOST_COMMIT_RACE):
        message += (
            "\nAnother run committed to the same table at the same moment and this statement's commit lost "
            "(Iceberg's optimistic commit check). Nothing of this statement was committed and the mirror's "
            "offset did not advance: run again."
        )
    return message
