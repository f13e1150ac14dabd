import os
import sys
from dataclasses import dataclass
from typing import Tuple

from dbt.adapters.contracts.connection import Connection
from dbt.adapters.spark.connections import SparkConnectionManager, SparkConnectionMethod, SparkCredentials


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
