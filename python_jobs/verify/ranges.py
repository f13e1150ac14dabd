"""Key ranges compared by checksums (docs/operating.md, "Verify and repair"): the key space split into
segments, each side's row count and checksum of every segment computed where the data is (one
query per side and split), segments that differ split again, down to ranges small enough to compare
row by row. Engine-neutral: a side is anything that samples keys, computes segment stats and reads
a range's rows; the source and mirror sides (sources.py, the adapter's queries) do the I/O.

A key here is a tuple of the key columns' values in key order (ints, Decimals, strings); both
sides order keys alike: numbers by value, strings by their UTF-8 bytes (docs/online_snapshots.md).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol, Sequence

Key = tuple[Any, ...]


@dataclass(frozen=True)
class KeyRange:
    """The keys after `after` (exclusive; None: from the start) through `through` (inclusive; None: to the end)."""

    after: Key | None = None
    through: Key | None = None

    def describe(self) -> str:
        show = (lambda key: ",".join(str(value) for value in key))
        return f"({show(self.after) if self.after else 'start'}, {show(self.through) if self.through else 'end'}]"


@dataclass(frozen=True)
class SegmentStats:
    rows: int = 0
    checksum: int = 0


class Side(Protocol):
    def sample_keys(self, ranges: Sequence[KeyRange], count: int) -> list[Key]:
        """At most count keys drawn at random from the rows in any of the ranges."""
        ...

    def segment_stats(self, ranges: Sequence[KeyRange], columns: Sequence[str] | None = None) -> dict[int, SegmentStats]:
        """Per range (disjoint, in key order) its rows and checksum, by the range's index; ranges
        without rows may be left out. columns: those the checksum covers (default: all)."""
        ...


def sort_key(key: Key) -> tuple:
    """A key as both sides order it: strings by their UTF-8 bytes, numbers by value."""
    return tuple(value.encode("utf-8") if isinstance(value, str) else Decimal(value) if isinstance(value, float) else value
                 for value in key)


def split_points(keys: Sequence[Key], segments: int) -> list[Key]:
    """At most segments - 1 distinct keys cutting the sampled keys into about equal parts."""
    distinct = sorted(set(keys), key=sort_key)
    if segments < 2 or len(distinct) < 2:
        return []
    step = len(distinct) / segments
    points = {distinct[min(len(distinct) - 1, int(step * index))] for index in range(1, segments)}
    return sorted(points, key=sort_key)


def sub_ranges(key_range: KeyRange, points: Sequence[Key]) -> list[KeyRange]:
    bounds = [key_range.after, *points, key_range.through]
    return [KeyRange(bounds[index], bounds[index + 1]) for index in range(len(bounds) - 1)]


@dataclass
class RangeSearch:
    """What a search did: the ranges whose stats were compared, the levels of splitting."""

    ranges_compared: int = 0
    levels: int = 0
    source_rows: int = 0
    mirror_rows: int = 0


def contains(key_range: KeyRange, key: Key) -> bool:
    return ((key_range.after is None or sort_key(key) > sort_key(key_range.after))
            and (key_range.through is None or sort_key(key) <= sort_key(key_range.through)))


def differing_ranges(source: Side, mirror: Side, segments: int, leaf_rows: int, fan_out: int = 32,
                     search: RangeSearch | None = None) -> list[KeyRange]:
    """The smallest ranges (at most leaf_rows rows on either side, or not splittable further) whose
    count or checksum differ between the sides; [] when every segment is equal. Level by level: the
    ranges of one level are sampled and compared in one query a side, both sides at once."""
    search = search if search is not None else RangeSearch()
    leaves: list[KeyRange] = []
    level, parts = [KeyRange()], segments
    # The source's queries run in a thread while the mirror's run here: the two databases work at once.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="cdc-verify-source") as source_thread:
        while level:
            wanted = parts * 4 * len(level)
            source_sample = source_thread.submit(source.sample_keys, level, wanted)
            sampled = [*mirror.sample_keys(level, wanted), *source_sample.result()]
            parts_of: list[tuple[KeyRange, bool]] = []  # each sub-range, and whether its range could be split
            for key_range in level:
                points = split_points([key for key in sampled if contains(key_range, key)], parts)
                parts_of.extend((part, bool(points)) for part in sub_ranges(key_range, points))
            subs = [part for part, _ in parts_of]
            source_stats = source_thread.submit(source.segment_stats, subs)
            mirror_stats = mirror.segment_stats(subs)
            level = _compare_level(parts_of, source_stats.result(), mirror_stats, leaf_rows, leaves, search)
            parts = fan_out
    return sorted(leaves, key=lambda part: sort_key(part.after) if part.after else ())


def _compare_level(parts_of: Sequence[tuple[KeyRange, bool]], source_stats: dict[int, SegmentStats],
                   mirror_stats: dict[int, SegmentStats], leaf_rows: int, leaves: list[KeyRange],
                   search: RangeSearch) -> list[KeyRange]:
    """Each range of a level: equal, a leaf to compare row by row, or one to split again (returned)."""
    first = search.levels == 0
    search.levels += 1
    again = []
    for index, (part, splittable) in enumerate(parts_of):
        on_source, on_mirror = source_stats.get(index, SegmentStats()), mirror_stats.get(index, SegmentStats())
        search.ranges_compared += 1
        if first:
            search.source_rows += on_source.rows
            search.mirror_rows += on_mirror.rows
        if on_source == on_mirror:
            continue
        if max(on_source.rows, on_mirror.rows) <= leaf_rows or not splittable:
            leaves.append(part)
        else:
            again.append(part)
    return again
