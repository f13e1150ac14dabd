"""The adapter methods both plugins share for the mirrors of one invocation
(macros/materializations/cdc_merge/idle.sql, kept_rows.sql, capabilities.sql): what the macros may
ask of the connection (capabilities.py), work done once per invocation or process, and the offsets
and runs rows kept to be written once for all mirrors (kept_rows.py). A mixin of CdcSparkAdapter and
CdcDatabendAdapter; the state itself is run_state.py."""

import os
from typing import Any, Dict, List

from dbt.adapters.base import available
from dbt.adapters.base.meta import AdapterMeta
from dbt.adapters.events.logging import AdapterLogger
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.cdc_core import package_match, run_state
from dbt.adapters.cdc_core.capabilities import Capabilities
from dbt.adapters.cdc_core.kept_rows import KeptRow, grouped, mirrors_to_release

from python_jobs import run_locks
from python_jobs.status.registry import REGISTRY

logger = AdapterLogger("cdc_merge")
# How long a data test waits for another thread to finish writing the rows it took (one INSERT each).
_WAIT_FOR_KEPT_ROWS_SECONDS = 120


class InvocationMethods(metaclass=AdapterMeta):
    """AdapterMeta collects the @available methods, as it does for the adapter class itself."""

    def __init__(self, config: Any, mp_context: Any) -> None:
        super().__init__(config, mp_context)
        # Before any SQL: a wheel of another revision than the project's dbt package (package_match.py).
        try:
            package_match.check(str(getattr(config, "project_name", "")), str(getattr(config, "project_root", ".")),
                                str(getattr(config, "packages_install_path", None) or "dbt_packages"))
        except package_match.PackageMismatch as error:
            raise DbtRuntimeError(str(error)) from None

    def cdc_connection_capabilities(self) -> Capabilities:
        """Each adapter's own (dbt's BaseAdapter.capabilities is another thing: dbt's features)."""
        raise NotImplementedError

    @available
    def cdc_project_path(self, path: str) -> str:
        """A file the project names (its landing config) as the project's folder has it, as dbt reads the
        project's own files: not relative to where dbt runs (--project-dir from another folder)."""
        return os.path.abspath(os.path.join(self.config.project_root, os.path.expanduser(str(path))))

    @available
    def cdc_tested_model_config(self, unique_id: str) -> Dict[str, Any]:
        """The config of the model a dbt unit test tests: the unit test's own context has the unit test
        node and a graph of its fixtures only; the manifest dbt gave the adapter for its macros holds
        every node. {} where it has none of that id."""
        nodes = getattr(getattr(self, "_macro_resolver", None), "nodes", None) or {}
        node = nodes.get(str(unique_id))
        config = getattr(node, "config", None)
        return dict(config.to_dict()) if config is not None else {}

    @available
    def cdc_execute_one_at_a_time(self, key: str, statements: List[str]) -> None:
        """Statements that one thread of the process runs at a time per key: the shared tables' create
        if not exists, which concurrent mirrors would otherwise race (a failed commit, a warning)."""
        with run_state.STATE.lock(key):
            for statement in statements:
                self.execute(statement)

    @available
    def cdc_capabilities(self) -> Dict[str, bool]:
        """What the macros may ask of this connection (capabilities.sql)."""
        return self.cdc_connection_capabilities().as_dict()

    @available
    def cdc_first_time_in_invocation(self, invocation_id: str, key: str) -> bool:
        """Work the mirrors of an invocation share is done by the first (run_state.py)."""
        return run_state.STATE.first_time(invocation_id, key)

    @available
    def cdc_first_time_in_process(self, key: str) -> bool:
        return run_state.STATE.first_time_in_process(key)

    def _append_rows_in_driver(self, statement: Dict[str, Any]) -> None:
        """cdc_spark's (mirror_write_methods.py): asked only where cdc_kept_offset_ordinals or
        cdc_kept_runs_lines answered."""
        raise NotImplementedError

    def _publish_catalog_transactions_left_open(self) -> None:
        """ConsistencyMethods' (both adapters)."""
        raise NotImplementedError

    def _release_kept_mirror(self, target_table: str) -> None:
        """Once a mirror's kept offset row is written: its lock, where the adapter keeps one."""

    @available
    def cdc_keep_row(self, kind: str, invocation_id: str, table: str, target_table: str, values: Dict[str, Any]) -> str:
        run_state.STATE.kept.keep(KeptRow(kind, invocation_id, table, target_table, dict(values)))
        if kind == "run":
            self.cdc_observe_run(target_table, values)
        return ""

    @available
    def cdc_observe_run(self, target_table: str, values: Dict[str, Any]) -> str:
        """A mirror's runs row, to the figures cdc-run's status endpoint shows (python_jobs/status/registry.py)."""
        REGISTRY.observe_run_row(target_table, values)
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
        those events harmlessly. A consistency group's catalog transaction no cut published is published
        then. Then every lock this process took is released, a failed mirror's too."""
        try:
            if len(run_state.STATE.kept):
                to_write = _to_write(run_state.STATE.kept.take_all())
                with self.connection_named("cdc_merge_kept_rows"):
                    self.execute_macro("write_kept_rows", kwargs={"to_write": to_write})
        except Exception as error:  # noqa: BLE001 - dbt's own cleanup must still run
            logger.warning(f"cdc_merge: the offsets and runs rows of this run were not written ({error}); "
                           "the next run applies their mirrors' events again, which changes nothing")
        finally:
            self._publish_catalog_transactions_left_open()
            run_state.STATE.kept.forget_writes()
            run_locks.release_all()
            super().cleanup_connections()  # type: ignore[misc]

    @available
    def cdc_write_kept_rows(self, statements: List[Any], release: List[str]) -> str:
        """Runs the INSERTs of the kept rows (or appends, in the driver, the rows of a statement given
        as {'append_to', 'select', 'rows'}: write_kept_rows), then releases the locks their
        mirrors kept until their offsets were written, whether the writes succeeded or not."""
        try:
            for statement in statements:
                if isinstance(statement, dict):
                    self._append_rows_in_driver(statement)
                else:
                    self.execute(statement)
        finally:
            run_state.STATE.kept.written()
            for target_table in release:
                self._release_kept_mirror(target_table)
        return ""


def _to_write(rows: List[KeptRow]) -> Dict[str, Any]:
    """Kept rows as write_kept_rows reads them: one group per INSERT, and the mirrors to release after."""
    return {"groups": grouped(rows), "release": mirrors_to_release(rows)}
