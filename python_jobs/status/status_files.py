"""The status other processes leave in files: the captures' status files (python_jobs/capture/
output.py write_status) as CaptureStatus, and cdc-verify's last report (target/cdc_verify.json) as
VerifyStatus. Read by cdc-run's status server at each request and by cdc-status."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from python_jobs.capture.output import status_path
from python_jobs.capture.snapshot_requests import refused_warnings
from python_jobs.status.model import CaptureStatus, SnapshotProgress, VerifyStatus, redact


def state_file(command: str) -> Path | None:
    """The --state a capture command names (its status file is beside it)."""
    argv = shlex.split(command)
    for index, argument in enumerate(argv):
        if argument == "--state" and index + 1 < len(argv):
            return Path(argv[index + 1])
        if argument.startswith("--state="):
            return Path(argument.split("=", 1)[1])
    return None


def capture_name(command: str) -> str:
    """How a capture is shown and labelled: its program and its state file, nothing from its DSN."""
    program = Path(shlex.split(command)[0]).name
    state = state_file(command)
    return f"{program} {state}" if state is not None else program


def read_capture_status(name: str, state: Path | None, running: bool | None = None) -> CaptureStatus:
    status = CaptureStatus(name, running=running)
    if state is None:
        return status
    status.warnings = refused_warnings(state)
    try:
        written: dict[str, Any] = json.loads(status_path(state).read_text())
    except (OSError, ValueError):
        return status  # none written yet (the first progress line comes a few seconds after the start)
    status.source = redact(written.get("source"))
    status.connected = written.get("connected")
    if running is None and written.get("stopped"):
        status.running = False  # it wrote so as it stopped (output.stopped_status)
    status.updated_at = written.get("updated_at")
    status.changes = int(written.get("changes") or 0)
    status.changes_per_second = float(written.get("changes_per_second") or 0)
    status.position = written.get("position")
    status.server_position = written.get("server_position")
    status.behind_bytes = written.get("behind_bytes")
    status.newest_commit_ms = written.get("newest_commit_ms")
    status.lost = redact(written.get("lost"))
    status.warnings = [str(warning) for warning in written.get("warnings") or ()] + status.warnings
    status.snapshots = [SnapshotProgress(entry.get("table") or "", entry.get("reason"), int(entry.get("rows") or 0),
                                         int(entry.get("pages") or 0)) for entry in written.get("snapshots") or ()]
    return status


def read_verify_report(path: Path) -> list[VerifyStatus]:
    """The mirrors' checks of cdc-verify's last report; [] when there is none."""
    try:
        report = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    return [VerifyStatus(check.get("mirror") or "", check.get("checked_at"), bool(check.get("clean")),
                         int(check.get("missing") or 0), int(check.get("extra") or 0), int(check.get("differing") or 0),
                         check.get("source_position"), check.get("repair_asked_at")) for check in report.get("checks") or ()]
