import dataclasses
import functools
import inspect
import os
import re
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Dict, Generator, List, Mapping, Tuple
from urllib.parse import urlparse

from dbt.adapters.contracts.connection import Connection
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.exceptions.connection import FailedToConnectError
from dbt.adapters.spark.connections import (
    PyhiveConnectionWrapper,
    SparkConnectionManager,
    SparkConnectionMethod,
    SparkCredentials,
)
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.cdc_spark import loaded_tables
from python_jobs.commit_race import lost_commit_race
from python_jobs.landing.io.session import (
    HADOOP_CATALOG_WITH_VIEWS, iceberg_jar, local_file_system_conf, local_driver_conf, with_views,
)

logger = AdapterLogger("cdc_spark")

# What Spark's Thrift server describes a statement without rows with (DDL, INSERT, MERGE): one
# string column "Result" (SparkExecuteStatementOperation), whose row set then has no columns.
_NO_ROWS_DESCRIPTION = [("Result", "STRING_TYPE", None, None, None, None, True)]
# Settings a session cannot change (the server has them), or the Thrift server's own catalog;
# on the thrift method they are for the Python models' spark-submit only (python_submit.py).
_SERVER_SETTINGS = ("spark.master", "spark.jars", "spark.driver.", "spark.executor.", "spark.cores.",
                    "spark.pyspark.", "spark.sql.extensions", "spark.sql.catalog.", "spark.sql.catalogImplementation",
                    "spark.sql.defaultCatalog", "spark.ui.")


# The first wait for a running statement; each next one doubles, up to the profile's poll_interval.
_FIRST_POLL_SECONDS = 0.05


class ThriftConnectionWrapper(PyhiveConnectionWrapper):
    """dbt-spark's PyHive wrapper, reading a statement without rows as no rows, and polling a
    running statement soon, then less and less often.

    PyHive fails on such a row set with "'NoneType' object is not iterable", which reached every
    cdc_merge model through run_query (its DDL and MERGEs) as a compilation error. dbt-spark polls
    every poll_interval (5 s by default): each of the apply's ~40 statements would end on a
    multiple of 5 s."""

    def __init__(self, handle: Any, poll_interval: float, query_timeout: Any, query_retries: int) -> None:
        self._longest_poll = float(poll_interval)
        super().__init__(handle, poll_interval, query_timeout, query_retries)
        self._next_poll = _FIRST_POLL_SECONDS

    @property  # type: ignore[override]
    def poll_interval(self) -> float:
        wait = self._next_poll
        self._next_poll = min(wait * 2, self._longest_poll)
        return wait

    @poll_interval.setter
    def poll_interval(self, value: float) -> None:
        self._longest_poll = float(value)

    def _execute_with_polling(self, sql: str, bindings: Any) -> None:
        self._next_poll = _FIRST_POLL_SECONDS
        super()._execute_with_polling(sql, bindings)

    def fetchall(self) -> List[Any]:
        assert self._cursor, "Cursor not available"
        try:
            return self._cursor.fetchall()
        except TypeError:
            if self._cursor.description == _NO_ROWS_DESCRIPTION:
                return []
            raise


def session_settable(server_side_parameters: Dict[str, str]) -> Dict[str, str]:
    """The settings a Thrift session may set for itself."""
    return {name: value for name, value in server_side_parameters.items() if not name.startswith(_SERVER_SETTINGS)}


_WAREHOUSE_SETTING = re.compile(r"^spark\.sql\.catalog\.[^.]+\.warehouse$")


_CATALOG_KIND = re.compile(r"^(spark\.sql\.catalog\.[^.]+)\.(type|catalog-impl)$")


