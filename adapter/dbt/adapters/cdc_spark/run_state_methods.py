"""The adapter methods behind the idle check and what the mirrors of one invocation share
(macros/materializations/cdc_merge/idle.sql, raw_log.sql, maintenance): a mixin of CdcSparkAdapter,
so that impl.py keeps dbt-spark's own concerns. The state itself is run_state.py."""

from typing import Any, Dict, List, Optional

from dbt.adapters.base import available
from dbt.adapters.base.meta import AdapterMeta
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.connections import SparkConnectionMethod

from dbt.adapters.cdc_spark import loaded_tables, run_state, table_metadata
from dbt.adapters.cdc_spark.kept_rows import KeptRow, grouped, mirrors_to_release
from dbt.adapters.cdc_spark.python_session import dbt_spark_session

from python_jobs import run_locks

logger = AdapterLogger("cdc_spark")
# How long a data test waits for another thread to finish writing the rows it took (one INSERT each).
_WAIT_FOR_KEPT_ROWS_SECONDS = 120


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
        mirror = table_metadata.mirror_metadata(spark, target_table)
        if mirror is None:
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
        credentials = self.connections.profile.credentials
        if credentials.method != SparkConnectionMethod.SESSION:
            return None
        spark = dbt_spark_session(credentials.server_side_parameters)
        newest = run_state.STATE.newest_offset(invocation_id, offsets_table, target_table, self._query_rows,
                                               lambda: loaded_tables.current_snapshot_or_none(spark, offsets_table))
        return dict(newest) if newest else {"offset_snapshot": None, "offset_ordinal": 0}

    def _query_rows(self, sql: str) -> List[Dict[str, Any]]:
        _, table = self.execute(sql, fetch=True)
        return [dict(zip(table.column_names, row)) for row in table.rows]

    @available
    def cdc_first_time_in_invocation(self, invocation_id: str, key: str) -> bool:
        return run_state.STATE.first_time(invocation_id, key)

    @available
    def cdc_first_time_in_process(self, key: str) -> bool:
        return run_state.STATE.first_time_in_process(key)

    @available
    def cdc_keeps_rows(self) -> bool:
        """Whether a mirror's last offset row and its runs row are kept to be written with the other
        mirrors' (kept_rows.py): where dbt's SparkSession is in this process."""
        return self.connections.profile.credentials.method == SparkConnectionMethod.SESSION

    @available
    def cdc_keep_row(self, kind: str, invocation_id: str, table: str, target_table: str, values: Dict[str, Any]) -> str:
        run_state.STATE.kept.keep(KeptRow(kind, invocation_id, table, target_table, dict(values)))
        return ""

    @available
    def cdc_kept_rows_left_unwritten(self, invocation_id: str) -> Dict[str, Any]:
        """At a mirror's start: the kept rows of earlier invocations, to write now (write_kept_rows)."""
        return _to_write(run_state.STATE.rows_left_unwritten(invocation_id))

    @available
    def cdc_kept_rows_for_readers(self) -> Dict[str, Any]:
        """Before a data test reads offsets or runs rows: the rows of the mirrors that have finished
        (a row is kept only when its mirror ends), so `dbt build`'s tests of a mirror see its run while
        other mirrors of the invocation still apply."""
        kept = run_state.STATE.kept
        if not kept.wait_for_writes(timeout=_WAIT_FOR_KEPT_ROWS_SECONDS):
            logger.warning("cdc_merge: another thread's offsets and runs rows were not written within "
                           f"{_WAIT_FOR_KEPT_ROWS_SECONDS} s; this test may see a mirror's previous run")
        return _to_write(kept.take_all())

    @available
    def cdc_kept_rows_to_write(self, invocation_id: str, selected: List[str], nodes: Dict[str, Any]) -> Dict[str, Any]:
        """At a mirror's end: every kept row when it is the last mirror of the invocation to finish."""
        return _to_write(run_state.STATE.rows_to_write(invocation_id, lambda: run_state.expected_mirrors(selected, nodes)))

    def cleanup_connections(self) -> None:
        """At the end of every dbt invocation (dbt calls it in a finally): the rows still kept (a mirror
        failed, so the last one never finished) are written before the connections close; if that
        fails they are dropped, their mirrors' offsets stay where they were, and the next run replays
        those events harmlessly. Then every lock this process took is released, a failed mirror's too."""
        try:
            if len(run_state.STATE.kept):
                to_write = _to_write(run_state.STATE.kept.take_all())
                with self.connection_named("cdc_merge_kept_rows"):
                    self.execute_macro("write_kept_rows", kwargs={"to_write": to_write})
        except Exception as error:  # noqa: BLE001 - dbt's own cleanup must still run
            logger.warning(f"cdc_merge: the offsets and runs rows of this run were not written ({error}); "
                           "the next run applies their mirrors' events again, which changes nothing")
        finally:
            run_state.STATE.kept.forget_writes()
            run_locks.release_all()
            super().cleanup_connections()

    @available
    def cdc_write_kept_rows(self, statements: List[str], release: List[str]) -> str:
        """Runs the INSERTs of the kept rows, then releases the locks their mirrors kept until their
        offsets were written, whether the INSERTs succeeded or not."""
        try:
            for sql in statements:
                self.execute(sql)
        finally:
            run_state.STATE.kept.written()
            for target_table in release:
                self.cdc_release_mirror(target_table)
        return ""

    @available
    def cdc_table_metadata(self, table: str) -> Optional[Dict[str, Any]]:
        """A table's files, snapshots and model checksum from Iceberg's metadata in the JVM
        (table_metadata.mirror_metadata): what maintenance_due needs, without a statement; None when
        the SparkSession is not in this process or the table cannot be read so."""
        credentials = self.connections.profile.credentials
        if credentials.method != SparkConnectionMethod.SESSION:
            return None
        return table_metadata.mirror_metadata(dbt_spark_session(credentials.server_side_parameters), table)

    @available
    def cdc_snapshot_log(self, table: str) -> Optional[Dict[str, Any]]:
        """The table's current snapshot and its snapshots, without a statement (table_metadata.snapshot_log);
        None when the SparkSession is not in this process or the table cannot be read so."""
        credentials = self.connections.profile.credentials
        if credentials.method != SparkConnectionMethod.SESSION:
            return None
        try:
            return table_metadata.snapshot_log(dbt_spark_session(credentials.server_side_parameters), table)
        except Exception as error:  # the caller falls back to the metadata tables
            logger.debug(f"{table}: no snapshot log from Iceberg's metadata: {str(error).splitlines()[0][:300]}")
            return None

    @available
    def cdc_model_checksum(self, target_table: str) -> Optional[str]:
        """The checksum of the model SQL the mirror was last checked against (run_state.py)."""
        credentials = self.connections.profile.credentials
        if credentials.method != SparkConnectionMethod.SESSION:
            return None
        mirror = table_metadata.mirror_metadata(dbt_spark_session(credentials.server_side_parameters), target_table)
        return mirror["model_checksum"] if mirror else None


def _to_write(rows: List[KeptRow]) -> Dict[str, Any]:
    """Kept rows as write_kept_rows reads them: one group per INSERT, and the mirrors to release after."""
    return {"groups": grouped(rows), "release": mirrors_to_release(rows)}
