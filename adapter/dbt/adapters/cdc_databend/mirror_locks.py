"""One process applies (or maintains, or repairs) a Databend mirror at a time, as on Spark
(run_guard.sql): two runs of one mirror share its scratch tables (`<mirror>__cdc_changes`), so one
could merge the other's batch and record its own offset past events it never applied. The lock is
an OS file lock of this machine (python_jobs/run_locks.py) named after the server and the mirror; runs
on several machines against one server are not serialized. A mixin of CdcDatabendAdapter."""

from dbt.adapters.base import available
from dbt.adapters.base.meta import AdapterMeta
from dbt_common.exceptions import DbtRuntimeError

from python_jobs import run_locks


class MirrorLockMethods(metaclass=AdapterMeta):
    """AdapterMeta collects the @available methods, as it does for the adapter class itself."""

    @available
    def cdc_lock_mirror(self, target_table: str, consistency_group: object = None) -> str:
        """Wait while another process of this machine holds the mirror (consistency_group: no lock of
        its own here, where a group's mirrors publish no catalog transaction)."""
        try:
            run_locks.acquire(self._mirror_lock(target_table), f"mirror {target_table}")
        except run_locks.LockBusy as busy:
            raise DbtRuntimeError(str(busy)) from None
        return ""

    @available
    def cdc_unlock_mirror(self, target_table: str) -> str:
        run_locks.release(self._mirror_lock(target_table))
        return ""

    @available
    def cdc_release_group(self, group: str) -> str:
        return ""

    def _mirror_lock(self, target_table: str):
        credentials = self.config.credentials  # type: ignore[attr-defined]
        # An absolute name for lock_file, which makes a relative one absolute from the current folder.
        return run_locks.lock_file("mirror", f"/databend/{credentials.host}:{credentials.port}", target_table)
