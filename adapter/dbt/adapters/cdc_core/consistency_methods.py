"""The adapter methods behind consistency groups (macros/materializations/cdc_merge/consistency.sql):
the group's horizon, decided in python_jobs/apply/consistency_horizon.py and shared by the
invocation's mirrors of the group (consistency_runs.py), and the cut recorded when they all applied
through it; on a catalog with transactions, the group's commits staged until the cut publishes them
(docs/consistent_cuts.md). A mixin of both adapters, CdcSparkAdapter and CdcDatabendAdapter."""

import json
from typing import Any, Dict, List, Optional, Sequence

from dbt.adapters.base import available
from dbt.adapters.base.meta import AdapterMeta
from dbt.adapters.events.logging import AdapterLogger

from python_jobs.apply import consistency_horizon
from python_jobs.apply.consistency_runs import GROUP_RUNS, cut_behind

logger = AdapterLogger("cdc_merge")


class ConsistencyMethods(metaclass=AdapterMeta):
    """AdapterMeta collects the @available methods, as it does for the adapter class itself."""

    @available
    def cdc_group_horizon(self, invocation_id: str, group: str) -> Optional[Dict[str, Any]]:
        """The horizon another mirror of the group decided in this invocation, or None."""
        return GROUP_RUNS.horizon(invocation_id, group)

    @available
    def cdc_decide_group_horizon(self, invocation_id: str, group: str, window: List[str], tail_start: Optional[str],
                                 cut_seq: Optional[str], cut_ordinal: int, settled: Optional[str],
                                 rows: Sequence[Any], cut_source_ts: Optional[str] = None) -> Dict[str, Any]:
        """The group's horizon from its transaction scan, kept for the invocation (the first one decided
        wins). settled: the latest cut's settled transactions, as JSON; cut_source_ts: the latest cut's."""
        def decide() -> Dict[str, Any]:
            horizon = consistency_horizon.decide([str(s) for s in window], tail_start, cut_seq,
                                                 consistency_horizon.scan_rows(rows), json.loads(settled) if settled else (),
                                                 str(cut_source_ts) if cut_source_ts else None)
            return {**horizon.as_dict(), "ordinal": int(cut_ordinal) + 1}

        return GROUP_RUNS.keep_horizon(invocation_id, group, decide)

    @available
    def cdc_group_member_done(self, invocation_id: str, group: str, mirror: str, snapshot: Optional[str],
                              members: List[str], applied: bool = True) -> Optional[Dict[str, Any]]:
        """Once the last mirror of the group is done: {"snapshots": every member's, "applied": whether one
        applied events}; else None (consistency_runs.py)."""
        return GROUP_RUNS.member_done(invocation_id, group, mirror, None if snapshot is None else str(snapshot), list(members),
                                      bool(applied))

    @available
    def cdc_cut_behind(self, latest: Sequence[Any], snapshots: Dict[str, Any]) -> bool:
        """Where no member applied events: whether the latest cut's rows (target_table, mirror_snapshot)
        read another state of a mirror than its snapshot now."""
        return cut_behind([(row[0], row[1]) for row in latest], dict(snapshots))

    @available
    def cdc_decided_group_horizon(self, invocation_id: str, group: str) -> Optional[Dict[str, Any]]:
        """The horizon a mirror of the group decided in this invocation, or None; never waits."""
        return GROUP_RUNS.decided_horizon(invocation_id, group)

    @available
    def cdc_reader_cut(self, invocation_id: str, reader: str, group: str) -> Optional[Dict[str, Any]]:
        """consistent(): the cut (mirror -> snapshot) the compiling model reads the group at, if looked up."""
        return GROUP_RUNS.reader_cut(invocation_id, reader, group)

    @available
    def cdc_keep_reader_cut(self, invocation_id: str, reader: str, group: str, cut: Dict[str, Any]) -> Dict[str, Any]:
        """consistent(): the first cut the compiling model looked up, for all its reads of the group."""
        return GROUP_RUNS.keep_reader_cut(invocation_id, reader, group, {str(k): (None if v is None else str(v)) for k, v in cut.items()})

    @available
    def cdc_group_offset(self, pending: List[str], tail_start: Optional[str], through: str) -> Optional[str]:
        """A group's mirror's offset after a chunk through `through` (consistency_horizon.offset_after_chunk)."""
        return consistency_horizon.offset_after_chunk([str(s) for s in pending], tail_start, str(through))

    def _catalog_has_transactions(self) -> bool:
        """cdc_spark's: a Thrift server whose catalog is CdcMergeJdbcCatalog."""
        return False

    def _catalog_transaction_step(self, step: str, invocation_id: str, group: str) -> int:
        """step 'join' or 'publish' of the group's catalog transaction: the tables staged or published
        (cdc_spark's, asked only where _catalog_has_transactions)."""
        raise NotImplementedError

    @available
    def cdc_catalog_has_transactions(self) -> bool:
        return self._catalog_has_transactions()

    @available
    def cdc_join_catalog_transaction(self, invocation_id: str, group: str) -> str:
        """At a group mirror's start, where the catalog has transactions: from now on its commits wait
        in the group's catalog transaction."""
        self._catalog_transaction_step("join", invocation_id, group)
        GROUP_RUNS.joined_transaction(invocation_id, group)
        return ""

    @available
    def cdc_publish_catalog_transaction(self, invocation_id: str, group: str) -> int:
        """Every commit the group's mirrors staged in this invocation, published in one catalog
        transaction; the tables published (0 where none was joined)."""
        if not GROUP_RUNS.transaction_open(invocation_id, group):
            return 0
        try:
            return self._catalog_transaction_step("publish", invocation_id, group)
        finally:
            GROUP_RUNS.transaction_closed(invocation_id, group)
            self._release_group(group)

    def _release_group(self, group: str) -> None:
        """cdc_spark's: the group's lock across runs (run_guard_methods.py), once its transaction is published."""

    def _publish_catalog_transactions_left_open(self) -> None:
        """At the invocation's end, where no cut published a group's transaction (one of its mirrors
        failed, or was not selected): the others' commits are published without a cut."""
        for invocation_id, group in GROUP_RUNS.transactions_left_open():
            try:
                with self.connection_named("cdc_merge_catalog_transaction"):  # type: ignore[attr-defined]
                    tables = self.cdc_publish_catalog_transaction(invocation_id, group)
                logger.info(f"cdc_merge: group {group}'s catalog transaction published without a cut ({tables} tables)")
            except Exception as error:  # noqa: BLE001 - dbt's own cleanup must still run
                logger.warning(f"cdc_merge: group {group}'s catalog transaction was not published ({error}); "
                               "none of it was applied, and the next run applies its mirrors again")
