"""Whether a batch is applied to its mirror in one commit on main (OneCommitBatch.java), or on a
branch with a statement per write that is then published (publish.sql).

One commit needs what deletes by position need (position_deletes.py) and a batch small enough for
the driver to write its new rows: its events, known before the batch is classified from the one
pass over the range (range_plan.py), at most ONE_COMMIT_MAX_EVENTS. An update that did not send a
TOAST column takes it from the stored row the commit deletes (write.sql stored_values_sql).
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

# New rows reach the driver and are written there as one data file: about 1 KB each.
ONE_COMMIT_MAX_EVENTS = 50_000


def applies(by_position: bool, plan: Optional[Mapping[str, Any]], buckets: int) -> bool:
    """plan: the chunk's range plan, None where not known; buckets: the chunk's key buckets."""
    if not by_position or plan is None or buckets != 1:
        return False
    return int(plan["events"]) <= ONE_COMMIT_MAX_EVENTS
