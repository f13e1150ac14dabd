"""What closes a history's versions besides a key's own delete (macros/materializations/cdc_history/
ranges.sql renders the SQL): online snapshot ranges (snapshot_ranges.py) and truncates of the source
table. A truncate is a range over every key whose low watermark is the truncate itself: each key whose
newest event before it is live gets a delete there, with the truncate's source time, as its mirror
removes the row (docs/history.md). A history keeps the truncates it applied in cdc_merge_truncates, as
a mirror keeps its watermark: an older event of a key landing after its truncate is closed by it too.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from python_jobs.apply.snapshot_ranges import snapshot_ranges
from python_jobs.apply.truncate_plan import POSITION, TruncateError


def _text(value: Any) -> Optional[str]:
    return None if value is None or str(value) in ("", "None", "NULL") else str(value)


def _truncate_range(seq: str) -> Dict[str, Any]:
    return {"seq": seq, "low": seq, "after": None, "from": None, "through": None, "truncate": True}


def history_closes(events: Sequence[Sequence[Any]], stored_truncates: Sequence[Sequence[Any]],
                   key_columns: Sequence[str], model: str) -> Optional[Dict[str, Any]]:
    """events: (seq, action, raw_data, source_ts) of the chunk's range records and truncates of the table;
    stored_truncates: (seq, source_ts) of the truncates the history applied before. Returns None when
    nothing closes, else {'ranges': every range and truncate in seq order, for the chains of a batch's
    keys; 'after': the chunk's own, for the keys no batch of the chunk touched (a stored truncate closed
    those already); 'times': {seq: source time text or None}; 'record': the chunk's truncates not stored
    yet, [{'seq', 'time'}]; 'truncates': every truncate's seq, whose stored deletes the chains find again;
    'after_cause': what 'after' holds, as the run's log names it}."""
    times: Dict[str, Optional[str]] = {}
    chunk_truncates: List[str] = []
    range_events = []
    for seq, action, raw_data, source_ts in events:
        seq = str(seq)
        times[seq] = _text(source_ts)
        if action == "truncate":
            chunk_truncates.append(seq)
        else:
            range_events.append((seq, raw_data))
    stored: Dict[str, Optional[str]] = {str(seq): _text(source_ts) for seq, source_ts in stored_truncates}
    for seq in [*chunk_truncates, *stored]:
        if not POSITION.fullmatch(seq):
            raise TruncateError(f"cdc_history model '{model}': a truncate's seq is '{seq}', not a position")
    after = snapshot_ranges(range_events, key_columns) + [_truncate_range(seq) for seq in sorted(set(chunk_truncates))]
    after.sort(key=lambda found: found["seq"])
    earlier = [_truncate_range(seq) for seq in sorted(stored) if seq not in chunk_truncates]
    if not after and not earlier:
        return None
    return {
        "ranges": sorted(after + earlier, key=lambda found: found["seq"]),
        "after": after,
        "times": {**{seq: time for seq, time in stored.items()}, **times},
        "record": [{"seq": seq, "time": times[seq]} for seq in sorted(set(chunk_truncates)) if seq not in stored],
        "truncates": sorted(set(chunk_truncates) | stored.keys()),
        "after_cause": " and ".join(cause for cause, found in (("a truncate", chunk_truncates),
                                                                ("online snapshot ranges", range_events)) if found),
    }