def require_writable_warehouses(settings: Mapping[str, str]) -> None:
    """Every Hadoop catalog of the session names its warehouse (without one, the run's first statement
    failed with a Java traceback: warehousePath must not be null or empty), and every local Iceberg
    warehouse folder can be written: checked by writing a file, before any SQL, so a wrong path is not
    a Hadoop error in the middle of a run."""
    for name, value in settings.items():
        catalog = _CATALOG_KIND.match(name)
        if catalog and value in ("hadoop", HADOOP_CATALOG_WITH_VIEWS) and not str(settings.get(f"{catalog[1]}.warehouse") or "").strip():
            raise FailedToConnectError(
                f"the Iceberg catalog {catalog[1]} ({name}: {value}) has no warehouse: set {catalog[1]}.warehouse in the "
                "target's server_side_parameters to the folder of its tables (a cdc-init project's profiles.yml reads it "
                "from CDC_MERGE_WAREHOUSE, by default the project's folder warehouse)"
            )
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


def with_project_paths(credentials: SparkCredentials, project_root: str) -> None:
    """Local folders of the session's settings (each catalog's warehouse, Spark's own warehouse) as
    absolute paths, a relative one taken from the project's folder: Iceberg writes the path it is
    given into every table's metadata, and a relative one makes the tables unreadable from anywhere
    else (another folder, another process, `dbt --project-dir` from outside). In place, as
    with_local_session_settings."""
    parameters = credentials.server_side_parameters
    if parameters is None:
        return
    parameters.setdefault("spark.sql.warehouse.dir", os.path.join("target", "spark-warehouse"))
    for name, value in list(parameters.items()):
        address = urlparse(str(value))
        if (_WAREHOUSE_SETTING.match(name) or name == "spark.sql.warehouse.dir") and address.scheme == "" and value:
            parameters[name] = os.path.abspath(os.path.join(project_root, os.path.expanduser(str(value))))


def with_local_session_settings(credentials: SparkCredentials) -> None:
    """The session's settings, with the installed Iceberg runtime jar unless the profile names jars,
    Hadoop catalogs that have views, those of a local file system that forks no process per file (session.local_file_system_conf)
    unless the profile names a file system, and the driver's options (session.local_driver_conf: a log
    of errors only, without progress bars, as dbt's output is the user's; Iceberg's scans planned
    without its worker pool's polls). In place,
    so that the session dbt-spark's cursor builds and the adapter's own (python_session.py) are the
    same: by the adapter as it is made, before any thread reads them."""
    parameters = credentials.server_side_parameters
    if parameters is None:
        return
    if not parameters.get("spark.jars") and not parameters.get("spark.jars.packages"):
        parameters["spark.jars"] = iceberg_jar()  # the installed package's Iceberg runtime, wherever it is
    # A Hadoop catalog with views (session.with_views): dbt's view materialization over the mirrors works.
    viewed = with_views(parameters)
    parameters.clear()
    parameters.update(viewed)
    driver = local_driver_conf(parameters.get("spark.driver.extraJavaOptions"))
    parameters["spark.driver.extraJavaOptions"] = driver["spark.driver.extraJavaOptions"]
    parameters.setdefault("spark.ui.showConsoleProgress", driver["spark.ui.showConsoleProgress"])
    if "spark.hadoop.fs.file.impl" in parameters:
        return
    parameters.update(local_file_system_conf(str(parameters.get("spark.master", "local")), parameters.get("spark.driver.extraClassPath")))


@dataclass
class CdcSparkCredentials(SparkCredentials):
    @property
    def type(self) -> str:
        return "cdc_spark"

    def _connection_keys(self) -> Tuple[str, ...]:
        # `method` reaches Jinja's `target`, where the landing model checks it. Only the settings the
        # method uses (dbt debug shows them): a session has no port, cluster or organization.
        if self.method == SparkConnectionMethod.SESSION:
            return ("method", "schema")
        if self.method == SparkConnectionMethod.THRIFT:
            return ("method", "host", "port", "schema")
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
            return with_kept_settings(super().open(connection))
        if connection.credentials.method != SparkConnectionMethod.THRIFT:
            return super().open(connection)
        credentials = connection.credentials
        connection.credentials = dataclasses.replace(
            credentials, server_side_parameters=session_settable(credentials.server_side_parameters)
        )
        try:
            connection = super().open(connection)
        finally:
            connection.credentials = credentials
        handle = connection.handle
        if isinstance(handle, PyhiveConnectionWrapper) and not isinstance(handle, ThriftConnectionWrapper):
            connection.handle = ThriftConnectionWrapper(
                handle.handle, credentials.poll_interval, handle.query_timeout, handle.query_retries
            )
        return connection

    def add_query(self, sql: str, *args: Any, **kwargs: Any) -> Tuple[Connection, Any]:
        """Every statement; one that drops or replaces a table the adapter keeps loaded makes it
        forget that table, before and after (loaded_tables.forget_dropped)."""
        loaded_tables.forget_dropped(sql)
        try:
            return super().add_query(sql, *args, **kwargs)
        finally:
            loaded_tables.forget_dropped(sql)

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


