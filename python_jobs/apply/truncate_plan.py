"""Whether a chunk's newest truncate applies to its mirror, and what it writes; truncate.sql's
apply_chunk_truncates renders the statements (docs/schema_changes.md, "Truncates").

A truncate applies when it is newer than the mirror's truncate watermark: the mirror's rows older
than it are removed (hard deletes) or marked deleted at its position (soft deletes), the
tombstones older than it dropped (the watermark covers them), and the watermark recorded. A
position compares as a string: seqs are fixed-width (python_jobs/formats/records.py, format_seq).

With soft deletes the chunk's events are applied first, older ones too, and then each of its truncates
marks the rows older than it, oldest truncate first: a row ends deleted at the first truncate after
its event, as when each truncate came in a chunk of its own. Hard deletes keep no such row, so their
newest truncate applies before the events, and the events older than it are not applied.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional

POSITION = re.compile(r"[0-9.]+")
SOFT_DELETES = "soft"


class TruncateError(ValueError):
    """A truncate event the apply cannot place: its message names the model and the value."""


@dataclass(frozen=True)
class TruncatePlan:
    # The truncate's position, the mirror's watermark after it; None: no truncate to apply.
    seq: Optional[str]
    # Its source timestamp as a SQL literal (NULL when the event carried none).
    source_ts_sql: str
    # The mirror's rows the truncate removes (or marks deleted): a predicate on the mirror's columns.
    older_rows: str
    # The rows are marked deleted at the truncate's position instead of removed.
    soft: bool
    # Applied after the chunk's events (soft deletes), one mark per truncate (truncate_marks).
    after_events: bool


def _text(value: Any) -> str:
    return "" if value is None or str(value) == "None" else str(value)


def truncate_plan(found: Mapping[str, Any], watermark: Optional[str], deletes: str, model: str) -> TruncatePlan:
    """found: the chunk's newest truncate ({'truncate_seq', 'truncate_source_ts'}, '' or None when it
    has none); watermark: the mirror's truncate watermark (None: never truncated)."""
    seq = _text(found.get("truncate_seq"))
    if seq == "" or (watermark is not None and seq <= str(watermark)):
        return TruncatePlan(seq=None, source_ts_sql="", older_rows="", soft=False, after_events=False)
    _check_position(seq, model)
    soft = deletes == SOFT_DELETES
    return TruncatePlan(
        seq=seq,
        source_ts_sql=_source_ts_sql(found.get("truncate_source_ts")),
        older_rows=f"_cdc_seq < '{seq}'" + (" and not _cdc_deleted" if soft else ""),
        soft=soft,
        after_events=soft,
    )


@dataclass(frozen=True)
class TruncateMark:
    """One truncate of a soft-delete mirror's chunk: its live rows older than seq marked deleted at it."""

    seq: str
    source_ts_sql: str
    older_rows: str


def truncate_marks(found: Iterable[Mapping[str, Any]], watermark: Optional[str], model: str) -> List[TruncateMark]:
    """found: the chunk's truncates ({'truncate_seq', 'truncate_source_ts'}); the marks of those newer than the
    watermark, oldest first, so that each row takes the first truncate after it."""
    seqs = {}
    for row in found:
        seq = _text(row.get("truncate_seq"))
        if seq and (watermark is None or seq > str(watermark)):
            _check_position(seq, model)
            seqs.setdefault(seq, _source_ts_sql(row.get("truncate_source_ts")))
    return [TruncateMark(seq=seq, source_ts_sql=seqs[seq], older_rows=f"_cdc_seq < '{seq}' and not _cdc_deleted")
            for seq in sorted(seqs)]


def _check_position(seq: str, model: str) -> None:
    if not POSITION.fullmatch(seq):
        raise TruncateError(f"cdc_merge model '{model}': a truncate's seq is '{seq}', not a position")


def _source_ts_sql(value: Any) -> str:
    source_ts = _text(value)
    return f"timestamp'{source_ts}'" if source_ts else "cast(null as timestamp)"


def truncate_plan_dict(found: Mapping[str, Any], watermark: Optional[str], deletes: str, model: str) -> Dict[str, Any]:
    """truncate_plan for a macro: the plan's fields and 'error' (None, or what the apply cannot place)."""
    try:
        return {**asdict(truncate_plan(found, watermark, deletes, model)), "error": None}
    except TruncateError as error:
        return {"seq": None, "source_ts_sql": "", "older_rows": "", "soft": False, "after_events": False, "error": str(error)}


def truncate_marks_dict(found: Iterable[Mapping[str, Any]], watermark: Optional[str], model: str) -> Dict[str, Any]:
    """truncate_marks for a macro: {'marks': [their fields], 'error': None or what the apply cannot place}."""
    try:
        return {"marks": [asdict(mark) for mark in truncate_marks(found, watermark, model)], "error": None}
    except TruncateError as error:
        return {"marks": [], "error": str(error)}
