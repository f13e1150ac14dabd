"""Key ranges an online snapshot page read completely (python_jobs/capture/snapshot_pages.py;
docs/online_snapshots.md): raw events with action 'range' whose raw_data is {"after": key image or
null, "through": key image or null, "low": seq}. A mirror deletes its rows in the range whose
_cdc_seq is older than the page's low watermark: every row the source had there is newer (read by
the page at its high watermark, or changed between the watermarks), so those are rows the source no
longer has. macros/materializations/cdc_merge/snapshot_ranges.sql renders the SQL.
"""

from __future__ import annotations

import json
import re
from typing import Any, Sequence

from python_jobs.formats.records import RejectedRecord, object_members


def snapshot_ranges(events: Sequence[Sequence[Any]], key_columns: Sequence[str]) -> list[dict[str, Any]]:
    """events: (seq, raw_data) of range events. Returns, in seq order, {'seq', 'low', 'after', 'from',
    'through', 'order'} with each bound None (none: the table's start or end) or [{'name': key column, 'image':
    '{"<column>":<exact value>}'}] in the range's key order: an image the column's cdc_value() conversion reads;
    'after' is exclusive, 'from' and 'through' inclusive; 'order': how the pages ordered each key column,
    {column in lower case: one of snapshot_pages.KEY_ORDERS}, where the capture said. A range whose bounds do not name every key
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
        order = members.get("order", (None, None, 0))[0]
        orders = {str(name).lower(): kind for name, kind in order.items()} if isinstance(order, dict) else {}
        plan.append({"seq": seq, "low": low, **bounds, "order": orders})
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


# Model types that order their values as text, and as numbers (Spark's and Databend's names).
_TEXT_TYPES = ("string", "varchar", "char", "text")
_NUMBER_TYPE = re.compile(r"(tiny|small|big)?int(eger)?\b|u?int\d+\b|(long|short|byte|decimal|numeric|float\d*|double|real)\b")


def key_order_problem(ranges: Sequence[dict[str, Any]], column_types: dict[str, str], model: str) -> str | None:
    """What to change when a range's key column orders otherwise in the mirror than in the source's pages:
    a number at the source typed as text in the model (a unique_key cast to string where cdc-scaffold
    wrote a number type: as text 100 is between 10 and 20), or a column the pages order by its text
    typed as a number (a text key cast to int: as numbers 9 is before 10, as text after). Either way a
    range takes in keys the page never read, and their rows, which the source has, would be deleted.
    Where the range record does not say how its pages ordered (an older capture's), a number in its
    bounds is taken for a number column. None when every key column orders as the source's pages do."""
    types = {str(name).lower(): bare_type(str(data_type)) for name, data_type in column_types.items()}
    for planned in ranges:
        orders = planned.get("order") or {}
        for bound in (planned.get("after"), planned.get("from"), planned.get("through")):
            for column in bound or ():
                value = json.loads(column["image"])[column["name"]]
                data_type = types.get(column["name"].lower(), "")
                order = orders.get(column["name"].lower())
                if order is None and isinstance(value, (int, float)) and not isinstance(value, bool):
                    order = "number"
                if order == "number" and data_type.startswith(_TEXT_TYPES):
                    return _problem(model, column["name"], data_type, planned, "a number at the source",
                                    "as text the mirror's keys order otherwise ('100' is between '10' and '20')",
                                    "the number type cdc-scaffold writes for it (the source's: int, bigint, decimal)")
                if order == "text" and _NUMBER_TYPE.match(data_type):
                    return _problem(model, column["name"], data_type, planned, "ordered by its text at the source",
                                    "as numbers the mirror's keys order otherwise ('9' is after '10' as text, before it as a number)",
                                    "string, as cdc-scaffold writes it")
    return None


def _problem(model: str, column: str, data_type: str, planned: dict[str, Any], source: str, why: str, cast_to: str) -> str:
    return (f"cdc_merge model '{model}': unique_key column {column} is {data_type} in the model but {source} "
            f"(an online snapshot read a range of its keys again, from {_shown(planned.get('from') or planned.get('after'))} "
            f"to {_shown(planned.get('through'))}): {why}, and the rows of keys the range did not read would be deleted. "
            f"Cast the column to {cast_to}, then rebuild the mirror: dbt run --full-refresh --select {model}")


def bare_type(data_type: str) -> str:
    """A Databend Nullable(String) as string; every type in lower case."""
    text = data_type.strip().lower()
    return text[len("nullable("):-1] if text.startswith("nullable(") and text.endswith(")") else text


def _shown(bound: Any) -> str:
    if not bound:
        return "the table's end" if bound is None else "?"
    return ", ".join(str(json.loads(column["image"])[column["name"]]) for column in bound)
