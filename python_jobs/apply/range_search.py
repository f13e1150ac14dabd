"""How a group of a chunk's online snapshot ranges (snapshot_ranges.py) is tested against the mirror's
rows with few comparisons a row (docs/online_snapshots.md, "What a page says: its key range").

The pages of one snapshot are read in key order and each starts after the last key of the one before:
their ranges form a ladder, (a, t1], (t1, t2], ... (tn-1, tn], disjoint and in the mirror's key order
(the capture pages keys in the order the mirror compares them; key_order_problem refuses a model that
orders otherwise). A row of the ladder's hull is in exactly one of its ranges, found by a search over
the ladder's upper bounds: log2(n) comparisons, where testing each range was n. A range whose lower
bound is not its predecessor's upper bound (another snapshot's, a key range read again) starts a new
ladder; a row in two ladders goes by the first, as the ranges one after another would remove it.

Bounds of integer and text key columns are given as plain values to render as literals: Spark
compiles the generated code of each statement anew, and a bound rendered as a typed read of its JSON
image (cdc_value) made each statement over a mirror of 1M rows cost seconds of compiling.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence

from python_jobs.apply.snapshot_ranges import bare_type

# Integer types (Spark's and Databend's names) and the values they hold.
_INTEGER_BITS = {"tinyint": 8, "byte": 8, "int8": 8, "smallint": 16, "short": 16, "int16": 16, "int": 32,
                 "integer": 32, "int32": 32, "bigint": 64, "long": 64, "int64": 64}
_UNSIGNED_BITS = {"uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}
_TEXT_TYPES = ("string", "varchar", "text")


# The most ranges a ladder holds: Spark's generated code for a search over 500 no longer compiled
# (the statement ran interpreted, with an error in the log); over 100 it did.
LONGEST_LADDER = 64


def ladders(ranges: Sequence[Dict[str, Any]], longest: int = LONGEST_LADDER) -> List[List[Dict[str, Any]]]:
    """ranges in seq order as runs of at most `longest` in which each range starts right after the
    one before it ends (its 'after' the same key as that one's 'through')."""
    found: List[List[Dict[str, Any]]] = []
    for planned in ranges:
        last = found[-1][-1] if found and len(found[-1]) < longest else None
        if (last is not None and last.get("through") is not None and planned.get("from") is None
                and planned.get("after") is not None and _same_key(planned["after"], last["through"])):
            found[-1].append(planned)
        else:
            found.append([planned])
    return found


def search_tree(count: int, first: int = 0) -> Dict[str, Any]:
    """The search over a ladder of count ranges: {'leaf': index} or {'split': index, 'below': tree,
    'above': tree}: a key at or below the split range's 'through' is in a range of 'below'."""
    if count == 1:
        return {"leaf": first}
    below = count // 2
    return {"split": first + below - 1, "below": search_tree(below, first),
            "above": search_tree(count - below, first + below)}


def hull(ladder: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """The range from the ladder's first lower bound through its last upper bound."""
    return {"after": ladder[0].get("after"), "from": ladder[0].get("from"), "through": ladder[-1].get("through")}


def with_literals(ranges: Sequence[Dict[str, Any]], column_types: Dict[str, str]) -> List[Dict[str, Any]]:
    """ranges with each bound column that can be a plain literal given one: 'number' (its digits) for
    an integer the column's integer type holds, 'text' for a string of a text column; the other
    columns (and integers out of their type's range, which the typed read refuses) keep their image."""
    types = {str(name).lower(): bare_type(str(data_type)) for name, data_type in column_types.items()}
    return [{**planned, **{name: _literal_bound(planned.get(name), types) for name in ("after", "from", "through")}}
            for planned in ranges]


def _literal_bound(bound: Optional[List[Dict[str, str]]], types: Dict[str, str]) -> Optional[List[Dict[str, str]]]:
    if bound is None:
        return None
    return [{**column, **_literal(json.loads(column["image"])[column["name"]], types.get(column["name"].lower(), ""))}
            for column in bound]


def _literal(value: Any, data_type: str) -> Dict[str, str]:
    if isinstance(value, bool):
        return {}
    if isinstance(value, int):
        if data_type in _INTEGER_BITS:
            limit = 2 ** (_INTEGER_BITS[data_type] - 1)
            return {"number": str(value)} if -limit <= value < limit else {}
        if data_type in _UNSIGNED_BITS:
            return {"number": str(value)} if 0 <= value < 2 ** _UNSIGNED_BITS[data_type] else {}
        return {}
    if isinstance(value, str) and data_type.startswith(_TEXT_TYPES):
        return {"text": value}
    return {}


def _same_key(one: Sequence[Dict[str, str]], other: Sequence[Dict[str, str]]) -> bool:
    """The same key, as the capture wrote it: the same columns and images (1 and 1.0 are not taken
    for one, which at worst starts a ladder more)."""
    return [(column["name"], column["image"]) for column in one] == [(column["name"], column["image"]) for column in other]


def ladder_plans(ranges: Sequence[Dict[str, Any]], column_types: Dict[str, str]) -> List[Dict[str, Any]]:
    """What snapshot_ranges.sql renders for a group of ranges (in seq order): its ladders, each
    {'ranges': the ladder's ranges with literals, 'hull': hull(ranges), 'tree': search_tree(...),
    'first': the place of its first range among ranges}."""
    plans, first = [], 0
    for ladder in ladders(with_literals(ranges, column_types)):
        plans.append({"ranges": ladder, "hull": hull(ladder), "tree": search_tree(len(ladder)), "first": first})
        first += len(ladder)
    return plans
