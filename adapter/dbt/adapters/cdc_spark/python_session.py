"""The `session` Python submission method: run a compiled Python model in-process."""

import os
from dataclasses import dataclass
from typing import Any, Dict, Tuple

from dbt.adapters.base import PythonJobHelper
from dbt.adapters.spark.connections import SparkConnectionMethod, SparkCredentials
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.cdc_core.python_models import run_model_code
from python_jobs.landing.io.py4j_lookups import keep_jvm_lookups

_built: Dict[Tuple[Tuple[str, str], ...], Any] = {}


def dbt_spark_session(server_side_parameters: Dict[str, str]) -> Any:
    """The same builder as dbt-spark's session cursor, so this is the session its SQL runs in.

    The builder sets every parameter again through the JVM on each call (about 3 ms each, many
    calls per mirror), so the session it gave is handed out again while it is still the live one.
    """
    from pyspark.sql import SparkSession

    parameters = tuple(sorted(server_side_parameters.items()))
    session = _built.get(parameters)
    if session is not None and session is SparkSession._instantiatedSession and session._sc._jsc is not None:
        return session
    builder = SparkSession.builder.enableHiveSupport()
    for parameter, value in server_side_parameters.items():
        builder = builder.config(parameter, value)
    _built[parameters] = session = builder.getOrCreate()
    keep_jvm_lookups(session)
    return session


@dataclass(frozen=True)
class SessionRunResult:
    message: str


class SessionPythonJobHelper(PythonJobHelper):
    """Executes the compiled model with `spark` bound to dbt-spark's session.

    The code is compiled under the model file's own path, so a traceback shows
    the model's lines as they are in the file.
    """

    def __init__(self, parsed_model: Dict, credentials: SparkCredentials) -> None:
        self.model_name = parsed_model["alias"]
        self.model_path = os.path.join(parsed_model.get("root_path", ""), parsed_model["original_file_path"])
        if credentials.method != SparkConnectionMethod.SESSION:
            raise DbtRuntimeError(
                f"Python model {self.model_name}: submission_method 'session' runs the model inside "
                f"dbt's own SparkSession and needs 'method: session' in the profile; this target uses "
                f"'method: {credentials.method}'. On a thrift target leave submission_method unset: "
                "the default, spark_submit, runs the model with spark-submit on the profile's spark.master."
            )
        self.server_side_parameters = credentials.server_side_parameters

    def session(self) -> Any:
        return dbt_spark_session(self.server_side_parameters)

    def submit(self, compiled_code: str) -> SessionRunResult:
        from python_jobs.landing.dbt_target import LandingTarget, landing_into

        # A landing model here lands into the session's Iceberg catalog (python_jobs/landing/dbt_target.py).
        with landing_into(LandingTarget("iceberg", "a cdc_spark session")):
            return SessionRunResult(run_model_code(compiled_code, self.model_name, self.model_path, self.session()))
