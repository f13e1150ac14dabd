"""The adapter methods behind the apply's decisions, which are plain Python in python_jobs/apply/
(raw_log.sql's chunk plan: chunk_plan.py; whether a batch is one commit: one_commit.py; the idle
check's: idle_decision.py). A mixin of both adapters, CdcSparkAdapter and CdcDatabendAdapter."""

from typing import Any, Dict, List, Mapping, Optional, Sequence

from dbt.adapters.base import available
from dbt.adapters.base.meta import AdapterMeta

from python_jobs.apply import chunk_plan, idle_decision, one_commit


class ApplyMethods(metaclass=AdapterMeta):
    """AdapterMeta collects the @available methods, as it does for the adapter class itself."""

    @available
    def cdc_pending_snapshots(self, snapshot_log: Mapping[str, Any], offset_snapshot: Optional[str]) -> Dict[str, Any]:
        """raw_log.sql's pending_raw_snapshots: {'expired': bool, 'pending': [...]} (chunk_plan.py)."""
        return chunk_plan.pending_or_expired(snapshot_log, offset_snapshot)

    @available
    def cdc_chunks_of(self, pending: Sequence[Mapping[str, Any]], max_events: int, offset_snapshot: Optional[str]) -> List[Dict[str, Any]]:
        """raw_log.sql's chunks_of (chunk_plan.py)."""
        return chunk_plan.chunks_of(pending, int(max_events), offset_snapshot)

    @available
    def cdc_one_commit(self, by_position: bool, plan: Optional[Dict[str, Any]], buckets: int) -> bool:
        """Whether the chunk's batch is applied in one commit on main (one_commit.py); cdc_spark only."""
        return one_commit.applies(bool(by_position), plan, int(buckets))

    @available
    def cdc_full_path_before_offsets(self, relation_kind: Optional[str], full_refresh: bool, change_source: str) -> Optional[str]:
        """idle.sql: why the mirror takes the full path before its offsets are read, or None (idle_decision.py)."""
        return idle_decision.full_path_before_offsets(relation_kind, bool(full_refresh), str(change_source))

    @available
    def cdc_full_path_at_offsets(self, offset_snapshot: Optional[str], current_snapshot: Optional[str],
                                 stored_checksum: Optional[str], model_checksum: str) -> Optional[str]:
        """idle.sql: why the mirror takes the full path at these offsets and checksums, or None (idle_decision.py)."""
        return idle_decision.full_path_at_offsets(offset_snapshot, current_snapshot, stored_checksum, str(model_checksum))