def with_kept_settings(connection: Connection) -> Connection:
    """The session method's statements through a cursor that hands the JVM the profile's settings
    as one kept map (session_cursor.py), not a py4j round trip per setting."""
    from dbt.adapters.spark.session import SessionConnectionWrapper  # PySpark's: the session method only

    from dbt.adapters.cdc_spark.session_cursor import KeptSettingsConnection

    handle = connection.handle
    if isinstance(handle, SessionConnectionWrapper) and not isinstance(handle.handle, KeptSettingsConnection):
        connection.handle = SessionConnectionWrapper(
            KeptSettingsConnection(server_side_parameters=handle.handle.server_side_parameters))
    return connection


def jvm_errors_as_messages(adapter_class: type) -> type:
    """The plugin's own methods that macros call (dbt's available) with an error of the JVM raised as
    its message, as a statement's is (exception_handler): a value a model's cast refuses fails while
    the optimizer computes rows held in the driver, in a method, and dbt printed the Py4J error's Java
    stack trace twice under "Unhandled error"."""
    for name in adapter_class._available_:
        method = inspect.getattr_static(adapter_class, name, None)
        if inspect.isfunction(method) and method.__module__.startswith("dbt.adapters.cdc_"):
            owner = next(base for base in adapter_class.__mro__ if name in vars(base))
            setattr(adapter_class, name, _messages_of_jvm_errors(name, method, None if owner is adapter_class else owner))
    return adapter_class


def _messages_of_jvm_errors(name: str, method: Any, owner: "type | None") -> Any:
    """method, or the one its owner (a mixin) holds at the call, so that a test's replacement of it there is called."""
    @functools.wraps(method)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        called = vars(owner).get(name, method) if owner is not None else method
        try:
            return called(*args, **kwargs)
        except DbtRuntimeError:
            raise
        except Exception as error:
            message = engine_error_message(error)
            if message is None:
                raise
            raise DbtRuntimeError(message) from None

    return wrapped


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
        if lost_commit_race(message):
            return message
    return None


_REFUSED_VALUE = "java.lang.RuntimeException: cdc_merge: "
# The frames a task's failure carries in its text ("\tat ...", "... 12 more"), and the driver's after them.
_STACK_LINE = re.compile(r"^\s+(at \S|\.\.\. \d+ more)")


def _without_stack(text: str) -> str:
    """An exception's text without the Java frames that a failed task's message holds."""
    kept = []
    for line in text.split("\n"):
        if line.startswith("Driver stacktrace:"):
            break
        if not _STACK_LINE.match(line):
            kept.append(line)
    return "\n".join(kept).rstrip()


def java_error_message(java: Any) -> str:
    """The JVM exception and its causes, one line each, and what to do when another writer won."""
    lines = []
    cause = java
    while cause is not None and len(lines) < 5:
        lines.append(_without_stack(str(cause.toString())))
        cause = cause.getCause()
    # A value a model's cast refuses (raise_error, macros/cdc_columns.sql) says all there is to say.
    refused = [line for line in lines if line.startswith(_REFUSED_VALUE)]
    message = refused[-1] if refused else "\n  caused by: ".join(lines)
    if lost_commit_race(message):
        message += (
            "\nAnother run committed to the same table at the same moment and this statement's commit lost "
            "(Iceberg's optimistic commit check). Nothing of this statement was committed and the mirror's "
            "offset did not advance: run again."
        )
    return message
