"""Whether a mirror's batch is read from its range's newest events, deduplicated once for all the
mirrors that read the range (raw_ranges.py), instead of by its own batch view's window (dedup.sql).

The shared dedup keeps the newest event of each source table and key, as the batch view's window
does for one table, so it stands in for it where the mirror needs nothing of its own: the whole
range (no consistency group's deferred transactions taken out of it) and one key bucket. A mirror's
own dedup is a shuffle, a Spark job of its own in every mirror's classification.

TOAST placeholders: the mirror's own view applies a key's events in rounds, one commit each
(dedup.sql). The dedup in the driver fills each newest image's placeholders from the key's older
events instead (LocalRawRanges.java, PlaceholderFold.java), so the newest event alone gives the same
row; Spark's window over the range (where that class is missing) does not, and then the rounds stay.
The fill is shared by every mirror of the range and knows none of them: a late event older than a
mirror's stored row would fill a value that row has since replaced, where the rounds skip that
event. So a mirror takes it only when every event of its table in the range is newer than every
seq the mirror and its tombstones hold.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional


def applies(plan: Optional[Mapping[str, Any]], buckets: int, whole_range: bool) -> bool:
    """plan: the chunk's range plan (range_plan.py), None where not known; buckets: the chunk's key
    buckets; whole_range: the mirror reads the range as read, not a view without deferred transactions."""
    return plan is not None and buckets == 1 and whole_range


def needs_placeholder_fold(plan: Mapping[str, Any]) -> bool:
    """Whether the mirror's events in the range carry TOAST placeholders: then only a dedup that
    folds each key's older events into its newest stands in for the mirror's rounds."""
    return int(plan["placeholder_events"]) > 0


def fold_is_newer_than_stored(plan: Mapping[str, Any], newest_stored_seq: Optional[str]) -> bool:
    """Whether the fill may stand in for this mirror's rounds: the oldest seq of its table's events
    in the range (plan's oldest_seq, '' when none has one) is newer than the newest seq its mirror
    and tombstones hold (None: they hold none), so no filling event is one the rounds would skip."""
    if newest_stored_seq is None:
        return True
    oldest = str(plan.get("oldest_seq") or "")
    return oldest != "" and oldest > newest_stored_seq
