"""Whether a mirror has nothing new and its run is done (macros/materializations/cdc_merge/idle.sql).

A mirror is idle when its newest offset is the raw table's current snapshot, unless it must take the
full path anyway. The decision is asked in two steps, because the facts of the second cost
statements on some engines (idle.sql nothing_new_by_queries) and are read only when the first
step lets the mirror be idle; the maintenance thresholds come last, in maintenance.sql.
Each step gives the reason for the full path, or None.
"""

from __future__ import annotations

from typing import Optional


def full_path_before_offsets(relation_kind: Optional[str], full_refresh: bool, change_source: str) -> Optional[str]:
    """relation_kind: the stored mirror's ('table', 'view', ...), None when there is none."""
    if relation_kind is None:
        return "the mirror does not exist yet"
    if relation_kind == "view":
        return "a view stands where the mirror goes"
    if full_refresh:
        return "full refresh"
    if change_source != "changes":
        return f"change_source '{change_source}' reads a stream, whose contents only the run sees"
    return None


def full_path_at_offsets(offset_snapshot: Optional[str], current_snapshot: Optional[str],
                         stored_checksum: Optional[str], model_checksum: str) -> Optional[str]:
    """offset_snapshot: the mirror's newest offset; current_snapshot: the raw table's; checksums of
    the model SQL its columns were last checked against (stored) and of the model now."""
    if offset_snapshot is None:
        return "no offset yet"
    if current_snapshot is None or str(offset_snapshot) != str(current_snapshot):
        return f"new raw snapshots after offset {offset_snapshot}"
    if stored_checksum != model_checksum:
        return "model SQL changed since the mirror's columns were checked"
    return None
