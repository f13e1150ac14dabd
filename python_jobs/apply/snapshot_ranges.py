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


# Model types that order their values as text.
_TEXT_TYPES = ("string", "varchar", "char", "text")


def key_order_problem(ranges: Sequence[dict[str, Any]], column_types: dict[str, str], model: str) -> str | None:
    """What to change when a range's key column is a number at the source and text in the model (a
    unique_key cast to string where cdc-scaffold wrote a number type): the mirror compares its keys as
    text, where 100 is between 10 and 20, so a range of 10 to 20 takes in keys the page never read,
    and their rows, which the source has, would be deleted. None when every key column orders as the
    source's does."""
    types = {str(name).lower(): _bare_type(str(data_type)) for name, data_type in column_types.items()}
    for planned in ranges:
        for bound in (planned.get("after"), planned.get("from"), planned.get("through")):
            for column in bound or ():
                value = json.loads(column["image"])[column["name"]]
                data_type = types.get(column["name"].lower(), "")
                if isinstance(value, (int, float)) and not isinstance(value, bool) and data_type.startswith(_TEXT_TYPES):
                    return (f"cdc_merge model '{model}': unique_key column {column['name']} is {data_type} in the model but a number "
                            f"at the source (an online snapshot read a range of its keys again, from {_shown(planned.get('from') or planned.get('after'))} "
                            f"to {_shown(planned.get('through'))}): as text the mirror's keys order otherwise ('100' is between '10' and '20'), "
                            "and the rows of keys the range did not read would be deleted. Cast the column to the number type cdc-scaffold "
                            "writes for it (the source's: int, bigint, decimal), then rebuild the mirror: "
                            f"dbt run --full-refresh --select {model}")
    return None


def _bare_type(data_type: str) -> str:
    """A Databend Nullable(String) as string; every type in lower case."""
    text = data_type.strip().lower()
    return text[len("nullable("):-1] if text.startswith("nullable(") and text.endswith(")") else text


def _shown(bound: Any) -> str:
    if not bound:
        return "the table's end" if bound is None else "?"
    return ", ".join(str(json.loads(column["image"])[column["name"]]) for column in bound)
