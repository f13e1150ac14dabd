"""The session method's cursor (adapter/dbt/adapters/cdc_spark/session_cursor.py), in a real
SparkSession: the profile's settings hold before each statement as with dbt-spark's own cursor, with
one JVM call instead of a round trip per setting, and errors are dbt's."""

from __future__ import annotations

import pytest
from dbt.adapters.contracts.connection import Connection as DbtConnection
from dbt.adapters.spark import session as dbt_spark_session
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.cdc_spark.connections import with_kept_settings
from dbt.adapters.cdc_spark.session_cursor import KeptSettingsConnection, KeptSettingsCursor
from test_py4j_lookups import commands_sent

SETTINGS = {"spark.sql.shuffle.partitions": 3, "spark.sql.session.timeZone": "UTC",
            "spark.sql.catalogImplementation": "in-memory", "spark.ui.showConsoleProgress": "false"}


def test_the_profiles_settings_hold_before_each_statement_as_dbt_spark_makes_them(spark):
    for cursor_class in (dbt_spark_session.Cursor, KeptSettingsCursor):
        spark.conf.set("spark.sql.shuffle.partitions", "17")  # as a Python model may leave it
        cursor = cursor_class(server_side_parameters=SETTINGS)
        cursor.execute("select 1 + %s as two", 1)
        assert cursor.fetchall()[0][0] == 2
        assert spark.conf.get("spark.sql.shuffle.partitions") == "3", cursor_class
    # Other settings: another map, applied.
    cursor = KeptSettingsCursor(server_side_parameters={**SETTINGS, "spark.sql.shuffle.partitions": 5})
    cursor.execute("select 1")
    assert spark.conf.get("spark.sql.shuffle.partitions") == "5"


def test_a_statement_costs_one_call_for_the_settings(spark):
    def calls(cursor_class):
        cursor = cursor_class(server_side_parameters=SETTINGS)
        cursor.execute("select 1")  # the first: kept things made
        with commands_sent(spark) as sent:
            for _ in range(5):
                cursor.execute("select 1")
        return len(sent)

    dbt_spark_calls, kept_calls = calls(dbt_spark_session.Cursor), calls(KeptSettingsCursor)
    # Per statement: applyModifiableSettings, then PySpark's sql (its arguments' array made, then the call).
    assert kept_calls == 5 * 4
    assert dbt_spark_calls == 5 * (4 + 1 + len(SETTINGS)), dbt_spark_calls  # and a HashMap with a put per setting


def test_an_analysis_error_is_dbts_runtime_error(spark):
    with pytest.raises(DbtRuntimeError, match="cdc_merge_no_such_table"):
        KeptSettingsCursor(server_side_parameters=SETTINGS).execute("select * from cdc_merge_no_such_table")


def test_the_session_methods_connection_gets_the_kept_settings_cursor():
    connection = DbtConnection(type="cdc_spark", name="test", credentials=None,
                               handle=dbt_spark_session.SessionConnectionWrapper(
                                   dbt_spark_session.Connection(server_side_parameters=SETTINGS)))
    wrapped = with_kept_settings(connection).handle
    assert isinstance(wrapped, dbt_spark_session.SessionConnectionWrapper)
    assert isinstance(wrapped.handle, KeptSettingsConnection) and wrapped.handle.server_side_parameters == SETTINGS
    assert isinstance(wrapped.handle.cursor(), KeptSettingsCursor)
    assert with_kept_settings(connection).handle is wrapped  # once
