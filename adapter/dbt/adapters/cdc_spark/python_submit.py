"""The `spark_submit` Python submission method: a compiled Python model runs as a Spark application
on the cluster the profile names (its `server_side_parameters`: spark.master, spark.jars, the
catalog), the way dbt-spark submits Python models to Databricks clusters. The default on the
`thrift` method, where dbt's SQL goes to a Thrift server on the same cluster and catalog."""

import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any, Dict, List

from dbt.adapters.base import PythonJobHelper
from dbt.adapters.spark.connections import SparkCredentials
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.cdc_core.python_models import RESULT_MESSAGE_VARIABLE
from dbt.adapters.cdc_spark.python_session import SessionRunResult

# The last line the application prints: the model's one-line result for dbt's log.
RESULT_PREFIX = "cdc_spark result: "
PRELUDE = """from pyspark.sql import SparkSession

spark = SparkSession.builder.appName({app_name!r}).getOrCreate()
spark.sparkContext.setLogLevel("WARN")
"""
EPILOGUE = f"""
print({RESULT_PREFIX!r} + str(globals().get({RESULT_MESSAGE_VARIABLE!r}, "OK")), flush=True)
spark.stop()
"""
# Packages the models import (python_jobs: the landing job), shipped to the executors as a zip.
SHIPPED_PACKAGES = ("python_jobs",)


def spark_submit_command(server_side_parameters: Dict[str, str], script: Path, py_files: List[Path]) -> List[str]:
    import pyspark

    spark_submit = Path(pyspark.__file__).resolve().parent / "bin" / "spark-submit"
    conf = dict(server_side_parameters)
    master = conf.pop("spark.master", None)
    if not master:
        raise DbtRuntimeError(
            "the spark_submit Python submission needs the cluster's master URL: set server_side_parameters: "
            "spark.master (e.g. spark://host:7077) in the profile target"
        )
    jars = conf.pop("spark.jars", "")
    # Jars the workers have at these paths (cdc-cluster's, on this machine): not shipped to each
    # executor, which copied the 47 MB Iceberg runtime into its work folder at every landing.
    on_executors = set(filter(None, conf.get("spark.executor.extraClassPath", "").split(os.pathsep)))
    if not on_executors:
        conf.pop("spark.executor.extraClassPath", None)
    command = [str(spark_submit), "--master", master]
    if jars:
        shipped = [jar for jar in jars.split(",") if jar not in on_executors]
        if shipped:
            command += ["--jars", ",".join(shipped)]
        # On the driver's own class path too: the landing job looks its JVM functions up through py4j.
        command += ["--driver-class-path", jars.replace(",", os.pathsep)]
    for name, value in conf.items():
        command += ["--conf", f"{name}={value}"]
    if py_files:
        command += ["--py-files", ",".join(str(path) for path in py_files)]
    return [*command, str(script)]


def package_zip(folder: Path, package: str) -> Path:
    """The installed package as a zip for --py-files, rebuilt when any of its files is newer."""
    module = __import__(package)
    source = Path(module.__file__).resolve().parent
    target = folder / f"{package}.zip"
    files = [path for path in source.rglob("*") if path.is_file() and "__pycache__" not in path.parts]
    newest = max(path.stat().st_mtime for path in files)
    if not target.exists() or target.stat().st_mtime < newest:
        partial = target.with_suffix(".zip.partial")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in files:
                archive.write(path, Path(package) / path.relative_to(source))
        partial.replace(target)
    return target


class SparkSubmitPythonJobHelper(PythonJobHelper):
    """Writes the compiled model under target/python_submissions/ and spark-submits it (client
    mode: the driver runs here, in dbt's working directory, so relative paths in model configs
    mean the same as in dbt). Its output goes to <model>.log beside it."""

    def __init__(self, parsed_model: Dict, credentials: SparkCredentials) -> None:
        self.model_name = parsed_model["alias"]
        self.folder = Path(parsed_model.get("root_path", ".")) / "target" / "python_submissions"
        self.server_side_parameters = dict(credentials.server_side_parameters)
        self.server_side_parameters.setdefault("spark.pyspark.python", sys.executable)

    def submit(self, compiled_code: str) -> SessionRunResult:
        self.folder.mkdir(parents=True, exist_ok=True)
        script = self.folder / f"{self.model_name}.py"
        script.write_text(PRELUDE.format(app_name=f"dbt_model_{self.model_name}") + compiled_code + EPILOGUE)
        py_files = [package_zip(self.folder, package) for package in SHIPPED_PACKAGES]
        command = spark_submit_command(self.server_side_parameters, script, py_files)
        log_path = self.folder / f"{self.model_name}.log"
        started = time.monotonic()
        with open(log_path, "w") as log:
            log.write(" ".join(command) + "\n")
            log.flush()
            done = subprocess.run(command, stdout=subprocess.PIPE, stderr=log, text=True, env=self._env())
        log_tail = log_path.read_text(errors="replace")[-4000:]
        if done.returncode:
            raise DbtRuntimeError(
                f"Python model {self.model_name}: spark-submit to {self.server_side_parameters.get('spark.master')} "
                f"failed (exit {done.returncode}); {log_path} ends:\n{log_tail}"
            )
        results = [line[len(RESULT_PREFIX):] for line in done.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
        if not results:
            raise DbtRuntimeError(f"Python model {self.model_name}: the application ended without its result line; {log_path}")
        return SessionRunResult(f"{results[-1]} (on the cluster, {time.monotonic() - started:.0f} s)")

    def _env(self) -> Dict[str, Any]:
        env = dict(os.environ)
        master = self.server_side_parameters.get("spark.master", "")
        if "://127.0.0.1:" in master or "://localhost:" in master:
            # A cluster on this machine's loopback address reaches the driver there too.
            env["SPARK_LOCAL_IP"] = "127.0.0.1"
        return env
