"""The adapter methods behind the apply's decisions, which are plain Python in python_jobs/apply/
(raw_log.sql's chunk plan: chunk_plan.py; whether a batch is one commit: one_commit.py; the idle
check's: idle_decision.py). A mixin of both adapters, CdcSparkAdapter and CdcDatabendAdapter."""

from typing import Any, Dict, List, Mapping, Optional, Sequence

from dbt.adapters.base import available
from dbt.adapters.base.meta import AdapterMeta

from python_jobs.apply import chunk_plan, column_defaults, idle_decision, one_commit, snapshot_ranges


class ApplyMethods(metaclass=AdapterMeta):
    """AdapterMeta collects the @available methods, as it does for the adapter class itself."""

    @available
    def cdc_pending_snapshots(self, snapshot_log: Mapping[str, Any], offset_snapshot: Optional[str]) -> Dict[str, Any]:
        """raw_log.sql's pending_raw_snapshots: {'expired': bool, 'pending': [...]} (chunk_plan.py)."""
        return chunk_plan.pending_or_expired(snapshot_log, offset_snapshot)

    @available
    def cdc_chunks_of(self, pending: Sequence[Mapping[str, Any]], max_events: int, offset_snapshot: Optional[str],
                      raw_table: Optional[str] = None, source_table: Optional[str] = None) -> List[Dict[str, Any]]:
        """raw_log.sql's chunks_of (chunk_plan.py), of source_table's own events where the engine
        can count them per table and all tables' events are more than one chunk."""
        max_events = int(max_events)
        if raw_table and source_table and chunk_plan.needs_own_events(pending, max_events):
            appends = [snapshot["snapshot_id"] for snapshot in pending if snapshot.get("operation") == "append"]
            pending = chunk_plan.own_events(pending, self._raw_added_by_table(raw_table, appends), source_table)
        return chunk_plan.chunks_of(pending, max_events, offset_snapshot)

    def _raw_added_by_table(self, raw_table: str, snapshot_ids: List[str]) -> Dict[str, Dict[str, int]]:
        """{snapshot_id: {table_name: events added}} for the snapshots the engine can count per
        table; none here (Databend), so every snapshot counts all its events."""
        return {}

    @available
    def cdc_column_defaults(self, events: Sequence[Sequence[Any]], mirror_columns: Sequence[str]) -> List[Dict[str, Any]]:
        """column_defaults.sql: what the source's added columns hold in the mirror's older rows (column_defaults.py)."""
        return column_defaults.column_defaults(events, mirror_columns)

    @available
    def cdc_snapshot_ranges(self, events: Sequence[Sequence[Any]], key_columns: Sequence[str]) -> List[Dict[str, Any]]:
        """snapshot_ranges.sql: the key ranges online snapshot pages read completely (snapshot_ranges.py)."""
        return snapshot_ranges.snapshot_ranges(events, [str(column).lower() for column in key_columns])

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
