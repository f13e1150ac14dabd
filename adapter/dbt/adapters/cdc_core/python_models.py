"""A compiled Python model run in this process with `spark` bound: the cdc_spark adapter's session
method (python_session.py) and the cdc_databend adapter's landing (python_landing.py)."""

import traceback
from typing import Any, Dict

from dbt_common.exceptions import DbtRuntimeError

from python_jobs.landing.config import ConfigError as LandingConfigError
from python_jobs.landing.io.errors import LandingError

# The landing's own errors say what to change (a config field, the input folder): shown without a traceback.
MESSAGE_ONLY_ERRORS = (LandingConfigError, LandingError)

# A materialization's generated code may leave a one-line result for dbt's log here.
RESULT_MESSAGE_VARIABLE = "dbt_model_result_message"


def run_model_code(compiled_code: str, model_name: str, model_path: str, spark: Any) -> str:
    """A compiled Python model run here with `spark` bound, compiled under the model file's own path
    (a traceback shows the model's lines as they are in the file); its one-line result for dbt's log."""
    namespace: Dict[str, Any] = {"__name__": f"dbt_model_{model_name}", "spark": spark}
    try:
        exec(compile(compiled_code, model_path, "exec"), namespace)
    except MESSAGE_ONLY_ERRORS as error:
        raise DbtRuntimeError(f"Python model {model_name} ({model_path}): {error}") from None
    except Exception as error:
        frames = traceback.format_exception(error)
        raise DbtRuntimeError(f"Python model {model_name} ({model_path}) failed:\n{''.join(frames).rstrip()}") from error
    return str(namespace.get(RESULT_MESSAGE_VARIABLE, "OK"))
