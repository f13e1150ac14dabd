"""Rows in flight are not drift (python_jobs/verify/in_flight.py, check.check_by_ranges): a source held
at a log position against a mirror that applies a raw log in memory, one event per poll."""

from __future__ import annotations

import json

from python_jobs.verify.check import MirrorCheck, check_by_ranges
from python_jobs.verify.in_flight import MirrorProgress, SourcePosition
from python_jobs.verify.ranges import KeyRange
from .test_verify_ranges import MemorySide

POSITION = SourcePosition(changed_from="050", seen_before="050", label="0/50")


def canonical(key: tuple) -> str:
    return json.dumps([str(value) for value in key])


class Side(MemorySide):
    """One side of a range check in memory: rows by key tuple, some keys left out, rows read by range."""

    def __init__(self, rows: dict) -> None:
        super().__init__({})
        self.in_checksum, self.left_out = ["qty"], set()
        self.load(rows)

    def load(self, rows: dict) -> None:
        self.all_rows = {key: json.dumps(row) for key, row in rows.items()}
        self.rows = {key: row for key, row in self.all_rows.items() if key not in self.left_out}

    def exclude(self, keys, view=None) -> None:
        self.left_out = {tuple(int(value) for value in (json.loads(key) if isinstance(key, str) else key)) for key in keys}
        self.load({key: json.loads(row) for key, row in self.all_rows.items()})

    def pin(self, snapshot) -> None:
        self.pinned = snapshot

    def segment_stats(self, key_range: KeyRange, points, columns=None) -> dict:
        return super().segment_stats(key_range, points)

    def rows_in(self, key_range: KeyRange) -> dict:
        return {canonical(key): json.loads(self.rows[key]) for key in self._in(key_range)}


class Pipeline:
    """A raw log of (seq, key, row or None for a delete) and a mirror that has applied its first `applied` events."""

    def __init__(self, base: dict, events: list, applied: int) -> None:
        self.base, self.events, self.applied = base, events, applied

    def mirror_rows(self) -> dict:
        rows = dict(self.base)
        for _, key, row in self.events[:self.applied]:
            if row is None:
                rows.pop(key, None)
            else:
                rows[key] = row
        return rows

    def rows(self, sql: str) -> list:
        """The answers to macros/verify.sql's statements, named by the fake templates below."""
        name, *arguments = sql.split()
        if name == "applied":
            return [(str(self.applied),)] if self.applied else []
        if name == "raw_current":
            return [(str(len(self.events)),)]
        if name == "mirror_current":
            return [(f"m{self.applied}",)]
        if name == "passed":
            snapshot, position = int(arguments[0]), arguments[1]
            return [(int(any(seq >= position for seq, _, _ in self.events[:snapshot])),)]
        if name == "landed":  # the newest commit of the raw table, in epoch ms, at or after the one asked
            return [(int(getattr(self, "landed_ms", 0) >= int(arguments[0])),)]
        if name == "in_flight":
            return [(canonical(key),) for seq, key, _ in self.events if seq >= arguments[0]]
        raise AssertionError(sql)


TEMPLATES = {"relation": "m", "source_table": "t", "columns": [["id", "int"], ["qty", "int"]],
             "applied_offset_sql": "applied", "raw_current_sql": "raw_current", "mirror_current_sql": "mirror_current",
             "passed_sql": "passed __CDC_MERGE_SNAPSHOT__ __CDC_MERGE_POSITION__",
             "in_flight_sql": "in_flight __CDC_MERGE_POSITION__"}


def check(pipeline: Pipeline, source_rows: dict, wait: float = 10.0, applies: bool = True, capture_state=None):
    source, mirror = Side(source_rows), Side(pipeline.mirror_rows())
    templates = {**TEMPLATES, "landed_commit_sql": "landed __CDC_MERGE_COMMIT_MS__"}
    progress = MirrorProgress(templates, pipeline.rows, capture_state=capture_state)
    clock = iter(range(10_000))
    settle = progress.settle

    def sleep(_seconds):  # each poll the mirror applies one more event (unless it is stuck)
        if applies:
            pipeline.applied = min(pipeline.applied + 1, len(pipeline.events))

    progress._clock = lambda: float(next(clock))

    def settle_and_show(position, wait_seconds):
        state = settle(position, wait_seconds, sleep=sleep)
        mirror.load(pipeline.mirror_rows())  # the pinned snapshot: what the mirror has applied
        return state

    progress.settle = settle_and_show
    return check_by_ranges(TEMPLATES, RangeSide(source), RangeSide(mirror),
                           {"segments": 4, "leaf_rows": 20, "wait_seconds": wait}, progress, POSITION)


class RangeSide:
    """A Side whose rows(range) is the row read check_by_ranges makes (MemorySide.rows is its dict)."""

    def __init__(self, side: Side) -> None:
        self.side = side

    def __getattr__(self, name):
        return getattr(self.side, name)

    def rows(self, key_range: KeyRange) -> dict:
        return self.side.rows_in(key_range)


BASE = {(key,): {"id": key, "qty": key} for key in range(200)}
# Before the position: 5 updated, 7 deleted; after it: 9 updated, 300 inserted.
EVENTS = [("010", (5,), {"id": 5, "qty": -5}), ("020", (7,), None),
          ("060", (9,), {"id": 9, "qty": -9}), ("070", (300,), {"id": 300, "qty": 300})]
AT_POSITION = {**{key: row for key, row in BASE.items() if key != (7,)}, (5,): {"id": 5, "qty": -5}}


