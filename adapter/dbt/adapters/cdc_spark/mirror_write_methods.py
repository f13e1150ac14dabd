"""The adapter methods through which the cdc_merge macros write a mirror in dbt's Spark session (or
through a Thrift server's cdc_merge catalog; raw_range_methods.py reads the raw range): the
classified batch kept in memory, deletes by
position (position_deletes.py), key ranges (iceberg_jvm.py), a small batch's stored keys read in the
driver (stored_keys.py), a small batch in one commit (OneCommitBatch.java), and the run's offsets
and runs rows written in the driver (kept_rows_in_driver.py). A mixin of
CdcSparkAdapter, so that impl.py keeps dbt-spark's own concerns."""

from typing import Any, Dict, List, Optional

from dbt.adapters.base import BaseRelation, available
from dbt.adapters.base.meta import AdapterMeta
from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.cdc_spark import (
    driver_counts,
    iceberg_jvm,
    kept_rows_in_driver,
    loaded_tables,
    local_rows,
    position_deletes,
    raw_ranges,
    stored_keys,
)

from python_jobs import crash_points
from python_jobs.apply import history_stages

logger = AdapterLogger("cdc_spark")


def observed_values(observation: Any, observed: List[str]) -> Dict[str, Any]:
    """The values of an Observation by the names of its select-list items ("count(*) as rows").
    Read by name: Observation.get iterates the Java map, and py4j ends that iteration with a Java
    exception it converts (about 17 ms, once a mirror)."""
    values = observation._jo.getAsJava()
    return {name: values.get(name) for name in (item.rsplit(" as ", 1)[-1].strip() for item in observed)}


