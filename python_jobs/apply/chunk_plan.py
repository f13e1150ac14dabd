"""Which raw snapshots a mirror has not applied yet, and how they are split into chunks.

A mirror's offset is the raw snapshot it has applied through. The snapshots after it are found
by walking parent links back from the raw table's current snapshot: the snapshots metadata also
lists snapshots of other branches and of rolled-back writes, which the mirror must not read. An
offset that is not on that path was expired (or the raw table was recreated): the events after
it cannot be read incrementally, so the plan refuses (ExpiredOffset) rather than skip events.

The pending snapshots are applied in chunks of at most max_events raw events, so that one
MERGE's work stays bounded; a single snapshot larger than that is one chunk split into
key-hash buckets of about max_events events each.

The rows come from raw_log.sql's raw_snapshot_log: dicts (cdc_spark, from Iceberg's metadata in
the JVM) or agate rows (the metadata queries); both are read as row['column'].
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence


class ExpiredOffset(Exception):
    """The mirror's offset is not an ancestor of the raw table's current snapshot."""

    def __init__(self, offset_snapshot: str, current_snapshot: str | None) -> None:
        super().__init__(
            f"offset snapshot {offset_snapshot} is not on the parent path of the current snapshot "
            f"{current_snapshot} (expired snapshots, or the raw table was recreated)"
        )
        self.offset_snapshot = offset_snapshot
        self.current_snapshot = current_snapshot


def event_count(added_records: Any) -> int:
    """A snapshot's added-records as the metadata gives it (int, Decimal or text; none is 0)."""
    if added_records is None:
        return 0
    try:
        return int(added_records)
    except ValueError:  # "42.0": text of a decimal number
        return int(float(added_records))


def pending_snapshots(snapshot_log: Mapping[str, Any], offset_snapshot: str | None) -> list[dict]:
    """The snapshots after offset_snapshot (all when None) through snapshot_log's current one,
    oldest first, as {'snapshot_id', 'added_records'}. snapshot_log is {'current': id or None,
    'snapshots': rows of snapshot_id, parent_id, operation, added_records}, in any order."""
    current_snapshot = snapshot_log["current"]
    if current_snapshot is None:
        return []
    rows: Sequence[Mapping[str, Any]] = snapshot_log["snapshots"]
    by_id = {row["snapshot_id"]: row for row in rows}
    cursor = current_snapshot
    newest_first: list[dict] = []
    # At most one step per snapshot listed: a broken log with a parent cycle cannot loop forever.
    for _ in range(len(rows)):
        if cursor is None or cursor == offset_snapshot:
            break
        snapshot = by_id.get(cursor)
        if snapshot is None:
            cursor = None
            break
        newest_first.append({"snapshot_id": snapshot["snapshot_id"], "added_records": event_count(snapshot["added_records"])})
        cursor = snapshot["parent_id"]
    if offset_snapshot is not None and cursor != offset_snapshot:
        raise ExpiredOffset(offset_snapshot, current_snapshot)
    return newest_first[::-1]


def chunks_of(pending: Sequence[Mapping[str, Any]], max_events: int, offset_snapshot: str | None) -> list[dict]:
    """Consecutive pending snapshots grouped into chunks of at most max_events events (a single
    larger snapshot is a chunk of its own). Each chunk {'after', 'through', 'events', 'buckets'}
    reads the snapshots after 'after' (exclusive; None: from the start) through 'through', in
    'buckets' key-hash buckets: ceil(events / max_events), at least 1."""
    chunks: list[dict] = []
    after, through, events = offset_snapshot, None, 0
    for snapshot in pending:
        added = snapshot["added_records"]
        if through is not None and events + added > max_events:
            chunks.append({"after": after, "through": through, "events": events})
            after, events = through, 0
        through = snapshot["snapshot_id"]
        events += added
    if through is not None:
        chunks.append({"after": after, "through": through, "events": events})
    for chunk in chunks:
        chunk["buckets"] = max(1, (chunk["events"] + max_events - 1) // max_events)
    return chunks


def plan_chunks(snapshot_log: Mapping[str, Any], offset_snapshot: str | None, max_events: int) -> list[dict]:
    """The chunks of the snapshots a mirror at offset_snapshot has not applied; ExpiredOffset."""
    return chunks_of(pending_snapshots(snapshot_log, offset_snapshot), max_events, offset_snapshot)


def pending_or_expired(snapshot_log: Mapping[str, Any], offset_snapshot: str | None) -> dict:
    """pending_snapshots for a macro, which cannot catch an exception: {'expired': bool, 'pending': [...]}."""
    try:
        return {"expired": False, "pending": pending_snapshots(snapshot_log, offset_snapshot)}
    except ExpiredOffset:
        return {"expired": True, "pending": []}
