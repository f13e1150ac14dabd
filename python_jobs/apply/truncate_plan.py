"""Whether a chunk's newest truncate applies to its mirror, and what it writes; truncate.sql's
apply_chunk_truncates renders the statements (docs/schema_changes.md, "Truncates").

A truncate applies when it is newer than the mirror's truncate watermark: the mirror's rows older
than it are removed (hard deletes) or marked deleted at its position (soft deletes), the
tombstones older than it dropped (the watermark covers them), and the watermark recorded. A
position compares as a string: seqs are fixed-width (python_jobs/formats/records.py, format_seq).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any, Dict, Mapping, Optional

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


def _text(value: Any) -> str:
    return "" if value is None or str(value) == "None" else str(value)


def truncate_plan(found: Mapping[str, Any], watermark: Optional[str], deletes: str, model: str) -> TruncatePlan:
    """found: the chunk's newest truncate ({'truncate_seq', 'truncate_source_ts'}, '' or None when it
    has none); watermark: the mirror's truncate watermark (None: never truncated)."""
    seq = _text(found.get("truncate_seq"))
    if seq == "" or (watermark is not None and seq <= str(watermark)):
        return TruncatePlan(seq=None, source_ts_sql="", older_rows="", soft=False)
    if not POSITION.fullmatch(seq):
        raise TruncateError(f"cdc_merge model '{model}': a truncate's seq is '{seq}', not a position")
    source_ts = _text(found.get("truncate_source_ts"))
    soft = deletes == SOFT_DELETES
    return TruncatePlan(
        seq=seq,
        source_ts_sql=f"timestamp'{source_ts}'" if source_ts else "cast(null as timestamp)",
        older_rows=f"_cdc_seq < '{seq}'" + (" and not _cdc_deleted" if soft else ""),
        soft=soft,
    )


def truncate_plan_dict(found: Mapping[str, Any], watermark: Optional[str], deletes: str, model: str) -> Dict[str, Any]:
    """truncate_plan for a macro: the plan's fields and 'error' (None, or what the apply cannot place)."""
    try:
        return {**asdict(truncate_plan(found, watermark, deletes, model)), "error": None}
    except TruncateError as error:
        return {"seq": None, "source_ts_sql": "", "older_rows": "", "soft": False, "error": str(error)}
