"""The landing model on a Databend target: the `session` Python submission method of cdc_databend.

Databend runs no Python, and the landing's parsers run in Spark: the model runs in this process
with a SparkSession of its own (python_jobs.landing.io.spark_session), landing into the target's
Databend server through the landing config's `sink: databend` (python_jobs/landing/dbt_target.py
checks that it says so). So `dbt build --target <databend target>` lands, applies and tests
everything, as on a Spark target.
"""

import os
from dataclasses import dataclass
from typing import Any, Dict
from urllib.parse import quote

from dbt.adapters.base import PythonJobHelper

from dbt.adapters.cdc_core.python_models import run_model_code


@dataclass(frozen=True)
class LandingRunResult:
    message: str


def target_dsn(credentials: Any) -> str:
    """The Databend DSN of a dbt target, as the landing's driver reads it."""
    user = quote(str(credentials.username or "root"), safe="")
    password = quote(str(credentials.password or ""), safe="")
    tls = "" if credentials.secure else "?sslmode=disable"
    return f"databend://{user}:{password}@{credentials.host}:{credentials.port}/{tls}"


class LocalSparkPythonJobHelper(PythonJobHelper):
    """Executes the compiled landing model with `spark` bound to a local SparkSession, under
    landing_into() the target's Databend server."""

    def __init__(self, parsed_model: Dict, credentials: Any) -> None:
        self.model_name = parsed_model["alias"]
        self.project_root = parsed_model.get("root_path", "")
        self.model_path = os.path.join(self.project_root, parsed_model["original_file_path"])
        self.credentials = credentials

    def submit(self, compiled_code: str) -> LandingRunResult:
        from python_jobs.landing import io
        from python_jobs.landing.dbt_target import LandingTarget, landing_into

        # Only Spark's parsing runs here; its own warehouse (unused) stays inside the project's target/.
        spark = io.spark_session("cdc_merge_landing", os.path.join(self.project_root, "target", "landing-warehouse"))
        target = LandingTarget("databend", f"Databend at {self.credentials.host}:{self.credentials.port}",
                               target_dsn(self.credentials))
        with landing_into(target):
            return LandingRunResult(run_model_code(compiled_code, self.model_name, self.model_path, spark))
