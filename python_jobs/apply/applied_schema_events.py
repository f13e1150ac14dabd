"""The schema events with existing_rows a mirror applied before a chunk, known without reading the
raw log (column_defaults.py says why a chunk needs them: a late event older than one of them).

A process that applies a mirror's chunks keeps, per mirror, every such event it saw and the offset it
left the mirror at (the adapter's applied_schema_events.py). A chunk that starts at that offset takes
them; any other chunk reads the raw log (the process's first run of the mirror, a mirror another
process moved on or rebuilt, a Databend stream). Kept by snapshot, never by time: an offset the
process did not leave the mirror at is never taken for one it did.

Events beyond the ones the mirror applied do no harm: an added column's value belongs in every row
older than its event, which the event's own chunk sets anyway. So a read of the raw log taken for
them (it may hold events landed after the chunk's end) is kept just the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

Events = Sequence[Sequence[Any]]


@dataclass(frozen=True)
class AppliedEvents:
    """A mirror's schema events (seq, raw_data) applied up to offset, a raw snapshot id."""

    offset: str
    events: tuple[tuple[str, str], ...]


def known_before(chunk: Mapping[str, Any], applied: Optional[AppliedEvents]) -> Optional[list[list[str]]]:
    """The events applied before chunk ({'after', 'stream'?} as chunk_plan.py gives it), or None when
    only the raw log can say."""
    if chunk.get("stream") is not None:
        return None
    after = chunk.get("after")
    if after is None:
        # The chunk starts at the raw log's start: the run applies every event itself.
        return []
    if applied is not None and applied.offset == str(after):
        return [list(event) for event in applied.events]
    return None


def after_chunk(chunk: Mapping[str, Any], offset_to: Optional[str], known: Optional[Events], chunk_events: Events,
                applied: Optional[AppliedEvents]) -> Optional[AppliedEvents]:
    """What the mirror has applied once chunk's offset is offset_to. known: what the chunk took as
    applied before it (None when it did not ask, a quiet chunk); chunk_events: the chunk's own.
    None when that cannot be told from what the process kept."""
    base = known if known is not None else known_before(chunk, applied)
    if base is None or not offset_to or chunk.get("stream") is not None:
        return None
    merged = {str(seq): str(raw_data) for seq, raw_data in base}
    merged.update((str(seq), str(raw_data)) for seq, raw_data in chunk_events)
    return AppliedEvents(str(offset_to), tuple(sorted(merged.items())))
