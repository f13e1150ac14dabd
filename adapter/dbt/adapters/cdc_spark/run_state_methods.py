"""The adapter methods behind the idle check and what the mirrors of one invocation share
(macros/materializations/cdc_merge/idle.sql, raw_log.sql, maintenance): a mixin of CdcSparkAdapter,
so that impl.py keeps dbt-spark's own concerns. The state itself is run_state.py."""

from typing import Any, Dict, List, Optional

from dbt.adapters.base import available
from dbt.adapters.base.meta import AdapterMeta
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.connections import SparkConnectionMethod

from dbt.adapters.cdc_spark import run_state
from dbt.adapters.cdc_spark.python_session import dbt_spark_session

logger = AdapterLogger("cdc_spark")


class RunStateMethods(metaclass=AdapterMeta):
    """AdapterMeta collects the @available methods, as it does for the adapter class itself."""

    @available
    def cdc_idle_state(self, invocation_id: str, offsets_table: str, raw_table: str, target_table: str) -> Optional[Dict[str, Any]]:
        """What idle.sql decides on: the mirror's newest offset and the raw table's current snapshot
        (each read once per invocation, run_state.py; the snapshot and the mirror's metadata from
        Iceberg's metadata in the JVM); None
        when the SparkSession is not in this process or the mirror's metadata cannot be read."""
        credentials = self.connections.profile.credentials
        if credentials.method != SparkConnectionMethod.SESSION:
            return None
        spark = dbt_spark_session(credentials.server_side_parameters)
        mirror = run_state.mirror_metadata(spark, target_table)
        if mirror is None:
            return None
        state = run_state.STATE
        return {
            "offset_snapshot": state.newest_offset(invocation_id, offsets_table, target_table, self._query_rows),
            "current_snapshot": state.raw_snapshot(invocation_id, raw_table, lambda: run_state.current_snapshot(spark, raw_table)),
            "mirror": mirror,
        }

    def _query_rows(self, sql: str) -> List[Dict[str, Any]]:
        _, table = self.execute(sql, fetch=True)
        return [dict(zip(table.column_names, row)) for row in table.rows]

    @available
    def cdc_first_time_in_invocation(self, invocation_id: str, key: str) -> bool:
        return run_state.STATE.first_time(invocation_id, key)

    @available
    def cdc_keep_idle_run(self, row: Dict[str, Any]) -> None:
        run_state.STATE.add_idle_run(dict(row))

    @available
    def cdc_idle_runs_left_unwritten(self, invocation_id: str) -> List[Dict[str, Any]]:
        return run_state.STATE.runs_left_unwritten(invocation_id)

    @available
    def cdc_idle_runs_to_write(self, invocation_id: str, selected: List[str], nodes: Dict[str, Any]) -> List[Dict[str, Any]]:
        return run_state.STATE.runs_to_write(invocation_id, lambda: run_state.expected_mirrors(selected, nodes))

    @available
    def cdc_table_metadata(self, table: str) -> Optional[Dict[str, Any]]:
        """A table's files, snapshots and model checksum from Iceberg's metadata in the JVM
        (run_state.mirror_metadata): what maintenance_due needs, without a statement; None when
        the SparkSession is not in this process or the table cannot be read so."""
        credentials = self.connections.profile.credentials
        if credentials.method != SparkConnectionMethod.SESSION:
            return None
        return run_state.mirror_metadata(dbt_spark_session(credentials.server_side_parameters), table)

    @available
    def cdc_snapshot_log(self, table: str) -> Optional[Dict[str, Any]]:
        """The table's current snapshot and its snapshots, without a statement (run_state.snapshot_log);
        None when the SparkSession is not in this process or the table cannot be read so."""
        credentials = self.connections.profile.credentials
        if credentials.method != SparkConnectionMethod.SESSION:
            return None
        try:
            return run_state.snapshot_log(dbt_spark_session(credentials.server_side_parameters), table)
        except Exception as error:  # the caller falls back to the metadata tables
            logger.debug(f"{table}: no snapshot log from Iceberg's metadata: {str(error).splitlines()[0][:300]}")
            return None

    @available
    def cdc_model_checksum(self, target_table: str) -> Optional[str]:
        """The checksum of the model SQL the mirror was last checked against (run_state.py)."""
        credentials = self.connections.profile.credentials
        if credentials.method != SparkConnectionMethod.SESSION:
            return None
        mirror = run_state.mirror_metadata(dbt_spark_session(credentials.server_side_parameters), target_table)
        return mirror["model_checksum"] if mirror else None
