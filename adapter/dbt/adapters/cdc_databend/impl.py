import re
from datetime import datetime
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Dict, FrozenSet, List, Optional, Set, Tuple

import agate
from dbt.adapters.base import available
from dbt.adapters.base.impl import AdapterTrackingRelationInfo
from dbt.adapters.contracts.connection import AdapterResponse
from dbt.adapters.databend.connections import DatabendConnectionManager, DatabendCredentials
from dbt.adapters.databend.impl import DatabendAdapter
from dbt.adapters.exceptions.connection import FailedToConnectError
from dbt_common.clients.agate_helper import DEFAULT_TYPE_TESTER, table_from_rows
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.cdc_core import capabilities
from dbt.adapters.cdc_core.apply_methods import ApplyMethods
from dbt.adapters.cdc_core.consistency_methods import ConsistencyMethods
from dbt.adapters.cdc_core.invocation_methods import InvocationMethods
from dbt.adapters.cdc_core.landing_tables import landing_tables
from dbt.adapters.cdc_core.run_state import STATE
from dbt.adapters.cdc_core.status_methods import StatusMethods
from dbt.adapters.cdc_core.verify_methods import VerifyMethods
from dbt.adapters.cdc_databend.mirror_locks import MirrorLockMethods
from dbt.adapters.cdc_databend.__version__ import version
from dbt.adapters.cdc_databend.mirror_facts import InvocationFacts, invocation_mirrors
from dbt.adapters.cdc_databend.null_values import keep_nulls
from dbt.adapters.cdc_databend.relation import CdcDatabendRelation
from dbt.adapters.cdc_databend.server_errors import quiet_client_log, statement_error
from dbt.adapters.cdc_databend.python_landing import LocalSparkPythonJobHelper


# databend-py reports a refused login as "Unexpected status code 401 when post query, content: ...".
_REFUSED_LOGIN = re.compile(r"status code 401\b")
_SERVER_MESSAGE = re.compile(r'"message": "([^"]*)"')
# One per process, as run_state.STATE: the idle check's facts of the current invocation's tables.
FACTS = InvocationFacts()
quiet_client_log()


@dataclass
class CdcDatabendCredentials(DatabendCredentials):
    @property
    def type(self) -> str:
        return "cdc_databend"


class CdcDatabendConnectionManager(DatabendConnectionManager):
    TYPE = "cdc_databend"

    @classmethod
    def open(cls, connection: Any) -> Any:
        was_open = connection.state == "open"
        connection = super().open(connection)
        if not was_open and connection.state == "open":
            keep_nulls(connection.handle, connection.credentials.schema)
        return connection

    @classmethod
    def data_type_code_to_name(cls, type_code: Any) -> str:
        """A result column's type as dbt's get_column_schema_from_query asks it (dbt's snapshots do): the
        cursor of databend-sqlalchemy already describes a column by its type's name, e.g. 'Timestamp'."""
        return str(type_code)

    @contextmanager
    def exception_handler(self, sql: str):
        """The base's, but a refused login (HTTP 401, before the statement ran) says what to change,
        and a refused statement says the server's message, not its whole response (server_errors.py)."""
        try:
            with super().exception_handler(sql):
                yield
        except DbtRuntimeError as error:
            if not _REFUSED_LOGIN.search(str(error)):
                readable = statement_error(str(error))
                if readable is None:
                    raise
                raise DbtRuntimeError(readable) from None
            credentials = self.get_thread_connection().credentials
            said = _SERVER_MESSAGE.search(str(error))
            reason = said.group(1).replace("\\'", "'") if said else "HTTP 401"
            raise FailedToConnectError(
                f"Databend at {credentials.host}:{credentials.port} refused user '{credentials.username}' "
                f"({reason}); nothing ran. Check the user and password of the dbt target (this project's "
                "profiles/profiles.yml reads them from CDC_MERGE_DATABEND_USER and CDC_MERGE_DATABEND_PASSWORD)"
            ) from None


