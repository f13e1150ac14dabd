"""When a chunk reads or writes the columns its mirror's rows were not sent (unsent_columns.sql):
TOAST placeholders whose value no event of the batch or stored row held, filled by an older event
that arrives later."""

from __future__ import annotations

from typing import Optional, Sequence

from python_jobs.apply.one_commit import ONE_COMMIT_MAX_EVENTS


def records(placeholder_events: object) -> bool:
    """Whether the chunk records unsent columns: some of its events carry TOAST placeholders."""
    return int(placeholder_events or 0) > 0


def rows_in_driver(chunk_events: object) -> bool:
    """Whether the chunk's events of such keys, and the model's rows of them, are kept in the driver's
    memory rather than a checkpoint: at most as many as a batch of one commit holds there."""
    return int(chunk_events or 0) <= ONE_COMMIT_MAX_EVENTS


def may_fill(oldest_seq: Optional[str], stored_seqs: Sequence[Optional[str]]) -> bool:
    """Whether some event of the chunk may fill a kept unsent column: only an event at or below the
    newest seq the mirror and its tombstones held before the chunk can (an unsent column's filling
    event is newer than every newer-than-stored event that sent it). stored_seqs: that newest seq of
    each, or an upper bound of it (None: it holds none); oldest_seq: the chunk's oldest ('' or None:
    none of the table's events)."""
    newest = max((seq for seq in stored_seqs if seq), default=None)
    return bool(oldest_seq) and newest is not None and str(oldest_seq) <= newest
