"""cdc-run's status endpoint put together: the process's registry, the status files of the captures
it runs, and cdc-verify's last report in the project's target folder (docs/observability.md)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Sequence

from python_jobs.status.model import StatusSnapshot
from python_jobs.status.registry import REGISTRY
from python_jobs.status.server import StatusServer
from python_jobs.status.status_files import capture_name, read_capture_status, read_verify_report, state_file


def _option(dbt_args: Sequence[str], name: str) -> str | None:
    for index, argument in enumerate(dbt_args):
        if argument == name and index + 1 < len(dbt_args):
            return dbt_args[index + 1]
        if argument.startswith(name + "="):
            return argument.split("=", 1)[1]
    return None


def verify_report_path(dbt_args: Sequence[str]) -> Path:
    """Where cdc-verify writes its report for the project the runs use (check.REPORT_FILE)."""
    from python_jobs.verify.check import REPORT_FILE

    project = Path(_option(dbt_args, "--project-dir") or os.environ.get("DBT_PROJECT_DIR") or ".")
    target = _option(dbt_args, "--target-path") or os.environ.get("DBT_TARGET_PATH") or "target"
    return project / target / REPORT_FILE


def snapshot_of(captures: Sequence[Any], report: Path) -> Callable[[], StatusSnapshot]:
    """captures: scheduler.captures.RunningCapture (command, process)."""
    def snapshot() -> StatusSnapshot:
        statuses = [read_capture_status(capture_name(capture.command), state_file(capture.command),
                                        running=capture.process.poll() is None) for capture in captures]
        return REGISTRY.snapshot(statuses, read_verify_report(report))
    return snapshot


def start(host: str, port: int, captures: Sequence[Any], dbt_args: Sequence[str]) -> StatusServer:
    """The endpoint serving from now on; the registry records from now on."""
    REGISTRY.enabled = True
    server = StatusServer(snapshot_of(captures, verify_report_path(dbt_args)), host, port)
    server.start()
    return server
