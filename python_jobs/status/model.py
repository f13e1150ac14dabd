"""The pipeline's status at one moment (docs/observability.md): what /metrics, the status page,
/status.json and cdc-status show, whoever gathered it (registry.py in cdc-run, tables.py for cdc-status).
Plain data, no I/O; redact() is applied to every text that came from a process's output."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import asdict, dataclass, field
from typing import Any

# A password or token in a DSN, a URL, a command line or an environment assignment.
_SECRETS = [
    re.compile(r"(?i)\b(password|passwd|pwd|token|secret)\s*=\s*('[^']*'|\"[^\"]*\"|[^\s'\";,&]+)"),
    re.compile(r"(?i)\b(PGPASSWORD|MYSQL_PWD|DATABEND_PASSWORD)\s*=\s*\S+"),
    re.compile(r"(?i)(\"?(?:password|token|secret)\"?\s*:\s*)(\"[^\"]*\"|'[^']*')"),
    re.compile(r"(?i)(://[^:/@\s]+:)([^@\s]+)(@)"),
]


def redact(text: str | None) -> str | None:
    """text without the secrets a message or a command line may hold."""
    if text is None:
        return None
    text = _SECRETS[0].sub(lambda match: f"{match.group(1)}=***", text)
    text = _SECRETS[1].sub(lambda match: f"{match.group(1)}=***", text)
    text = _SECRETS[2].sub(lambda match: f"{match.group(1)}\"***\"", text)
    return _SECRETS[3].sub(lambda match: f"{match.group(1)}***{match.group(3)}", text)


class RedactingStream:
    """A text stream (a service's stdout or stderr, its log) that writes each line through redact():
    dbt's and the captures' own lines too, which the service does not compose."""

    def __init__(self, stream: Any) -> None:
        self._stream, self._partial = stream, ""

    def write(self, text: str) -> int:
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        if lines:
            self._stream.write("".join(f"{redact(line)}\n" for line in lines))
        return len(text)

    def flush(self) -> None:
        if self._partial:
            self._stream.write(redact(self._partial) or "")
            self._partial = ""
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@dataclass
class MirrorStatus:
    mirror: str
    source_table: str | None = None
    last_run_at: float | None = None  # epoch seconds of the last run's end
    last_run_seconds: float | None = None
    last_run_success: bool | None = None
    lag_seconds: float | None = None  # the newest applied source commit's age when its run ended
    events_read: int = 0
    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    skipped: int = 0
    failures: int = 0
    consistency_group: str | None = None
    cut_lag_seconds: float | None = None
    last_error: str | None = None
    # Keys of the mirror and its tombstones the process keeps in its key index (KeyIndex.java); None: not told.
    key_index_keys: int | None = None
    # From the tables (cdc-status): a model of the project with no runs row in the hours read, which the
    # tables cannot tell failing from not run (a failed run writes no row).
    no_run_in_time: bool = False

    @property
    def state(self) -> str:
        if self.last_run_success is False:
            return "failing"
        if self.no_run_in_time:
            return "no successful run in the time"
        if self.last_run_at is None:
            return "not run yet"
        return "ok"


@dataclass
class SnapshotProgress:
    table: str
    reason: str | None
    rows: int
    pages: int


@dataclass
class CaptureStatus:
    name: str
    source: str | None = None
    connected: bool | None = None
    updated_at: float | None = None  # epoch seconds of its status file
    changes: int = 0
    changes_per_second: float = 0.0
    position: str | None = None
    server_position: str | None = None
    behind_bytes: int | None = None
    newest_commit_ms: int | None = None
    snapshots: list[SnapshotProgress] = field(default_factory=list)
    lost: str | None = None
    running: bool | None = None  # under cdc-run: whether its process is alive
    warnings: list[str] = field(default_factory=list)  # what makes the mirrors miss changes until someone acts

    def seconds_since_last_event(self, now: float) -> float | None:
        return None if self.newest_commit_ms is None else max(0.0, now - self.newest_commit_ms / 1000)


@dataclass
class LandingStatus:
    landings: int = 0
    files: int = 0
    events: int = 0
    transaction_ends: int = 0  # of the events: transaction end markers (docs/raw_table.md), not row changes
    quarantined: int = 0
    bytes: int = 0
    last_at: float | None = None
    last_seconds: float | None = None  # the last landing's own time: its fixed cost grows with a long input folder
    input_files: int | None = None  # files in the input folder after the last landing, landed ones kept there included


@dataclass
class VerifyStatus:
    mirror: str
    checked_at: str | None
    clean: bool
    missing: int
    extra: int
    differing: int
    source_position: str | None = None
    # When cdc-verify --repair asked the capture to read the check's differing ranges again (UTC, as checked_at).
    repair_asked_at: str | None = None


@dataclass
class Failure:
    at: float
    where: str
    message: str
    what_to_do: str


@dataclass
class Sample:
    """One run's figures, for the last hour's plot."""

    at: float
    lag_seconds: float | None  # the largest of the mirrors'
    events: int  # events the run applied, all mirrors
    cycle_seconds: float


@dataclass
class StatusSnapshot:
    taken_at: float
    mirrors: list[MirrorStatus] = field(default_factory=list)
    captures: list[CaptureStatus] = field(default_factory=list)
    landing: LandingStatus = field(default_factory=LandingStatus)
    verify: list[VerifyStatus] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    history: list[Sample] = field(default_factory=list)
    cycles: int = 0
    cycle_failures: int = 0
    last_cycle_seconds: float | None = None
    service: str = "cdc-run"  # who gathered it: cdc-run, or cdc-status from the tables

    def groups(self) -> dict[str, float | None]:
        """Each consistency group's cut lag: the largest of its mirrors'. A run records the lag of the cut it
        applies, 0 when no transaction waits; while a mirror of the group fails, no cut is written and the
        others' runs said 0 while reads at the cut fell behind. Then the group's cut is at most where that
        mirror's last successful run left it: that run's lag plus the time since it ended."""
        lags: dict[str, float | None] = {}
        for mirror in self.mirrors:
            if mirror.consistency_group:
                stuck = (self.taken_at - mirror.last_run_at + (mirror.lag_seconds or 0.0)
                         if mirror.state == "failing" and mirror.last_run_at is not None else None)
                known = [lag for lag in (lags.get(mirror.consistency_group), mirror.cut_lag_seconds, stuck) if lag is not None]
                lags[mirror.consistency_group] = max(known) if known else None
        return lags

    def verdict(self) -> tuple[str, str]:
        """('ok' | 'warn' | 'bad', one line): what an operator must know first."""
        failing = [mirror.mirror for mirror in self.mirrors if mirror.state == "failing"]
        lost = [capture.name for capture in self.captures if capture.connected is False or capture.running is False]
        differing = [check.mirror for check in self.verify if not check.clean]
        warnings = [warning for capture in self.captures for warning in capture.warnings]
        not_run = [mirror.mirror for mirror in self.mirrors if mirror.no_run_in_time]
        if failing or lost:
            parts = ([f"{len(failing)} mirror(s) failing"] if failing else []) + (
                [f"{len(lost)} capture(s) not connected"] if lost else [])
            return "bad", "; ".join(parts)
        if differing or warnings or not_run:
            return "warn", "; ".join(
                ([f"{len(not_run)} mirror(s) with no successful run in the time (failing, or not run): "
                  + ", ".join(not_run)] if not_run else [])
                + ([f"{len(differing)} mirror(s) differ from their source in the last check"] if differing else [])
                + [f"capture: {warning}" for warning in warnings])
        if not self.mirrors:
            return "warn", "no run has finished yet"
        return "ok", f"all {len(self.mirrors)} mirrors applied their last run"

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "groups": self.groups()}


def utc_epoch(text: Any) -> float | None:
    """A UTC timestamp as the materialization writes it ('YYYY-MM-DD HH:MM:SS[.ffffff]')."""
    if not text:
        return None
    try:
        moment = dt.datetime.fromisoformat(str(text).strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)).timestamp()


def clock_text(epoch: float | None) -> str:
    if epoch is None:
        return "-"
    return dt.datetime.fromtimestamp(epoch, dt.timezone.utc).strftime("%H:%M:%S UTC")


def utc_text(written: str | None) -> str:
    """A time cdc-verify writes in UTC without a zone ("2026-12-06 13:53:19.874631"), to the second and named UTC."""
    return "-" if not written else f"{written.split('.')[0]} UTC"


def seconds_text(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f} s"


def number_text(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def what_to_do(message: str) -> str:
    """The advice shown beside a failure: the product's own errors say what to change; others get the general rule."""
    lowered = message.lower()
    if any(word in lowered for word in ("full-refresh", "set ", "change ", "remove ", "cdc-verify --repair")):
        return "do what the message says, then the next run goes on from where this one stopped"
    if "lock" in lowered and ("busy" in lowered or "held" in lowered):
        return "another run of the same mirror was running: this one did nothing; the next run goes on"
    if "connect" in lowered or "refused" in lowered or "timed out" in lowered:
        return "the database or the warehouse was unreachable: the next run retries; nothing is lost"
    return ("read the service's log for the whole error; the next run applies the same events again "
            "(a replay changes nothing)")
