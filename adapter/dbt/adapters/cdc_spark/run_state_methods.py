"""The adapter methods behind the idle check on Spark and what it reads from Iceberg's metadata in
the JVM (macros/materializations/cdc_merge/idle.sql, raw_log.sql, maintenance), and a small table's
maintenance steps done there (driver_maintenance.py, table_properties.py, macros/maintenance/): a mixin of
CdcSparkAdapter, so that impl.py keeps dbt-spark's own concerns. What both adapters share for an
invocation (kept rows, capabilities) is invocation_methods.py; the state itself is run_state.py."""

import time
from typing import Any, Dict, List, Optional

from dbt.adapters.base import available
from dbt.adapters.base.meta import AdapterMeta
from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.cdc_core import run_state
from dbt.adapters.cdc_spark import driver_maintenance, loaded_tables, model_columns, table_metadata, table_properties

logger = AdapterLogger("cdc_spark")


class RunStateMethods(metaclass=AdapterMeta):
    """AdapterMeta collects the @available methods, as it does for the adapter class itself."""

    @available
    def cdc_idle_state(self, invocation_id: str, offsets_table: str, raw_table: str, target_table: str,
                       selected: List[str], nodes: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        """What idle.sql decides on: the mirror's newest offset and the raw table's current snapshot
        (each read once per invocation, run_state.py; the snapshot and the mirror's metadata from
        Iceberg's metadata in the JVM, so the invocation's other mirrors, selected and nodes, are
        not needed here); None when the SparkSession is not in this process or the mirror's
        metadata cannot be read."""
        spark = self._session_in_process()
        if spark is None:
            return None
        mirror = table_metadata.mirror_metadata(spark, target_table)
        if mirror is None:
            return None
        if loaded_tables.column_names(spark, offsets_table) is None:
            # No offsets table there (a mirror whose offsets_schema is new): the full path creates it.
            return None
        state = run_state.STATE
        newest = state.newest_offset(invocation_id, offsets_table, target_table, self._query_rows,
                                     lambda: loaded_tables.current_snapshot_or_none(spark, offsets_table))
        return {
            "offset_snapshot": newest["offset_snapshot"] if newest else None,
            "current_snapshot": state.raw_snapshot(invocation_id, raw_table, lambda: loaded_tables.current_snapshot(spark, raw_table)),
            "mirror": mirror,
        }

    @available
    def cdc_newest_offset(self, invocation_id: str, offsets_table: str, target_table: str) -> Optional[Dict[str, Any]]:
        """The mirror's newest offset ({'offset_snapshot', 'offset_ordinal'}; both none and 0 when it has
        none), from the invocation's one read of every mirror's (run_state.py); None when the
        SparkSession is not in this process (the caller queries)."""
        spark = self._session_in_process()
        if spark is None:
            return None
        newest = run_state.STATE.newest_offset(invocation_id, offsets_table, target_table, self._query_rows,
                                               lambda: loaded_tables.current_snapshot_or_none(spark, offsets_table))
        return dict(newest) if newest else {"offset_snapshot": None, "offset_ordinal": 0}

    def _query_rows(self, sql: str) -> List[Dict[str, Any]]:
        _, table = self.execute(sql, fetch=True)
        return [dict(zip(table.column_names, row)) for row in table.rows]

    @available
    def cdc_table_metadata(self, table: str) -> Optional[Dict[str, Any]]:
        """A table's files, snapshots and model checksum from Iceberg's metadata in the JVM
        (table_metadata.mirror_metadata): what maintenance_due needs, without a statement; None when
        the SparkSession is not in this process or the table cannot be read so."""
        spark = self._session_in_process()
        if spark is None:
            return None
        return table_metadata.mirror_metadata(spark, table)

    @available
    def cdc_compact_in_driver(self, table: str) -> Optional[Dict[str, int]]:
        """table compacted in the driver when it is small (driver_maintenance.py): the compaction's
        counts; None when the SparkSession is not in this process or the table is left to Spark's procedures."""
        spark = self._session_in_process()
        if spark is None:
            return None
        return driver_maintenance.compact(spark, table)

    @available
    def cdc_expire_in_driver(self, table: str, kept: List[str]) -> Optional[Dict[str, int]]:
        """table's snapshots before the oldest of kept expired in the driver when it is small
        (driver_maintenance.py): {snapshots_expired, files_removed}; None when the SparkSession is not
        in this process or the table is left to Spark's procedure."""
        spark = self._session_in_process()
        if spark is None:
            return None
        return driver_maintenance.expire(spark, table, kept)

    @available
    def cdc_set_missing_properties_in_driver(self, table: str, wanted: Dict[str, str]) -> Optional[Dict[str, str]]:
        """wanted's properties that table lacks, set through the Iceberg API (table_properties.py): those set;
        None when the SparkSession is not in this process (the caller asks by SQL)."""
        spark = self._session_in_process()
        if spark is None:
            return None
        return table_properties.set_missing(spark, table, wanted)

    @available
    def cdc_missing_table_properties(self, current: Dict[str, str], wanted: Dict[str, str]) -> Dict[str, str]:
        """wanted's properties that current (SHOW TBLPROPERTIES's) does not set (table_properties.py)."""
        return table_properties.missing_properties(current, wanted)

    @available
    def cdc_snapshot_log(self, table: str) -> Optional[Dict[str, Any]]:
        """The table's current snapshot and its snapshots, without a statement (table_metadata.snapshot_log);
        None when the SparkSession is not in this process or the table cannot be read so."""
        spark = self._session_in_process()
        if spark is None:
            return None
        try:
            return table_metadata.snapshot_log(spark, table)
        except Exception as error:  # the caller falls back to the metadata tables
            logger.debug(f"{table}: no snapshot log from Iceberg's metadata: {str(error).splitlines()[0][:300]}")
            return None

    @available
    def cdc_snapshot_history(self, table: str, keep_seconds: float) -> Optional[Dict[str, Any]]:
        """What snapshot expiry reads of a table's snapshots (table_metadata.snapshot_history), without
        a statement; None where cdc_snapshot_log has none."""
        log = self.cdc_snapshot_log(table)
        if log is None:
            return None
        return table_metadata.snapshot_history(log, keep_seconds, int(time.time() * 1000))

    @available
    def cdc_model_checksum(self, target_table: str) -> Optional[str]:
        """The checksum of the model SQL the mirror was last checked against (run_state.py)."""
        spark = self._session_in_process()
        if spark is None:
            return None
        mirror = table_metadata.mirror_metadata(spark, target_table)
        return mirror["model_checksum"] if mirror else None

    @available
    def cdc_model_columns_key(self, sql: str, raw_table: str) -> Optional[List[Any]]:
        """What the model's described columns are kept by between runs of this process (model_columns.py),
        or None where they are described each time."""
        spark = self._session_in_process()
        if spark is None:
            return None
        try:
            table = loaded_tables.refreshed_table(spark, raw_table)
        except Exception:  # noqa: BLE001 - not loadable here: described each time
            return None
        key = model_columns.keep_key(sql, table)
        return None if key is None else list(key)

    @available
    def cdc_kept_model_columns(self, key: Optional[List[Any]]) -> Optional[List[List[str]]]:
        columns = model_columns.kept(None if key is None else tuple(key))
        return None if columns is None else [[name, data_type] for name, data_type in columns]

    @available
    def cdc_keep_model_columns(self, key: Optional[List[Any]], columns: List[List[str]]) -> None:
        model_columns.keep(None if key is None else tuple(key), columns)