class MirrorWriteMethods(metaclass=AdapterMeta):
    """AdapterMeta collects the @available methods, as it does for the adapter class itself."""

    @available
    def create_checkpoint_view(self, view_name: str, sql: str, observed: Optional[List[str]] = None,
                               in_driver: bool = False, counts: Optional[List[List[str]]] = None) -> Optional[Dict[str, Any]]:
        """The rows of sql, computed now and kept in Spark's block store (a local checkpoint), as the
        temporary view view_name: later statements read them without computing sql again, whatever
        happens to the tables it read. Returns the aggregates observed (select-list items such as
        "count(*) as rows") on the way, by name; None when the SparkSession is not in this process.

        in_driver: for a small batch, the rows are kept in the driver instead (a local relation), where
        the statements that read them with filters and projections run without a Spark job: a one-commit
        batch's two commits read them four times (about 0.2 s each from a checkpoint). counts (with
        in_driver): the observed aggregates as counts.sql change_counts() gives them; where Spark
        computes sql itself from local relations (classify.sql, stored_rows), the rows are kept and
        counted with no Spark job at all (driver_counts.py)."""
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        spark = self._session_in_process()
        if spark is None:
            return None
        rows = spark.sql(sql)
        kept = local_rows.computed_in_driver(rows, raw_ranges.MAX_DRIVER_EVENTS) if in_driver and counts is not None else None
        if kept is not None:
            kept.createOrReplaceTempView(view_name)
            self._checkpoints[view_name] = None
            return driver_counts.counts_in_driver(kept, counts)
        observation = Observation(f"{view_name}_observed") if observed else None
        if observation is not None:
            rows = rows.observe(observation, *(F.expr(item) for item in observed))
        if in_driver:
            rows = raw_ranges.in_driver(rows, as_rows=observation is not None)
            kept = None
        else:
            rows = kept = rows.localCheckpoint(eager=True)
        rows.createOrReplaceTempView(view_name)
        self._checkpoints[view_name] = kept
        return observed_values(observation, observed) if observation is not None else {}

    @available
    def cdc_history_chain_stages(self, from_range_deletes: bool, ranged: bool) -> List[str]:
        """cdc_history's write.sql: the chain's steps computed first into checkpoints (history_stages.py)."""
        return history_stages.chain_stages(self._session_in_process() is not None, bool(from_range_deletes), bool(ranged))

    @available
    def cdc_batch_key_hashes(self, batch_keys_sql: str) -> Optional[List[int]]:
        """The hashes of a small batch's keys when the driver holds them (raw_ranges.key_hashes_in_driver),
        else None (the classification broadcasts them)."""
        spark = self._session_in_process()
        if spark is None:
            return None
        return raw_ranges.key_hashes_in_driver(spark.sql(batch_keys_sql))

    @available
    def cdc_stored_rows_in_driver(self, batch_keys_sql: str, mirror: BaseRelation, mirror_snapshot: Optional[str],
                                  with_positions: bool, tombstones: Optional[BaseRelation] = None,
                                  tombstones_snapshot: Optional[str] = None) -> Optional[Dict[str, Optional[str]]]:
        """The stored rows of a small batch's keys in the mirror and its tombstones (with positions) at
        their snapshots, read in the driver (stored_keys.py): {'mirror', 'tombstones'}, hex-encoded JSON;
        None where they are not read so (the classification then joins the batch with scans)."""
        spark = self._session_in_process()
        if spark is None:
            return None
        lookups = [(f"{mirror.schema}.{mirror.identifier}", mirror_snapshot, bool(with_positions))]
        if tombstones is not None:
            lookups.append((f"{tombstones.schema}.{tombstones.identifier}", tombstones_snapshot, True))
        found = stored_keys.stored_rows_hex(spark, spark.sql(batch_keys_sql), lookups)
        if found is None:
            return None
        return {"mirror": found[0], "tombstones": found[1] if tombstones is not None else None}

    @available
    def cdc_indexed_stored_rows_views(self, batch_keys_sql: str, view_prefix: str, mirror: BaseRelation,
                                      mirror_snapshot: str, tombstones: Optional[BaseRelation] = None,
                                      tombstones_snapshot: Optional[str] = None) -> Optional[Dict[str, Optional[str]]]:
        """The stored rows of a batch's keys in the mirror and its tombstones at their snapshots, from
        the key indexes this process keeps (stored_keys.py), as temporary views the classification reads
        instead of scanning the tables: {'mirror', 'tombstones'} view names; None where not indexed."""
        spark = self._session_in_process()
        if spark is None:
            return None
        lookups = [(f"{mirror.schema}.{mirror.identifier}", mirror_snapshot, f"{view_prefix}__cdc_stored_mirror")]
        if tombstones is not None:
            lookups.append((f"{tombstones.schema}.{tombstones.identifier}", tombstones_snapshot, f"{view_prefix}__cdc_stored_tombstones"))
        views = stored_keys.indexed_rows_views(spark, spark.sql(batch_keys_sql), lookups)
        if views is None:
            return None
        return {"mirror": views[0], "tombstones": views[1] if tombstones is not None else None}

    @available
    def cdc_kept_offset_ordinals(self, offsets: str, targets: List[str]) -> Optional[List[int]]:
        """The kept offset rows' ordinals, from offsets read in the driver (kept_rows_in_driver.py)."""
        spark = self._session_in_process()
        return None if spark is None else kept_rows_in_driver.offset_ordinals(spark, offsets, list(targets))

    @available
    def cdc_kept_runs_lines(self, runs: str, quarantine: Optional[str], targets: List[str]) -> Optional[List[Optional[int]]]:
        """The kept runs rows' lines_quarantined, from runs and quarantine read in the driver."""
        spark = self._session_in_process()
        return None if spark is None else kept_rows_in_driver.lines_quarantined(spark, runs, quarantine, list(targets))

    def _append_rows_in_driver(self, statement: Dict[str, Any]) -> None:
        kept_rows_in_driver.append(self._session_in_process(), statement)

    @available
    def cdc_drop_temporary_view(self, view_name: str) -> bool:
        """Drops a temporary view of dbt's session through its catalog (no statement to parse); False
        where the session is elsewhere."""
        spark = self._session_in_process()
        if spark is None:
            return False
        spark.catalog.dropTempView(view_name)
        return True

    @available
    def drop_checkpoint_view(self, view_name: str) -> None:
        """Drops a view of create_checkpoint_view and frees its rows now, not at the JVM's next GC."""
        spark = self._session_in_process()
        spark.catalog.dropTempView(view_name)
        rows = self._checkpoints.pop(view_name, None)
        if rows is not None:
            rows._jdf.logicalPlan().rdd().unpersist(True)

    @available
    def deletes_by_position(self, relation: BaseRelation) -> bool:
        """Whether rows of this Iceberg table can be deleted at the positions a query found them at
        (delete_rows_by_position): in this process's SparkSession or through a Thrift server whose
        catalog is cdc_merge.iceberg.CdcMergeSparkCatalog, on unpartitioned tables of
        Iceberg format 2, with the jar of iceberg_jvm.py."""
        table = f"{relation.schema}.{relation.identifier}"
        spark = self._session_in_process()
        if self._thrift_procedures():
            reason = self._call_procedure("snapshot_position_deletes_unsupported", table=table)["reason"]
        elif spark is None:
            return False
        else:
            reason = position_deletes.unsupported_reason(spark, table)
        if reason:
            logger.debug(f"{relation}: deleting replaced rows with a MERGE, not by position: {reason}")
        return not reason

    @available
    def key_range_skips_files(self, relation: BaseRelation, column: str, min_hex: str, max_hex: str) -> Optional[bool]:
        """Whether reading relation's rows with column between the two hex-encoded UTF-8 bounds skips any
        of its data files; None where it is not known (no jar; a Thrift server without the
        helpers' catalog)."""
        table = f"{relation.schema}.{relation.identifier}"
        lower, upper = [bytes.fromhex(value).decode("utf-8") for value in (min_hex, max_hex)]
        if self._thrift_procedures():
            return self._call_procedure("snapshot_key_range_skips_files", table=table, column=column, lower=lower, upper=upper)["skips"]
        spark = self._session_in_process()
        if spark is None:
            return None
        return iceberg_jvm.key_range_skips_files(spark, table, column, lower, upper)

    @available
    def delete_rows_by_position(self, relation: BaseRelation, branch: str, positions_sql: str, expected_positions: int) -> int:
        """Deletes the rows at the positions positions_sql gives (file_hash, pos) from branch of
        relation, in one commit; the number of position delete files added."""
        if self._thrift_procedures():
            return self._call_procedure(
                "snapshot_position_deletes", table=f"{relation.schema}.{relation.identifier}", branch=branch,
                positions_sql=positions_sql, expected_positions=int(expected_positions),
            )["delete_files"]
        spark = self._session_in_process()
        return position_deletes.delete_rows(
            spark, f"{relation.schema}.{relation.identifier}", branch, positions_sql, int(expected_positions)
        )

    @available
    def cdc_table_loads(self, relation: BaseRelation) -> bool:
        """Whether a table the catalog lists can be loaded (loaded_tables.table_loads)."""
        spark = self._session_in_process()
        return loaded_tables.table_loads(spark, f"{relation.schema}.{relation.identifier}")

    @available
    def cdc_column_names(self, relation: BaseRelation) -> Optional[List[str]]:
        """The Iceberg table's column names, from its metadata in the JVM (no statement); None when it cannot be loaded."""
        spark = self._session_in_process()
        return loaded_tables.column_names(spark, f"{relation.schema}.{relation.identifier}")

    @available
    def cdc_stored_column_types(self, relation: BaseRelation) -> Optional[List[List[str]]]:
        """The Iceberg table's [name, type] as DESCRIBE gives them, from its metadata in the JVM (no
        statement); None where the session is elsewhere or the table cannot be loaded so."""
        spark = self._session_in_process()
        if spark is None:
            return None
        columns = loaded_tables.column_types(spark, f"{relation.schema}.{relation.identifier}")
        return None if columns is None else [[name, data_type] for name, data_type in columns]

    @available
    def cdc_current_snapshot(self, relation: BaseRelation) -> Optional[str]:
        """The Iceberg table's current snapshot id, from its metadata in the JVM (no statement)."""
        spark = self._session_in_process()
        return loaded_tables.current_snapshot(spark, f"{relation.schema}.{relation.identifier}")

    @available
    def cdc_snapshot_columns(self, relation: BaseRelation, snapshot_id: str) -> List[str]:
        """The Iceberg table's column names at snapshot snapshot_id (a read at it sees no others)."""
        return loaded_tables.snapshot_column_names(self._session_in_process(), f"{relation.schema}.{relation.identifier}",
                                                   snapshot_id)

    @available
    def cdc_commit_one_batch(self, relation: BaseRelation, classified_at: str, positions_sql: str, expected_positions: int,
                             rows_sql: str, expected_rows: int, mirror: bool = True) -> int:
        """A batch's deletes by position and new rows in one commit on main (OneCommitBatch.java); the
        delete files added. Of the mirror (not its tombstones), crash point apply-before-publish: its
        files are written, not committed."""
        spark = self._session_in_process()
        before_commit = (lambda: crash_points.crash_point("apply-before-publish")) if mirror else (lambda: None)
        return position_deletes.commit_one_batch(
            spark, f"{relation.schema}.{relation.identifier}", classified_at, positions_sql, int(expected_positions),
            rows_sql, int(expected_rows), before_commit)
