import re
from typing import Any, Dict, List, Type

from dbt.adapters.base import PythonJobHelper
from dbt.adapters.base.impl import AdapterTrackingRelationInfo
from dbt.adapters.contracts.connection import AdapterResponse
from dbt.adapters.spark import SparkAdapter
from dbt.adapters.spark.connections import SparkConnectionMethod
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.cdc_spark.__version__ import version
from dbt.adapters.cdc_spark.connections import CdcSparkConnectionManager
from dbt.adapters.cdc_spark.python_session import SessionPythonJobHelper, SessionRunResult


# Iceberg's Hadoop catalog fails to list the namespaces of a warehouse folder not yet created.
_EMPTY_HADOOP_CATALOG = re.compile(r"NoSuchNamespaceException: Namespace does not exist: *$", re.MULTILINE)


class CdcSparkAdapter(SparkAdapter):
    ConnectionManager = CdcSparkConnectionManager

    def list_schemas(self, database: str) -> List[str]:
        try:
            return super().list_schemas(database)
        except DbtRuntimeError as error:
            if _EMPTY_HADOOP_CATALOG.search(str(error)):
                return []
            raise

    def check_schema_exists(self, database: str, schema: str) -> bool:
        return schema in self.list_schemas(database)

    @classmethod
    def type(cls) -> str:
        return "cdc_spark"

    @classmethod
    def get_adapter_run_info(cls, config: Any) -> AdapterTrackingRelationInfo:
        # The base class derives the module from the class name, which would be "cdcspark".
        info = SparkAdapter.get_adapter_run_info.__func__(SparkAdapter, config)
        return AdapterTrackingRelationInfo(
            adapter_name="cdc_spark",
            base_adapter_version=info.base_adapter_version,
            adapter_version=version,
            model_adapter_details=info.model_adapter_details,
        )

    @property
    def default_python_submission_method(self) -> str:
        if self.connections.profile.credentials.method == SparkConnectionMethod.SESSION:
            return "session"
        return super().default_python_submission_method

    @property
    def python_submission_helpers(self) -> Dict[str, Type[PythonJobHelper]]:
        return {**super().python_submission_helpers, "session": SessionPythonJobHelper}

    def submit_python_job(self, parsed_model: dict, compiled_code: str) -> AdapterResponse:
        # The session helper compiles the code under the model file's real path.
        return super().submit_python_job({**parsed_model, "root_path": self.config.project_root}, compiled_code)

    def generate_python_submission_response(self, submission_result: Any) -> AdapterResponse:
        if isinstance(submission_result, SessionRunResult):
            return AdapterResponse(_message=submission_result.message)
        return super().generate_python_submission_response(submission_result)
