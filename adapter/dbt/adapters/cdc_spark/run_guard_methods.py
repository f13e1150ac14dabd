"""The adapter methods behind run_guard.sql: one process applies a mirror at a time, maintenance
writes the raw table only while no landing does, and the named crash points
(python_jobs/run_locks.py, python_jobs/crash_points.py, RELIABILITY.md). A mixin of CdcSparkAdapter."""

import threading
from typing import Any, Dict, List, Optional

from dbt.adapters.base import available
from dbt.adapters.base.meta import AdapterMeta
from dbt.adapters.events.logging import AdapterLogger
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.cdc_core import run_state

from python_jobs import catalog_locks, commit_race, crash_points, run_locks
from python_jobs.apply.large_batch_gate import GATE

logger = AdapterLogger("cdc_spark")

# Deletes from a shared table that threads of this process run one at a time, by table.
_SERIALIZED: Dict[str, threading.Lock] = {}
_SERIALIZED_GUARD = threading.Lock()
# The threads of one run take a consistency group's lock once, for all its mirrors.
_GROUP_GUARD = threading.Lock()


class RunGuardMethods(metaclass=AdapterMeta):
    """AdapterMeta collects the @available methods, as it does for the adapter class itself."""

    @available
    def cdc_crash_point(self, point: str) -> str:
        """Die here if CDC_MERGE_CRASH_AT names point (python_jobs/crash_points.py)."""
        crash_points.crash_point(point)
        return ""

    @available
    def cdc_lock_mirror(self, target_table: str, consistency_group: Optional[str] = None) -> str:
        """Apply the mirror alone: wait while another process applies it (python_jobs/run_locks.py), on
        any machine where the catalog is a PostgreSQL database (python_jobs/catalog_locks.py). There, on
        a catalog with transactions, a group's mirror first waits while another run holds the group:
        its catalog transaction, open until published, would be discarded by this run's joining one."""
        warehouse = self._warehouse()
        database = self._catalog_database() if warehouse is None else None
        try:
            if warehouse is not None:
                run_locks.acquire(run_locks.lock_file("mirror", warehouse, target_table), f"mirror {target_table}")
            elif database is not None:
                if consistency_group and self._catalog_has_transactions():  # type: ignore[attr-defined]
                    self._lock_group(database, consistency_group)
                catalog_locks.acquire(database, "mirror", target_table, f"mirror {target_table}")
        except run_locks.LockBusy as busy:
            raise DbtRuntimeError(str(busy)) from None
        return ""

    def _lock_group(self, database: catalog_locks.CatalogDatabase, group: str) -> None:
        """The group's lock, taken by this run's first mirror of it (the group before the mirror, in
        every run, so that two runs never wait on each other) and kept until its publish."""
        with _GROUP_GUARD:
            if not catalog_locks.holds(database, "group", group):
                catalog_locks.acquire(database, "group", group, f"consistency group {group}")

    @available
    def cdc_release_group(self, group: str) -> str:
        """Once the group's catalog transaction is published (or at the invocation's end, with every
        lock); cdc_maintain's after each mirror."""
        database = self._catalog_database() if self._warehouse() is None else None
        if database is not None:
            with _GROUP_GUARD:
                catalog_locks.release(database, "group", group)
        return ""

    @available
    def cdc_unlock_mirror(self, target_table: str) -> str:
        """At the end of the mirror's run; a mirror whose offset row is kept (kept_rows.py) stays
        locked until that row is written (cdc_write_kept_rows)."""
        GATE.release_held()
        if not run_state.STATE.kept.holds_offset(target_table):
            self.cdc_release_mirror(target_table)
        return ""

    @available
    def cdc_enter_large_batch(self, chunks: List[Dict[str, Any]]) -> str:
        """Before a mirror reads its chunks: wait while another dbt thread applies a large chunk, if
        one of these is large (python_jobs/apply/large_batch_gate.py)."""
        GATE.enter(max((int(chunk.get("events") or 0) for chunk in chunks), default=0))
        return ""

    def release_connection(self) -> None:
        """dbt releases a node's connection when the node ends, failed or not: its gate goes too."""
        GATE.release_held()
        super().release_connection()

    def cdc_release_mirror(self, target_table: str) -> None:
        warehouse = self._warehouse()
        database = self._catalog_database() if warehouse is None else None
        if warehouse is not None:
            run_locks.release(run_locks.lock_file("mirror", warehouse, target_table))
        elif database is not None:
            catalog_locks.release(database, "mirror", target_table)

    @available
    def cdc_delete_from_shared_table(self, table: str, sql: str) -> str:
        """A DELETE by predicate from a table the mirrors share (maintenance's trims of the offsets and
        runs tables, a rebuilt mirror's or history's truncates): one at a time in this process, since two such rewrites of the same files
        committed at once fail the second, and run again when it loses the commit race to an append
        (python_jobs/commit_race.py)."""
        with _SERIALIZED_GUARD:
            lock = _SERIALIZED.setdefault(table, threading.Lock())
        with lock:
            retried = commit_race.run_idempotent(lambda statement: self.execute(statement), sql)
        if retried:
            logger.info(f"cdc_merge {table}: a delete ran {retried + 1} times (another writer committed meanwhile)")
        return ""

    @available
    def cdc_try_lock_table(self, table: str) -> bool:
        """Take the table's lock if no other process (a landing) holds it; never waits."""
        warehouse = self._warehouse()
        if warehouse is None:
            return True
        try:
            run_locks.acquire(run_locks.lock_file("table", warehouse, table.lower()), f"table {table}", wait=0)
        except run_locks.LockBusy:
            return False
        return True

    @available
    def cdc_unlock_table(self, table: str) -> str:
        warehouse = self._warehouse()
        if warehouse is not None:
            run_locks.release(run_locks.lock_file("table", warehouse, table.lower()))
        return ""

    def _catalog_database(self) -> Optional[catalog_locks.CatalogDatabase]:
        """On a Thrift server: the catalog's PostgreSQL database (a JDBC catalog), which every machine reaches."""
        if not self._on_thrift():
            return None
        return catalog_locks.catalog_database(self.connections.profile.credentials.server_side_parameters or {})

    def _warehouse(self) -> Optional[str]:
        """The local warehouse folder of the session's catalog; None on a remote store or without a session."""
        spark = self._session_in_process()
        if spark is None:
            return None
        conf = spark.conf
        location = conf.get(f"spark.sql.catalog.{conf.get('spark.sql.defaultCatalog', 'spark_catalog')}.warehouse", None)
        if not location or ("://" in location and not location.startswith("file:")):
            return None
        return location.removeprefix("file://").removeprefix("file:")
