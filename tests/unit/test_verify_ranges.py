"""The range search of cdc-verify (python_jobs/verify/ranges.py) over two sides held in memory."""

from __future__ import annotations

import hashlib
import random

from python_jobs.verify.ranges import KeyRange, RangeSearch, SegmentStats, differing_ranges, sort_key, split_points


class MemorySide:
    """A table as {key: row text}; stats as the engines compute them (count, sum of md5-derived numbers)."""

    def __init__(self, rows: dict) -> None:
        self.rows, self.queries = rows, 0

    def _in(self, key_range: KeyRange) -> list:
        return [key for key in self.rows
                if (key_range.after is None or sort_key(key) > sort_key(key_range.after))
                and (key_range.through is None or sort_key(key) <= sort_key(key_range.through))]

    def sample_keys(self, key_range: KeyRange, count: int) -> list:
        keys = self._in(key_range)
        return random.Random(len(keys)).sample(keys, min(count, len(keys)))

    def segment_stats(self, key_range: KeyRange, points) -> dict:
        self.queries += 1
        stats: dict = {}
        for key in self._in(key_range):
            segment = next((index for index, point in enumerate(points) if sort_key(key) <= sort_key(point)), len(points))
            number = int(hashlib.md5(self.rows[key].encode()).hexdigest()[:8], 16)
            old = stats.get(segment, SegmentStats())
            stats[segment] = SegmentStats(old.rows + 1, old.checksum + number)
        return stats


def keys_in(ranges: list, keys) -> set:
    return {key for key in keys for part in ranges
            if (part.after is None or sort_key(key) > sort_key(part.after))
            and (part.through is None or sort_key(key) <= sort_key(part.through))}


def test_equal_sides_need_one_query_each_and_count_every_row():
    rows = {(index,): f"v{index}" for index in range(10_000)}
    source, mirror = MemorySide(rows), MemorySide(dict(rows))
    search = RangeSearch()
    assert differing_ranges(source, mirror, segments=16, leaf_rows=100, search=search) == []
    assert (source.queries, mirror.queries) == (1, 1)
    assert search.source_rows == search.mirror_rows == 10_000


def test_every_kind_of_difference_is_narrowed_to_a_small_range_holding_it():
    rows = {(index, f"k{index % 7}"): f"v{index}" for index in range(20_000)}
    mirror = dict(rows)
    changed, missing, extra = (1234, "k2"), (5000, "k2"), (7777, "zz")
    mirror[changed] = "other"
    del mirror[missing]
    mirror[extra] = "extra"
    search = RangeSearch()
    leaves = differing_ranges(MemorySide(rows), MemorySide(mirror), segments=16, leaf_rows=200, search=search)
    assert keys_in(leaves, [changed, missing, extra]) == {changed, missing, extra}
    assert len(keys_in(leaves, set(rows) | set(mirror))) <= 3 * 200 * 2


def test_text_keys_are_ordered_by_their_utf8_bytes():
    assert sort_key(("Z",)) < sort_key(("a",)) < sort_key(("é",))
    assert split_points([(3,), (1,), (2,), (2,)], 2) == [(2,)]
    assert split_points([(1,)], 8) == []
