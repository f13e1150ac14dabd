"""Rows in flight are not drift: a range check compares the source, held at one log position, with
the mirror once it has applied past that position, and leaves out the keys changed after it.

The source is read in one snapshot transaction (sources.py `pin_position`), which gives two raw
`seq` bounds (docs/ordering.md): `changed_from`, at or after which a change may be missing from the
snapshot, and `seen_before`, before which every change the snapshot shows was committed. The
mirror has applied everything the snapshot shows once the raw snapshot its last run consumed
(cdc_merge_offsets) holds an event of the source at or after `seen_before`: the captures land in
log order. A mirror that has consumed the whole raw table, or every event of its table the raw
table holds (a snapshot made since by maintenance's compaction adds none), counts as caught up too
(a quiet source lands nothing after the position). The keys with raw events at or after `changed_from` are in
flight: both sides' queries leave them out, so only what both sides must agree on is compared.

Caught up is not enough while the capture has written changes no landing has landed yet (a landing
every minute leaves the raw table quiet for most of it): given the capture's state file, whose
"following" entry names the newest commit of a change a following capture has written (a transaction
of tables it does not capture writes none, and lands nothing), the mirror counts as
quiet only once the raw table holds an event committed at or after it.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

SNAPSHOT = "__CDC_MERGE_SNAPSHOT__"
POSITION = "__CDC_MERGE_POSITION__"
COMMIT_MS = "__CDC_MERGE_COMMIT_MS__"
POLL_SECONDS = 0.5
# The session view of the keys in flight (macros/verify.sql spark__verify_in_flight_view_sql).
IN_FLIGHT_VIEW = "cdc_verify_in_flight"
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
    # table holds, which nothing newer reached for QUIET_SECONDS; 'behind': neither when the wait ended.
    reached: str
    waited_seconds: float

    @property
    def passed(self) -> bool:
        return self.reached == "passed"


class MirrorProgress:
    """How far a mirror has applied the raw log, from the statements of macros/verify.sql:
    refresh_sql (the tables as they are now, not as the session's catalog cached them),
    applied_offset_sql (its newest offset row), passed_sql (an event of the source's tables at or
    after a position in the raw table at a snapshot), newer_sql (an event of the mirror's table newer
    than the raw table held at a snapshot), raw_current_sql / mirror_current_sql (the
    current snapshots), in_flight_sql (the keys of the mirror's table changed at or after a position)."""

    def __init__(self, mirror: Mapping[str, Any], rows: Callable[[str], list[Sequence[Any]]],
                 first_seen: dict[str, float] | None = None, capture_state: str | Path | None = None) -> None:
        self.mirror, self._rows = mirror, rows
        self.capture_state = Path(capture_state) if capture_state else None
        # When each raw snapshot was first seen current, shared by the checks of one cdc-verify: a raw
        # table whose current snapshot stays for QUIET_SECONDS receives nothing (a quiet source).
        self.first_seen = first_seen if first_seen is not None else {}
        self._clock: Callable[[], float] = time.monotonic
        self.current_raw: str | None = None

    def _one(self, sql: str) -> Any:
        found = self._rows(sql)
        return found[0][0] if found else None

    def applied(self, position: SourcePosition) -> str | None:
        """'passed' when the mirror's last run applied an event of the source at or after the position,
        'caught_up' when it applied all the raw table holds (and nothing of the source after it landed yet)."""
        for statement in self.mirror.get("refresh_sql") or ():
            self._rows(statement)
        offset = self._one(self.mirror["applied_offset_sql"])
        if not offset:
            return None
        passed = self.mirror["passed_sql"].replace(SNAPSHOT, str(offset)).replace(POSITION, position.seen_before)
        if int(self._one(passed) or 0) > 0:
            return "passed"
        self.current_raw = str(self._one(self.mirror["raw_current_sql"]))
        self.first_seen.setdefault(self.current_raw, self._clock())
        if str(offset) == self.current_raw:
            return "caught_up"
        # A raw snapshot after the offset that brought no event of the table (maintenance's compaction).
        newer = self.mirror.get("newer_sql")
        if newer and int(self._one(newer.replace(SNAPSHOT, str(offset))) or 0) == 0:
            return "caught_up"
        return None

    def written_not_landed(self) -> bool:
        """Whether the capture (its state file) has written a commit the raw table holds no event of yet:
        files written but not landed, whose changes a quiet raw table does not show."""
        if self.capture_state is None or not self.mirror.get("landed_commit_sql"):
            return False
        try:
            newest = (json.loads(self.capture_state.read_text()).get("following") or {}).get("newest_commit_ms")
        except (OSError, ValueError):
            return False  # cdc-verify's --state was checked; a capture rewriting it is read at the next poll
        if not newest:
            return False
        return int(self._one(self.mirror["landed_commit_sql"].replace(COMMIT_MS, str(int(newest)))) or 0) == 0

    def settle(self, position: SourcePosition, wait_seconds: float,
               sleep: Callable[[float], None] = time.sleep) -> MirrorState:
        """Wait up to wait_seconds until the mirror has applied past position, or has applied all the
        raw table holds while nothing new reaches it for QUIET_SECONDS (a quiet source lands nothing
        after the position); then pin its current snapshot."""
        started = self._clock()
        while True:
            applied = self.applied(position)
            now = self._clock()
            quiet = (applied == "caught_up" and now - self.first_seen.get(self.current_raw, now) >= QUIET_SECONDS
                     and not self.written_not_landed())
            if applied == "passed" or quiet or now - started >= wait_seconds:
                break
            sleep(POLL_SECONDS)
        reached = "passed" if applied == "passed" else "quiet" if quiet else "behind"
        snapshot = self._one(self.mirror["mirror_current_sql"])
        return MirrorState(str(snapshot) if snapshot else None, reached, self._clock() - started)

    def in_flight(self, position: SourcePosition) -> tuple[list[str], str | None]:
        """The canonical keys (the mirror's _cdc_key) changed at or after the position, as landed by
        now; and, where the engine keeps them in a view of the session (Spark's cached table), its name."""
        statements = [statement.replace(POSITION, position.changed_from) for statement in self.mirror.get("in_flight_view_sql") or ()]
        if statements:
            for statement in statements:
                self._rows(statement)
            return sorted({str(key) for (key,) in self._rows(f"select key from {IN_FLIGHT_VIEW}")}), IN_FLIGHT_VIEW
        return sorted({str(key) for (key,) in self._rows(self.mirror["in_flight_sql"].replace(POSITION, position.changed_from))}), None