class CdcDatabendAdapter(ApplyMethods, ConsistencyMethods, InvocationMethods, VerifyMethods, StatusMethods,
                         MirrorLockMethods, DatabendAdapter):
    ConnectionManager = CdcDatabendConnectionManager
    Relation = CdcDatabendRelation  # type: ignore[assignment]
    verify_engine = "databend"

    def cdc_connection_capabilities(self) -> capabilities.Capabilities:
        return capabilities.DATABEND

    @available
    def sql_string_literal(self, text: str) -> str:
        return "'" + str(text).replace("\\", "\\\\").replace("'", "''") + "'"

    @available
    def cdc_idle_state(self, invocation_id: str, offsets_table: str, raw_table: str, target_table: str,
                       selected: List[str], nodes: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        """What idle.sql decides on, as on Spark: the mirror's newest offset, the raw table's current
        snapshot and the mirror's maintenance numbers and model checksum. All of it is read once per
        invocation for every mirror it runs (mirror_facts.py, run_state.py), so an idle mirror runs
        no statement of its own. None when the mirror or the offsets table does not exist yet."""
        def tables() -> List[str]:
            return [raw_table, *invocation_mirrors(selected, nodes)]

        raw = FACTS.facts(invocation_id, raw_table, tables, self._rows, listed_only=[offsets_table])
        if FACTS.facts(invocation_id, offsets_table, tables, self._rows, listed_only=[offsets_table]) is None:
            return None
        mirror = FACTS.facts(invocation_id, target_table, tables, self._rows)
        state = mirror.mirror_state() if mirror is not None else None
        if state is None:
            return None
        # The offsets of the invocation's mirrors are read once (version None: never again). An old
        # one is safe here: it only makes the mirror take the full path, which reads its own.
        newest = STATE.newest_offset(invocation_id, offsets_table, target_table, self._rows, lambda: None)
        return {
            "offset_snapshot": newest["offset_snapshot"] if newest else None,
            "current_snapshot": raw.current_snapshot if raw is not None else None,
            "mirror": state,
        }

    @available
    def cdc_landing_tables(self, path: str) -> Optional[Dict[str, Any]]:
        """The landing config's format and captured tables, for the mirror models' config check."""
        return landing_tables(self.cdc_project_path(path))

    @property
    def default_python_submission_method(self) -> str:
        return "session"

    @property
    def python_submission_helpers(self) -> Dict[str, Any]:
        return {"session": LocalSparkPythonJobHelper}

    def submit_python_job(self, parsed_model: dict, compiled_code: str) -> Any:
        # The helper compiles the code under the model file's real path and keeps Spark's files in the project.
        return super().submit_python_job({**parsed_model, "root_path": self.config.project_root}, compiled_code)

    def generate_python_submission_response(self, submission_result: Any) -> AdapterResponse:
        return AdapterResponse(_message=submission_result.message)

    def _create_freshness_response(self, last_modified: Any, snapshotted_at: Any) -> Any:
        """`dbt source freshness`: Databend's client hands timestamps over as text (the session's zone,
        UTC: null_values.keep_nulls), which dbt's check refuses ('Expected a timestamp value'); read
        them as the UTC instants they are."""
        return super()._create_freshness_response(_timestamp(last_modified), _timestamp(snapshotted_at))

    @classmethod
    def type(cls) -> str:
        return "cdc_databend"

    @classmethod
    def get_adapter_run_info(cls, config: Any) -> AdapterTrackingRelationInfo:
        # The base class derives the module from the class name, which would be "cdcdatabend".
        info = DatabendAdapter.get_adapter_run_info.__func__(DatabendAdapter, config)
        return AdapterTrackingRelationInfo(
            adapter_name="cdc_databend",
            base_adapter_version=info.base_adapter_version,
            adapter_version=version,
            model_adapter_details=info.model_adapter_details,
        )

    @classmethod
    def _catalog_filter_table(cls, table: agate.Table, used_schemas: FrozenSet[Tuple[str, str]]) -> agate.Table:
        """The catalog rows of the schemas dbt uses, matched on the schema alone: the database is
        always None here (see the package's docstring)."""
        table = table_from_rows(table.rows, table.column_names, text_only_columns=["table_schema", "table_name"])
        schemas = {schema.lower() for _, schema in used_schemas if schema is not None}
        return table.where(lambda row: (row["table_schema"] or "").lower() in schemas)

    def _get_one_catalog(self, information_schema: Any, schemas: Set[str], used_schemas: Any) -> agate.Table:
        """Columns (with comments) from system.columns, which lists a table's columns in their
        order (and has no ordinal of its own), and row count, size and blocks from system.tables
        (views from system.views).
        dbt-databend-cloud's catalog lists tables without columns, which dbt drops."""
        catalog: List[Dict[str, Any]] = []
        for schema in sorted(schemas):
            catalog.extend(self._schema_catalog(schema))
        return agate.Table.from_object(catalog, column_types=DEFAULT_TYPE_TESTER)

    def _schema_catalog(self, schema: str) -> List[Dict[str, Any]]:
        tables = {row["name"]: row for row in self._rows(
            "select name, engine, comment, num_rows, data_compressed_size, number_of_blocks "
            f"from system.tables where database = '{schema}'"
        )}
        # system.tables lists no view: a view model's columns would be left out of the catalog.
        tables.update({row["name"]: row for row in self._rows(
            f"select name, 'VIEW' as engine, comment from system.views where database = '{schema}'"
        )})
        positions: Dict[str, int] = {}
        catalog: List[Dict[str, Any]] = []
        for column in self._rows(f"select table, name, data_type, comment from system.columns where database = '{schema}'"):
            table = tables.get(column["table"])
            if table is None:
                continue
            index = positions[column["table"]] = positions.get(column["table"], -1) + 1
            is_view = table["engine"] == "VIEW"
            catalog.append({
                "table_database": None,
                "table_schema": schema,
                "table_name": column["table"],
                "table_type": "view" if is_view else "table",
                "table_comment": table["comment"] or None,
                "table_owner": None,
                "column_name": column["name"],
                "column_index": index,
                "column_type": column["data_type"],
                "column_comment": (column["comment"] or "").strip("'") or None,
                **({} if is_view else _stats(table)),
            })
        return catalog

    def _rows(self, sql: str) -> List[Dict[str, Any]]:
        _, table = self.execute(sql, fetch=True)
        return [dict(zip(table.column_names, row.values())) for row in table]


def _stats(table: Dict[str, Any]) -> Dict[str, Any]:
    flat: Dict[str, Any] = {}
    for stat_id, label, value, description in (
        ("row_count", "Row count", table["num_rows"], "Rows of the current snapshot."),
        ("bytes", "Size (bytes)", table["data_compressed_size"], "Compressed bytes of the current snapshot."),
        ("blocks", "Blocks", table["number_of_blocks"], "Data blocks of the current snapshot."),
    ):
        flat.update({f"stats:{stat_id}:label": label, f"stats:{stat_id}:value": value,
                     f"stats:{stat_id}:description": description, f"stats:{stat_id}:include": True})
    return flat


def _timestamp(value: Any) -> Any:
    """A timestamp of a result, as Databend renders it ('2026-01-02 03:04:05.123456'), as a datetime."""
    return datetime.fromisoformat(value) if isinstance(value, str) else value
