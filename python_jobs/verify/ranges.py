"""Key ranges compared by checksums (docs/operating.md, "Verify and repair"): the key space split into
segments, each side's row count and checksum of every segment computed where the data is (one
query per side and split), segments that differ split again, down to ranges small enough to compare
row by row. Engine-neutral: a side is anything that samples keys, computes segment stats and reads
a range's rows; the source and mirror sides (sources.py, the adapter's queries) do the I/O.

A key here is a tuple of the key columns' values in key order (ints, Decimals, strings); both
sides order keys alike: numbers by value, strings by their UTF-8 bytes (docs/online_snapshots.md).
"""

from __future__ import annotations

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
    def sample_keys(self, key_range: KeyRange, count: int) -> list[Key]: ...

    def segment_stats(self, key_range: KeyRange, points: Sequence[Key]) -> dict[int, SegmentStats]:
        """Per segment of key_range cut at points (segment i: keys after points[i-1] through points[i]; the
        last after the last point), its rows and checksum; segments without rows may be left out."""
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
    """What a search did: the ranges whose stats were compared, the queries each side ran."""

    ranges_compared: int = 0
    splits: int = 0
    source_rows: int = 0
    mirror_rows: int = 0


def differing_ranges(source: Side, mirror: Side, segments: int, leaf_rows: int, fan_out: int = 32,
                     search: RangeSearch | None = None) -> list[KeyRange]:
    """The smallest ranges (at most leaf_rows rows on either side, or not splittable further) whose
    count or checksum differ between the sides; [] when every segment is equal."""
    search = search if search is not None else RangeSearch()
    leaves: list[KeyRange] = []
    pending: list[tuple[KeyRange, int]] = [(KeyRange(), segments)]
    first = True
    while pending:
        key_range, parts = pending.pop()
        sampled = [*mirror.sample_keys(key_range, parts * 4), *source.sample_keys(key_range, parts * 4)]
        points = split_points(sampled, parts)
        source_stats = source.segment_stats(key_range, points)
        mirror_stats = mirror.segment_stats(key_range, points)
        search.splits += 1
        for index, part in enumerate(sub_ranges(key_range, points)):
            on_source, on_mirror = source_stats.get(index, SegmentStats()), mirror_stats.get(index, SegmentStats())
            search.ranges_compared += 1
            if first:
                search.source_rows += on_source.rows
                search.mirror_rows += on_mirror.rows
            if on_source == on_mirror:
                continue
            if max(on_source.rows, on_mirror.rows) <= leaf_rows or not points:
                leaves.append(part)
            else:
                pending.append((part, fan_out))
        first = False
    return sorted(leaves, key=lambda part: sort_key(part.after) if part.after else ())
