"""dbt-spark's session cursor, handing the profile's settings to the JVM as one kept map.

For every statement dbt-spark's `Cursor.execute` builds a `SparkSession.builder` with each of the
profile's `server_side_parameters` and calls `getOrCreate`, which, under PySpark's one builder
lock, converts them to a Java map (a py4j round trip per setting) and applies the runtime ones to the
session (`SparkSession.applyModifiableSettings`). Here that map is built in the JVM once per session
and settings, and each statement applies it with one call: the session's settings before each
statement are what dbt-spark makes them. The first statement, which starts the session, takes
dbt-spark's own path. Before each statement the session's fold of driver rows is also made what
compiled_fold.py says (a look-up once it is).
"""

from __future__ import annotations

import threading
from typing import Any, Dict, Tuple

from dbt.adapters.spark import session as dbt_spark_session
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.cdc_spark.compiled_fold import ensure_compiled_fold

# What SparkSession.builder.enableHiveSupport() sets, before the profile's settings (which may override it).
HIVE_SUPPORT = {"spark.sql.catalogImplementation": "hive"}

_kept_lock = threading.Lock()
_kept: Dict[Tuple[Any, Tuple[Tuple[str, str], ...]], Any] = {}


def builder_options(server_side_parameters: Dict[str, Any]) -> Dict[str, str]:
    """The options dbt-spark's builder hands getOrCreate: hive support, then the settings as strings."""
    return {**HIVE_SUPPORT, **{name: str(value) for name, value in server_side_parameters.items()}}


def settings_map(session: Any, server_side_parameters: Dict[str, Any]) -> Any:
    """The builder's options as a java.util.HashMap, made once per session and settings."""
    options = builder_options(server_side_parameters)
    # The Python session, not its JVM object: hashing a JavaObject asks the JVM for its hashCode.
    key = (session, tuple(sorted(options.items())))
    with _kept_lock:
        kept = _kept.get(key)
        if kept is None:
            for stale in [known for known in _kept if known[0] is not session]:
                del _kept[stale]  # a stopped session's map
            kept = session._jvm.java.util.HashMap()
            for name, value in options.items():
                kept.put(name, value)
            _kept[key] = kept
    return kept


class KeptSettingsCursor(dbt_spark_session.Cursor):
    def execute(self, sql: str, *parameters: Any) -> None:
        from pyspark.sql import SparkSession
        from pyspark.sql.utils import AnalysisException  # as dbt-spark's cursor catches it

        if len(parameters) > 0:
            sql = sql % parameters
        session = SparkSession._instantiatedSession
        if session is None or session._sc._jsc is None:
            super().execute(sql)
            ensure_compiled_fold(SparkSession._instantiatedSession, self.server_side_parameters)
            return
        ensure_compiled_fold(session, self.server_side_parameters)
        module = getattr(getattr(session._jvm, "SparkSession$"), "MODULE$")
        module.applyModifiableSettings(session._jsparkSession, settings_map(session, self.server_side_parameters))
        try:
            self._df = session.sql(sql)
        except AnalysisException as exc:
            raise DbtRuntimeError(str(exc)) from exc


class KeptSettingsConnection(dbt_spark_session.Connection):
    def cursor(self) -> KeptSettingsCursor:
        return KeptSettingsCursor(server_side_parameters=self.server_side_parameters)
