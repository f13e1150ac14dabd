"""What one cdc_merge run of a mirror does, decided before it reads any event: whether the mirror is
rebuilt (in place, or aside and then put in its place), when a group mirror joins its group's
catalog transaction, where its events are read from, whether a Databend stream takes over after
them, and where each chunk's offset row goes. The materialization (macros/materializations/cdc_merge/cdc_merge.sql)
runs the answer; the idle check (idle_decision.py) has already let an idle mirror go.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Dict, Optional

STREAM_OFFSET = "stream"

# When a group mirror on a catalog with transactions joins its group's (catalog_transaction.sql).
JOIN_AT_START = "start"
JOIN_BEFORE_SWAP = "before_swap"


@dataclass(frozen=True)
class RunPlan:
    # --full-refresh, or a view where the mirror should be: the mirror is made anew from the whole log.
    rebuild: bool
    # A rebuild of a stored table: built aside, under <mirror>__cdc_rebuild with offsets of its own,
    # and put in the mirror's place only once it has applied every event (rebuild_aside.sql). Until
    # then readers see the old mirror, and a rebuild that dies leaves it as it was. Otherwise (a
    # view) the offset goes back to the start of the log first, then the view is dropped and the
    # mirror built in its place.
    build_aside: bool
    # A consistency group's mirror on a catalog with transactions: 'start', its commits from its
    # start on wait for the group's cut, which publishes them all; 'before_swap', a rebuild aside,
    # built outside the transaction (creating tables is not part of it) and put in the mirror's
    # place by commits the cut publishes, so readers see the old mirror until the group's other
    # mirrors move with it; None elsewhere.
    join_transaction: Optional[str]
    # The mirror is created from the model's columns (it is missing, or rebuilt); the truncates the
    # log holds are found again from its start.
    create: bool
    # 'start' of the raw log, the mirror's 'offset' snapshot, or its Databend 'stream'.
    read_from: str
    # dbt run --empty: the mirror and its tables are created, no event is applied, the offset stays.
    apply_events: bool
    # change_source='stream' and the mirror reads snapshots this run: once caught up, a stream is
    # created at the snapshot it reached and an offset row says 'stream'. Not with --empty, which
    # applies nothing: a stream from there would skip the events before it.
    start_stream: bool
    # The mirror is created while its offsets say it stands further on (it was dropped, or is
    # rebuilt in place): an offset row at the start of the log goes first, or a run that creates it and
    # applies nothing (--empty, or one that dies before its first offset row) would leave a mirror
    # whose offset skips every event it never applied.
    restart_offset: bool

    def as_dict(self) -> Dict[str, Any]:
        return asdict(self)


def plan_run(relation_kind: Optional[str], full_refresh: bool, empty: bool, change_source: str,
             offset_snapshot: Optional[str], catalog_transaction: bool = False) -> RunPlan:
    """relation_kind: the mirror as the catalog has it (None, 'table', 'view'); offset_snapshot: the
    newest offset row's snapshot (None at the start of the log, STREAM_OFFSET once a stream took over);
    catalog_transaction: a group mirror whose catalog has transactions (catalog_transaction.sql)."""
    rebuild = relation_kind is not None and (full_refresh or relation_kind == "view")
    build_aside = rebuild and relation_kind == "table"
    join_transaction = (JOIN_BEFORE_SWAP if build_aside else JOIN_AT_START) if catalog_transaction else None
    create = relation_kind is None or rebuild
    # A missing mirror is always built from the start of the log, whatever the offsets say.
    offset = None if create else offset_snapshot
    streaming = change_source == "stream"
    if streaming and offset == STREAM_OFFSET:
        read_from = "stream"
    else:
        read_from = "offset" if offset is not None else "start"
    return RunPlan(rebuild=rebuild, build_aside=build_aside, join_transaction=join_transaction, create=create, read_from=read_from, apply_events=not empty,
                   start_stream=streaming and read_from != "stream" and not empty,
                   restart_offset=create and offset_snapshot is not None and not build_aside)


def offset_row(keeps_offset_rows: bool, last_chunk: bool, from_stream: bool, in_catalog_transaction: bool = False,
               building_aside: bool = False) -> str:
    """Where a chunk's offset row goes once its batches are applied: 'keep' (written with the
    invocation's other mirrors' rows, kept_rows.py: only the run's last chunk, and never one read from
    a stream, whose consumption commits with its offset, nor a consistency group's mirror in a
    catalog transaction, whose offset is published with its writes by the group's cut, nor a rebuild
    aside's, whose rows are deleted once it is in place) or 'append' (its own INSERT now)."""
    kept = keeps_offset_rows and last_chunk and not from_stream and not in_catalog_transaction and not building_aside
    return "keep" if kept else "append"
