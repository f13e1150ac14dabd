"""Which raw snapshots a mirror has not applied yet, and how they are split into chunks.

A mirror's offset is the raw snapshot it has applied through. The snapshots after it are found
by walking parent links back from the raw table's current snapshot: the snapshots metadata also
lists snapshots of other branches and of rolled-back writes, which the mirror must not read. An
offset that is not on that path was expired (or the raw table was recreated): the events after
it cannot be read incrementally, so the plan refuses (ExpiredOffset) rather than skip events.

The pending snapshots are applied in chunks of at most max_events raw events, so that one
MERGE's work stays bounded; a single snapshot larger than that is one chunk split into
key-hash buckets of about max_events events each.

On a raw table that several source tables share, a snapshot's added-records counts every table's
events. A chunked mirror then counts its own table's events where the adapter can tell them apart
(own_events; the raw table is partitioned by table_name), so that its chunks hold its events and not
the other tables': without that, most chunks of a mirror on a shared raw log are empty.

A chunk of snapshots that certainly hold none of the mirror's events is quiet (quiet_snapshots): the
whole apply of such a chunk would write nothing but its offset, so the materialization writes only
that, without reading the range; when every snapshot after the mirror's offset is (quiet_through),
the idle check moves the offset with no statement at all (docs/apply_service.md, item 5).

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
    oldest first, as {'snapshot_id', 'operation', 'added_records'}. snapshot_log is {'current': id or None,
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
        newest_first.append({
            "snapshot_id": snapshot["snapshot_id"],
            "operation": snapshot["operation"],
            "added_records": event_count(snapshot["added_records"]),
        })
        cursor = snapshot["parent_id"]
    if offset_snapshot is not None and cursor != offset_snapshot:
        raise ExpiredOffset(offset_snapshot, current_snapshot)
    return newest_first[::-1]


# The partition value under which the adapter counts records whose table it cannot tell
# (a data file of a spec without the table_name partition): they count for every table.
ANY_TABLE = "*"


def needs_own_events(pending: Sequence[Mapping[str, Any]], max_events: int) -> bool:
    """Whether counting the mirror's own events can change its chunks: only when all tables' events
    together are more than one chunk holds."""
    return sum(snapshot["added_records"] for snapshot in pending) > max_events


def own_events(pending: Sequence[Mapping[str, Any]], added_by_table: Mapping[str, Mapping[str, int]], source_table: str) -> list[dict]:
    """pending with the added_records of each append snapshot that added_by_table lists
    ({snapshot_id: {table_name: records}}) replaced by the records it added for source_table. Other
    snapshots keep their count: a snapshot that is not an append (a rewrite, a delete) or that the
    adapter could not read may hold any table's events, so it still counts them all. Each snapshot
    keeps all tables' count as 'range_records'."""
    counted = []
    for snapshot in pending:
        by_table = added_by_table.get(snapshot["snapshot_id"])
        if snapshot.get("operation") == "append" and by_table is not None:
            added = int(by_table.get(source_table, 0)) + int(by_table.get(ANY_TABLE, 0))
            snapshot = {**snapshot, "added_records": added, "range_records": snapshot["added_records"]}
        counted.append(dict(snapshot))
    return counted


def quiet_snapshots(pending: Sequence[Mapping[str, Any]], added_by_table: Mapping[str, Mapping[str, int]],
                    source_table: str) -> frozenset[str]:
    """The ids of the pending snapshots that certainly hold none of source_table's events: appends
    that added nothing, and appends whose per-table counts (added_by_table, as for own_events) add
    up to every record the snapshot added and name neither source_table nor ANY_TABLE. pending's
    added_records are all tables' counts (before own_events). Anything else (a rewrite, a snapshot
    the adapter could not read, counts that do not add up) may hold the table's events."""
    quiet = set()
    for snapshot in pending:
        if snapshot.get("operation") != "append":
            continue
        added = event_count(snapshot["added_records"])
        by_table = added_by_table.get(snapshot["snapshot_id"])
        if added == 0 or (by_table is not None and source_table not in by_table and ANY_TABLE not in by_table
                          and sum(int(records) for records in by_table.values()) == added):
            quiet.add(snapshot["snapshot_id"])
    return frozenset(quiet)


def quiet_through(pending: Sequence[Mapping[str, Any]], added_by_table: Mapping[str, Mapping[str, int]],
                  source_table: str) -> str | None:
    """The newest pending snapshot when every pending snapshot is quiet (quiet_snapshots), else None:
    a mirror can move its offset there without reading anything (idle.sql)."""
    if not pending:
        return None
    quiet = quiet_snapshots(pending, added_by_table, source_table)
    return pending[-1]["snapshot_id"] if all(snapshot["snapshot_id"] in quiet for snapshot in pending) else None


def chunks_of(pending: Sequence[Mapping[str, Any]], max_events: int, offset_snapshot: str | None,
              quiet: frozenset[str] = frozenset()) -> list[dict]:
    """Consecutive pending snapshots grouped into chunks of at most max_events events (a single
    larger snapshot is a chunk of its own). Each chunk {'after', 'through', 'events', 'buckets',
    'range_events', 'quiet'} reads the snapshots after 'after' (exclusive; None: from the start)
    through 'through', in 'buckets' key-hash buckets: ceil(events / max_events), at least 1.
    'range_events' counts every table's events of the range (what reading it holds), 'events' the
    mirror's own where own_events counted them; 'quiet': every snapshot of the chunk is in quiet
    (quiet_snapshots), so the chunk holds none of the mirror's events."""
    chunks: list[dict] = []
    after, through, events, range_events, all_quiet = offset_snapshot, None, 0, 0, True
    for snapshot in pending:
        added = snapshot["added_records"]
        if through is not None and events + added > max_events:
            chunks.append({"after": after, "through": through, "events": events, "range_events": range_events, "quiet": all_quiet})
            after, events, range_events, all_quiet = through, 0, 0, True
        through = snapshot["snapshot_id"]
        events += added
        range_events += snapshot.get("range_records", added)
        all_quiet = all_quiet and through in quiet
    if through is not None:
        chunks.append({"after": after, "through": through, "events": events, "range_events": range_events, "quiet": all_quiet})
    return [
        {"after": chunk["after"], "through": chunk["through"], "events": chunk["events"],
         "buckets": max(1, (chunk["events"] + max_events - 1) // max_events), "range_events": chunk["range_events"],
         "quiet": chunk["quiet"]}
        for chunk in chunks
    ]


def plan_chunks(snapshot_log: Mapping[str, Any], offset_snapshot: str | None, max_events: int) -> list[dict]:
    """The chunks of the snapshots a mirror at offset_snapshot has not applied; ExpiredOffset."""
    return chunks_of(pending_snapshots(snapshot_log, offset_snapshot), max_events, offset_snapshot)


def pending_or_expired(snapshot_log: Mapping[str, Any], offset_snapshot: str | None) -> dict:
    """pending_snapshots for a macro, which cannot catch an exception: {'expired': bool, 'pending': [...]}."""
    try:
        return {"expired": False, "pending": pending_snapshots(snapshot_log, offset_snapshot)}
    except ExpiredOffset:
        return {"expired": True, "pending": []}
