"""The adapter methods behind consistency groups (macros/materializations/cdc_merge/consistency.sql):
the group's horizon, decided in python_jobs/apply/consistency_horizon.py and shared by the
invocation's mirrors of the group (consistency_runs.py), and the cut recorded when they all applied
through it. A mixin of both adapters, CdcSparkAdapter and CdcDatabendAdapter."""

import json
from typing import Any, Dict, List, Optional, Sequence

from dbt.adapters.base import available
from dbt.adapters.base.meta import AdapterMeta

from python_jobs.apply import consistency_horizon
from python_jobs.apply.consistency_runs import GROUP_RUNS


class ConsistencyMethods(metaclass=AdapterMeta):
    """AdapterMeta collects the @available methods, as it does for the adapter class itself."""

    @available
    def cdc_group_horizon(self, invocation_id: str, group: str) -> Optional[Dict[str, Any]]:
        """The horizon another mirror of the group decided in this invocation, or None."""
        return GROUP_RUNS.horizon(invocation_id, group)

    @available
    def cdc_decide_group_horizon(self, invocation_id: str, group: str, window: List[str], tail_start: Optional[str],
                                 cut_seq: Optional[str], cut_ordinal: int, settled: Optional[str],
                                 rows: Sequence[Any]) -> Dict[str, Any]:
        """The group's horizon from its transaction scan, kept for the invocation (the first one decided
        wins). settled: the latest cut's settled transactions, as JSON."""
        def decide() -> Dict[str, Any]:
            horizon = consistency_horizon.decide([str(s) for s in window], tail_start, cut_seq,
                                                 consistency_horizon.scan_rows(rows), json.loads(settled) if settled else ())
            return {**horizon.as_dict(), "ordinal": int(cut_ordinal) + 1}

        return GROUP_RUNS.keep_horizon(invocation_id, group, decide)

    @available
    def cdc_group_member_done(self, invocation_id: str, group: str, mirror: str, snapshot: Optional[str],
                              members: List[str]) -> Optional[Dict[str, Optional[str]]]:
        """Every member's snapshot once the last mirror of the group applied through the horizon, else None."""
        return GROUP_RUNS.member_done(invocation_id, group, mirror, None if snapshot is None else str(snapshot), list(members))

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
