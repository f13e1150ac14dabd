import os
import re
import sys
import tempfile
from dataclasses import dataclass
from typing import Mapping, Tuple
from urllib.parse import urlparse

from dbt.adapters.contracts.connection import Connection
from dbt.adapters.exceptions.connection import FailedToConnectError
from dbt.adapters.spark.connections import SparkConnectionManager, SparkConnectionMethod, SparkCredentials

_WAREHOUSE_SETTING = re.compile(r"^spark\.sql\.catalog\.[^.]+\.warehouse$")


def require_writable_warehouses(settings: Mapping[str, str]) -> None:
    """Every local Iceberg warehouse folder of the session's catalogs can be written: checked by
    writing a file, before any SQL, so a wrong path is not a Hadoop error in the middle of a run."""
    for name, value in settings.items():
        address = urlparse(str(value))
        if not _WAREHOUSE_SETTING.match(name) or address.scheme not in ("", "file"):
            continue
        folder = os.path.abspath(address.path)
        try:
            os.makedirs(folder, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=folder, prefix=".cdc-merge-write-check-"):
                pass
        except OSError as error:
            raise FailedToConnectError(
                f"the Iceberg warehouse folder {folder} ({name}) cannot be written: {error.strerror or error}; "
                "point it at a folder this user can write (this project's profiles/profiles.yml reads it from "
                "CDC_MERGE_WAREHOUSE) or fix the folder's permissions or space"
            ) from None


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
            if connection.state != "open":
                require_writable_warehouses(connection.credentials.server_side_parameters or {})
        return super().open(connection)
