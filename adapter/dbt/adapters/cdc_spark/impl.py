"""The cdc_spark adapter: dbt-spark plus what the cdc_merge macros call in Python. The
methods of the idle check (run_state_methods.py), of what both adapters share for an invocation
(invocation_methods.py), of the run guards (run_guard_methods.py), of the apply's decisions
(apply_methods.py) and of the raw range reads and mirror writes (mirror_write_methods.py) are
mixins of their own."""

import re
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Set, Type

from dbt.adapters.base import BaseRelation, PythonJobHelper, available
from dbt.adapters.base.impl import AdapterTrackingRelationInfo
from dbt.adapters.contracts.connection import AdapterResponse
from dbt.adapters.contracts.relation import RelationType
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark import SparkAdapter
from dbt.adapters.spark.connections import SparkConnectionMethod
from dbt_common.clients.agate_helper import build_type_tester
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.cdc_core import capabilities
from dbt.adapters.cdc_core.apply_methods import ApplyMethods
from dbt.adapters.cdc_core.consistency_methods import ConsistencyMethods
from dbt.adapters.cdc_core.invocation_methods import InvocationMethods
from dbt.adapters.cdc_core.landing_tables import landing_tables
from dbt.adapters.cdc_core.status_methods import StatusMethods
from dbt.adapters.cdc_core.verify_methods import VerifyMethods
from dbt.adapters.cdc_spark import catalog, session_catalog, snapshot_events, stored_keys
from dbt.adapters.cdc_spark.__version__ import version
from dbt.adapters.cdc_spark.connections import (
    CdcSparkConnectionManager, jvm_errors_as_messages, with_local_session_settings, with_project_paths)
from dbt.adapters.cdc_spark.mirror_write_methods import MirrorWriteMethods
from dbt.adapters.cdc_spark.raw_range_methods import RawRangeMethods
from dbt.adapters.cdc_spark.python_session import SessionPythonJobHelper, SessionRunResult
from dbt.adapters.cdc_spark.python_submit import SparkSubmitPythonJobHelper
from dbt.adapters.cdc_spark.run_guard_methods import RunGuardMethods
from dbt.adapters.cdc_spark.run_state_methods import RunStateMethods
from dbt.adapters.cdc_spark.spark_access import SparkAccess
from python_jobs.status.registry import REGISTRY, relation_name

if TYPE_CHECKING:
    import agate

# Iceberg's Hadoop catalog fails to list the namespaces of a warehouse folder not yet created.
_EMPTY_HADOOP_CATALOG = re.compile(r"NoSuchNamespaceException: Namespace does not exist: *$", re.MULTILINE)
# A catalog of these classes holds Iceberg tables only; the second one (jvm/iceberg/, on a Thrift
# server) also has the apply's helpers as procedures.
_ICEBERG_CATALOG = "org.apache.iceberg.spark.SparkCatalog"
_CDC_MERGE_CATALOG = "cdc_merge.iceberg.CdcMergeSparkCatalog"
# The Thrift server's JDBC catalog whose sessions can stage commits in a group's catalog transaction.
_TRANSACTIONS_CATALOG_IMPL = "cdc_merge.iceberg.CdcMergeJdbcCatalog"

logger = AdapterLogger("cdc_spark")


