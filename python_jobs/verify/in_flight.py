"""Rows in flight are not drift: a range check compares the source, held at one log position, with
the mirror once it has applied past that position, and leaves out the keys changed after it.

The source is read in one snapshot transaction (sources.py `pin_position`), which gives two raw
`seq` bounds (docs/ordering.md): `changed_from`, at or after which a change may be missing from the
snapshot, and `seen_before`, before which every change the snapshot shows was committed. The
mirror has applied everything the snapshot shows once the raw snapshot its last run consumed
(cdc_merge_offsets) holds an event of the source at or after `seen_before`: the captures land in
log order. A mirror that has consumed the whole raw table counts as caught up too (a quiet source
lands nothing after the position). The keys with raw events at or after `changed_from` are in
flight: both sides' queries leave them out, so only what both sides must agree on is compared.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

SNAPSHOT = "__CDC_MERGE_SNAPSHOT__"
POSITION = "__CDC_MERGE_POSITION__"
POLL_SECONDS = 0.5
# How long a mirror must stay caught up with the raw table, nothing newer landing, to count as past a position.
QUIET_SECONDS = 5.0


@dataclass(frozen=True)
class SourcePosition:
    changed_from: str
    seen_before: str
    # The position as the source names it (an LSN, a binlog file and offset), for the report.
    label: str


@dataclass
class MirrorState:
    snapshot: str | None  # the mirror's own snapshot the check reads (None: its current state)
    # 'passed': the mirror had applied past the source's position; 'quiet': it had applied all the raw
    # table holds, which nothing newer reached for QUIET_SECONDS; 'behind': neither, when the wait ended.
    reached: str
    waited_seconds: float

    @property
    def passed(self) -> bool:
        return self.reached == "passed"


class MirrorProgress:
    """How far a mirror has applied the raw log, from the statements of macros/verify.sql:
    applied_offset_sql (its newest offset row), passed_sql (an event of the source's tables at or
    after a position in the raw table at a snapshot), raw_current_sql / mirror_current_sql (the
    current snapshots), in_flight_sql (the keys of the mirror's table changed at or after a position)."""

    def __init__(self, mirror: Mapping[str, Any], rows: Callable[[str], list[Sequence[Any]]]) -> None:
        self.mirror, self._rows = mirror, rows

    def _one(self, sql: str) -> Any:
        found = self._rows(sql)
        return found[0][0] if found else None

    def applied(self, position: SourcePosition) -> str | None:
        """'passed' when the mirror's last run applied an event of the source at or after the position,
        'caught_up' when it applied all the raw table holds (and nothing of the source after it landed yet)."""
        offset = self._one(self.mirror["applied_offset_sql"])
        if not offset:
            return None
        passed = self.mirror["passed_sql"].replace(SNAPSHOT, str(offset)).replace(POSITION, position.seen_before)
        if int(self._one(passed) or 0) > 0:
            return "passed"
        return "caught_up" if str(offset) == str(self._one(self.mirror["raw_current_sql"])) else None

    def settle(self, position: SourcePosition, wait_seconds: float, passed_only: bool,
               clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> MirrorState:
        """Wait up to wait_seconds until the mirror has applied past position (or, unless passed_only,
        all the raw table holds), then pin its current snapshot. passed_only still takes a mirror that
        stays caught up QUIET_SECONDS: a quiet source lands nothing after the position."""
        started = clock()
        caught_up_since = None
        while True:
            applied = self.applied(position)
            now = clock()
            caught_up_since = (caught_up_since if caught_up_since is not None else now) if applied == "caught_up" else None
            quiet = caught_up_since is not None and now - caught_up_since >= QUIET_SECONDS
            if applied == "passed" or (applied == "caught_up" and (not passed_only or quiet)) or now - started >= wait_seconds:
                break
            sleep(POLL_SECONDS)
        reached = "passed" if applied == "passed" else "quiet" if applied == "caught_up" and quiet else "behind"
        if reached == "behind" and applied == "caught_up" and not passed_only:
            reached = "quiet"  # a first look: caught up with the raw table is enough to compare
        snapshot = self._one(self.mirror["mirror_current_sql"])
        return MirrorState(str(snapshot) if snapshot else None, reached, clock() - started)

    def in_flight(self, position: SourcePosition) -> list[str]:
        """The canonical keys (the mirror's _cdc_key) changed at or after the position, as landed by now."""
        return sorted({str(key) for (key,) in self._rows(self.mirror["in_flight_sql"].replace(POSITION, position.changed_from))})
