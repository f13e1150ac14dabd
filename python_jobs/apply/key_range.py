"""The key range of a batch's bucket, as one more condition on reads of the mirror's stored keys
(classify.sql, key_in_range_sql): Iceberg skips the data files whose key bounds lie outside it.

The bounds come from the engine's hex() of the bucket's smallest and largest key (bucket_plan_sql
or the chunk's one pass); they go into SQL as literals, so anything but hex digits is refused.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Mapping, Optional

# Above this many events in a bucket the key range is left out: at 1M events it skipped no file in
# the benchmarks and its check of every stored key cost 3-4 s (BENCHMARKS.md, "Levers tried"); at
# 10k events of recent keys it halved the mirror's reads.
KEY_RANGE_MAX_EVENTS = 100_000
HEX = re.compile(r"[0-9A-Fa-f]+")


class KeyRangeError(ValueError):
    """A key bound that is not hex digits: its message names the model and the value."""


def _text(value: Any) -> str:
    return "" if value is None or str(value) == "None" else str(value)


def key_range_of(plan: Mapping[str, Any], model: str) -> Optional[Dict[str, str]]:
    """{'min_hex', 'max_hex'} of a bucket plan row ({'min_key_hex', 'max_key_hex', 'events'}), or
    None for an empty bucket or one of more than KEY_RANGE_MAX_EVENTS events."""
    bounds = {"min_hex": _text(plan.get("min_key_hex")), "max_hex": _text(plan.get("max_key_hex"))}
    if bounds["min_hex"] == "" or int(plan.get("events") or 0) > KEY_RANGE_MAX_EVENTS:
        return None
    for value in bounds.values():
        if not HEX.fullmatch(value):
            raise KeyRangeError(f"cdc_merge model '{model}': the engine's hex() gave '{value}' for a key bound")
    return bounds


def key_range_dict(plan: Mapping[str, Any], model: str) -> Dict[str, Any]:
    """key_range_of for a macro: {'range': the bounds or None, 'error': None or what was refused}."""
    try:
        return {"range": key_range_of(plan, model), "error": None}
    except KeyRangeError as error:
        return {"range": None, "error": str(error)}
