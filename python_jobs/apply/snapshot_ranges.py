"""Key ranges an online snapshot page read completely (python_jobs/capture/snapshot_pages.py;
docs/online_snapshots.md): raw events with action 'range' whose raw_data is {"after": key image or
null, "through": key image or null, "low": seq}. A mirror deletes its rows in the range whose
_cdc_seq is older than the page's low watermark: every row the source had there is newer (read by
the page at its high watermark, or changed between the watermarks), so those are rows the source no
longer has. macros/materializations/cdc_merge/snapshot_ranges.sql renders the SQL.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from python_jobs.formats.records import RejectedRecord, object_members


def snapshot_ranges(events: Sequence[Sequence[Any]], key_columns: Sequence[str]) -> list[dict[str, Any]]:
    """events: (seq, raw_data) of range events. Returns, in seq order, {'seq', 'low', 'after', 'from',
    'through'} with each bound None (none: the table's start or end) or [{'name': key column, 'image':
    '{"<column>":<exact value>}'}] in the range's key order: an image the column's cdc_value() conversion reads;
    'after' is exclusive, 'from' and 'through' inclusive. A range whose bounds do not name every key
    column (a model whose key columns are not the source's) is left out."""
    plan = []
    for seq, raw_data in sorted((str(seq), raw_data) for seq, raw_data in events if raw_data):
        try:
            members = object_members(raw_data, 0, "raw_data")
            ordered = in_range_order(key_columns, members.get("key", (None, None, 0))[0])
            bounds = {name: _bound(raw_data, members, name, ordered) for name in ("after", "from", "through")}
        except (RejectedRecord, KeyError):
            continue
        low = members.get("low", (None, None, 0))[0]
        if not isinstance(low, str) or any(bound is False for bound in bounds.values()):
            continue
        plan.append({"seq": seq, "low": low, **bounds})
    return plan


def in_range_order(key_columns: Sequence[str], order: Any) -> Sequence[str]:
    """The key columns in the order the range is of (its record's "key": the capture pages the
    source's key, whatever order a model's unique_key lists it in); as given for a record without it."""
    if not isinstance(order, list):
        return key_columns
    position = {str(name).lower(): index for index, name in enumerate(order)}
    if any(column.lower() not in position for column in key_columns):
        return key_columns
    return sorted(key_columns, key=lambda column: position[column.lower()])


def _bound(raw_data: str, members: Any, name: str, key_columns: Sequence[str]) -> list[dict[str, str]] | None | bool:
    """A bound's key columns as one-member images; None for no bound; False when a key column is missing."""
    value, _, start = members.get(name, (None, None, 0))
    if value is None:
        return None
    image = {column.lower(): text for column, (_, text, _) in object_members(raw_data, start, name).items()}
    if any(column.lower() not in image for column in key_columns):
        return False
    return [{"name": column, "image": "{" + json.dumps(column) + ":" + image[column.lower()] + "}"} for column in key_columns]