def test_a_lagging_mirror_is_compared_once_it_has_applied_past_the_position_without_the_keys_changed_after_it():
    pipeline = Pipeline(BASE, EVENTS, applied=1)
    result = check(pipeline, AT_POSITION, wait=60)
    assert result.clean, result.lines()
    assert pipeline.applied >= 3 and result.waited_seconds < 20  # waited until the event after the position was applied
    assert result.in_flight == 2 and result.source_position == "0/50"
    assert result.source_rows == result.mirror_rows == 198
    assert "198 rows in the source, 198 in the mirror (the 2 keys in flight left out);" in result.lines()[0]


def test_drift_is_reported_beside_rows_in_flight():
    drifted = {**BASE, (3,): {"id": 3, "qty": 999}}
    result = check(Pipeline(drifted, EVENTS, applied=1), AT_POSITION)
    assert not result.clean
    assert (result.missing, result.extra, list(result.differing)) == ([], [], ['["3"]'])
    assert result.differing['["3"]'] == {"qty": (3, 999)}


def test_a_mirror_that_never_gets_past_the_position_is_reported_with_why():
    stuck = Pipeline(BASE, EVENTS, applied=1)  # the delete of 7 and what follows never get applied
    result = check(stuck, AT_POSITION, wait=3, applies=False)
    assert not result.clean
    assert result.extra == ['["7"]'] and result.in_flight == 2
    assert any("had not applied past the source's position 0/50" in note for note in result.notes)


def test_drift_in_a_mirror_caught_up_with_a_quiet_source_is_reported_without_waiting_out_the_wait():
    drifted = {**BASE, (3,): {"id": 3, "qty": 999}}
    quiet = Pipeline(drifted, EVENTS[:2], applied=2)  # everything landed is applied; nothing after the position
    result = check(quiet, AT_POSITION, wait=60)
    assert list(result.differing) == ['["3"]'] and result.in_flight == 0
    assert result.waited_seconds < 30 and not any("had not applied past" in note for note in result.notes)
    # It may as well be a change not captured yet (nothing runs): the report says what to run before believing it.
    assert any("nothing of the source at or after its position 0/50 has landed yet" in note
               and "run the capture and dbt build" in note for note in result.notes), result.notes
    caught_up = check(Pipeline(BASE, EVENTS[:2], applied=2), AT_POSITION, wait=60)
    assert caught_up.clean and caught_up.notes == []


def test_a_mysql_snapshots_rows_at_the_position_are_not_in_flight():
    """MariaDB's position after a capture's snapshot on a quiet server is the snapshot's own: its rows
    (phase 0) show what the check's snapshot shows; a streamed change's rows event starts after it."""
    from python_jobs.formats.records import format_seq
    from python_jobs.verify.sources import _binlog_seq

    changed_from = _binlog_seq(("binlog.000001", 17277), phase=1)
    assert format_seq(1, 17277, 0, 0) < changed_from <= format_seq(1, 17278, 0, 1)
    assert _binlog_seq(("binlog.000001", 17277)) == format_seq(1, 17277, 0, 0)


def test_a_mirror_caught_up_with_a_quiet_raw_table_is_behind_while_the_capture_has_written_more(tmp_path):
    """A landing every minute leaves the raw table quiet while the capture's newest files wait in the
    inbox: with the capture's state, the mirror is compared as behind (and --repair leaves it), not as
    a drifted one; once the raw table holds the capture's newest commit, as caught up."""
    state = tmp_path / "capture-state.json"
    state.write_text(json.dumps({"slot": "s", "following": {"newest_commit_ms": 1_700_000_000_500}}))
    waiting = Pipeline(BASE, EVENTS[:1], applied=1)  # the delete of 7 is written, not landed
    waiting.landed_ms = 1_700_000_000_000
    result = check(waiting, AT_POSITION, wait=20, capture_state=state)
    assert result.extra == ['["7"]'] and result.behind, result.lines()
    assert any("had not applied past the source's position 0/50" in note for note in result.notes)
    # Landed and applied: quiet, so a difference then is the mirror's own, and --repair reads it.
    drifted = {**BASE, (3,): {"id": 3, "qty": 999}}
    landed = Pipeline(drifted, EVENTS[:2], applied=2)
    landed.landed_ms = 1_700_000_000_500
    result = check(landed, AT_POSITION, wait=20, capture_state=state)
    assert list(result.differing) == ['["3"]'] and not result.behind and result.waited_seconds < 15
    # Said as such: the note of a quiet raw table without the state made a real difference look like lag.
    assert any("a difference is the mirror's own" in note for note in result.notes), result.notes
    assert not any("has landed yet" in note for note in result.notes), result.notes
    # Without the state file the quiet raw table is all it sees, as before.
    assert not check(Pipeline(BASE, EVENTS[:1], applied=1), AT_POSITION, wait=20).behind


def test_rows_without_a_cdc_key_are_counted_beside_the_mirrors_rows():
    """Left out of the comparison and of the mirror's count: "3144 in the mirror" of a table holding 3,145 rows read as a lost row."""
    check = MirrorCheck("m.items", "shop.items", source_rows=3144, mirror_rows=3144, unkeyed=1, ranges=4)
    assert not check.clean
    assert "3144 rows in the source, 3144 in the mirror and 1 without a _cdc_key; checksums" in check.lines()[0]


def test_an_extra_row_of_a_key_held_twice_is_said_to_be_one():
    """A key the source has, held twice in the mirror, read "extra in the mirror" as if the source had not the key."""
    check = MirrorCheck("m.items", "shop.items", source_rows=3, mirror_rows=5, extra=['["7"]', '["9"]'],
                        repeated=['["7"]'], ranges=1)
    assert '  extra in the mirror: key ["7"] (held by more than one row)' in check.lines()
    assert '  extra in the mirror: key ["9"]' in check.lines()
