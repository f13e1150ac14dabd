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