@jvm_errors_as_messages
class CdcSparkAdapter(ApplyMethods, ConsistencyMethods, MirrorWriteMethods, RawRangeMethods, RunStateMethods, RunGuardMethods,
                      InvocationMethods, VerifyMethods, StatusMethods, SparkAccess, SparkAdapter):
    ConnectionManager = CdcSparkConnectionManager
    _iceberg_catalog: Optional[bool] = None
    _catalog: Optional[Dict[str, str]] = None

    def cdc_connection_capabilities(self) -> capabilities.Capabilities:
        return capabilities.spark(self._in_process())

    @available
    def sql_string_literal(self, text: str) -> str:
        return _sql_literal(str(text))

    def _release_kept_mirror(self, target_table: str) -> None:
        self.cdc_release_mirror(target_table)

    @available
    def cdc_observe_run(self, target_table: str, values: Dict[str, Any]) -> str:
        """As every engine's, with the keys this process keeps in the mirror's key index (stored_keys.py)."""
        spark = self._session_in_process() if REGISTRY.enabled else None
        if spark is not None:
            mirror = relation_name(target_table)
            kept = stored_keys.kept_index_keys(spark, [mirror, mirror + "__cdc_tombstones"])
            if kept is not None:
                values = {**values, "key_index_keys": kept}
        return super().cdc_observe_run(target_table, values)

    @available
    def cdc_landing_tables(self, path: str) -> Optional[Dict[str, Any]]:
        """The landing config's format and captured tables, for the mirror models' config check."""
        return landing_tables(self.cdc_project_path(path))

    def _raw_snapshot_log(self, raw_table: str) -> Optional[Dict[str, Any]]:
        return self.cdc_snapshot_log(raw_table)

    def _raw_added_by_table(self, raw_table: str, snapshot_ids: List[str]) -> Dict[str, Dict[str, int]]:
        """Iceberg's manifests count each raw snapshot's events per table (snapshot_events.py)."""
        spark = self._session_in_process()
        if spark is None or not snapshot_ids:
            return {}
        try:
            return snapshot_events.added_by_table(spark, raw_table, snapshot_ids)
        except Exception as error:  # noqa: BLE001 - the plan then counts every table's events, as before
            logger.debug(f"{raw_table}: no per-table event counts: {str(error).splitlines()[0][:300]}")
            return {}

    def __init__(self, config: Any, mp_context: Any) -> None:
        super().__init__(config, mp_context)
        self._checkpoints: Dict[str, Any] = {}
        if config.credentials.method == SparkConnectionMethod.SESSION:
            with_project_paths(config.credentials, config.project_root)
            with_local_session_settings(config.credentials)

    def list_schemas(self, database: str) -> List[str]:
        """In an Iceberg catalog, asked of the catalog in dbt's own SparkSession (session_catalog.py);
        elsewhere SHOW DATABASES, which dbt runs twice at every invocation's start."""
        spark = self._session_in_process() if self._current_catalog_is_iceberg() else None
        names = session_catalog.schema_names(spark, self._current_catalog()["name"]) if spark is not None else None
        if names is not None:
            return names
        try:
            return super().list_schemas(database)
        except DbtRuntimeError as error:
            if _EMPTY_HADOOP_CATALOG.search(str(error)):
                return []
            raise

    def check_schema_exists(self, database: str, schema: str) -> bool:
        return schema in self.list_schemas(database)

    def list_relations_without_caching(self, schema_relation: BaseRelation) -> List[BaseRelation]:
        """In an Iceberg catalog: its tables and views, asked of the catalog in dbt's own SparkSession
        (session_catalog.py), elsewhere by SHOW TABLES and SHOW VIEWS, two statements per schema.

        dbt-spark first tries SHOW TABLE EXTENDED, which Spark refuses for v2 tables, then
        runs one DESCRIBE EXTENDED per table only to learn that it is an Iceberg table
        (BENCHMARKS.md: 33 statements, 0.6 s of an idle run of 10 mirrors)."""
        if not self._current_catalog_is_iceberg():
            return super().list_relations_without_caching(schema_relation)
        schema = schema_relation.schema
        spark = self._session_in_process()
        listed = session_catalog.schema_relations(spark, self._current_catalog()["name"], schema) if spark is not None else None
        if listed is not None:
            tables, views = listed
            # An Iceberg catalog lists its views apart from its tables: both are the schema's relations.
            names = [*tables, *sorted(set(views) - set(tables))]
            return [self.Relation.create(schema=schema, identifier=name, type=RelationType.View if name in views else RelationType.Table,
                                         is_iceberg=name not in views) for name in names]
        try:
            _, tables = self.execute(f"show tables in {schema}", fetch=True)
        except DbtRuntimeError as error:
            logger.debug(f"Error while listing {schema}: {error}")
            return []
        views = self._view_names(schema)
        names = [row["tableName"] for row in tables if not row["isTemporary"]]
        return [
            self.Relation.create(
                schema=schema,
                identifier=name,
                type=RelationType.View if name in views else RelationType.Table,
                is_iceberg=name not in views,
            )
            for name in [*names, *sorted(views - set(names))]
        ]

    def _view_names(self, schema: str) -> set:
        # Only catalogs that implement Spark's ViewCatalog have views; the others refuse SHOW VIEWS.
        try:
            _, views = self.execute(f"show views in {schema}", fetch=True)
        except DbtRuntimeError:
            return set()
        return {row["viewName"] for row in views if not row["isTemporary"]}

    def _get_columns_for_catalog(self, relation: BaseRelation) -> Iterable[Dict[str, Any]]:
        """dbt docs' catalog: dbt-spark's comes from SHOW TABLE EXTENDED, empty for Iceberg tables."""
        if not self._current_catalog_is_iceberg():
            return super()._get_columns_for_catalog(relation)

        def execute(sql: str) -> List[Dict[str, Any]]:
            _, table = self.execute(sql, fetch=True)
            return [dict(zip(table.column_names, row.values())) for row in table]

        return list(catalog.catalog_rows(relation, execute))

    def _get_one_catalog(self, information_schema: Any, schemas: Set[str], used_schemas: Any) -> "agate.Table":
        if not self._current_catalog_is_iceberg():
            return super()._get_one_catalog(information_schema, schemas, used_schemas)
        import agate

        (schema,) = schemas
        rows: List[Dict[str, Any]] = []
        for relation in self.list_relations(information_schema.database, schema):
            rows.extend(self._get_columns_for_catalog(relation))
        # Snapshot ids are 19-digit numbers: as text, or agate would make them floats.
        return agate.Table.from_object(rows, column_types=build_type_tester(catalog.TEXT_STATS))

    def _current_catalog_is_iceberg(self) -> bool:
        return self._current_catalog()["class"] in (_ICEBERG_CATALOG, _CDC_MERGE_CATALOG)

    def _current_catalog(self) -> Dict[str, str]:
        """The session's current catalog: its name and class."""
        spark = self._session_in_process() if self._catalog is None else None
        if spark is not None:
            self._catalog = session_catalog.current_catalog(spark)
        if self._catalog is None:
            _, catalog = self.execute("select current_catalog() as name", fetch=True)
            _, setting = self.execute(f"set spark.sql.catalog.{catalog[0]['name']}", fetch=True)
            self._catalog = {"name": catalog[0]["name"], "class": setting[0]["value"]}
        return self._catalog

    def _thrift_procedures(self) -> bool:
        """Whether the Thrift server's catalog has the apply's helpers as procedures."""
        return self._on_thrift() and self._current_catalog()["class"] == _CDC_MERGE_CATALOG

    def _catalog_has_transactions(self) -> bool:
        """Whether the Thrift server's catalog can stage a group's commits (CdcMergeJdbcCatalog)."""
        if not self._thrift_procedures():
            return False
        catalog = self._current_catalog()
        if "impl" not in catalog:
            _, setting = self.execute(f"set `spark.sql.catalog.{catalog['name']}.catalog-impl`", fetch=True)
            catalog["impl"] = setting[0]["value"]
        return catalog["impl"] == _TRANSACTIONS_CATALOG_IMPL

    def _release_group(self, group: str) -> None:
        self.cdc_release_group(group)

    def _catalog_transaction_step(self, step: str, invocation_id: str, group: str) -> int:
        answer = self._call_procedure(f"snapshot_catalog_transaction_{step}", consistency_group=group, run_id=invocation_id)
        return int(answer["tables"])

    def _call_procedure(self, name: str, **arguments: Any) -> Dict[str, Any]:
        """The one row of CALL <catalog>.system.<name>(...) on the Thrift server."""
        values = ", ".join(f"{argument} => {_sql_literal(value)}" for argument, value in arguments.items())
        _, table = self.execute(f"call {self._current_catalog()['name']}.system.{name}({values})", fetch=True)
        return dict(zip(table.column_names, table.rows[0]))

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
        if self._in_process():
            return "session"
        if self._on_thrift():
            return "spark_submit"
        return super().default_python_submission_method

    @property
    def python_submission_helpers(self) -> Dict[str, Type[PythonJobHelper]]:
        return {**super().python_submission_helpers, "session": SessionPythonJobHelper,
                "spark_submit": SparkSubmitPythonJobHelper}

    def submit_python_job(self, parsed_model: dict, compiled_code: str) -> AdapterResponse:
        # The session helper compiles the code under the model file's real path.
        return super().submit_python_job({**parsed_model, "root_path": self.config.project_root}, compiled_code)

    def generate_python_submission_response(self, submission_result: Any) -> AdapterResponse:
        if isinstance(submission_result, SessionRunResult):
            return AdapterResponse(_message=submission_result.message)
        return super().generate_python_submission_response(submission_result)


def _sql_literal(value: Any) -> str:
    """A Spark SQL literal: integers as they are, text quoted (backslash escapes, Spark's default),
    with $ as \\u0024: Spark substitutes ${...} in a statement's text before it parses it."""
    if isinstance(value, int):
        return str(value)
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'").replace("$", "\\u0024") + "'"
