"""Named crash points: a run that is told to die at one of them dies there as if the machine
lost power (SIGKILL of this process and of its Spark JVM), so the reliability suite
(reliability/crashes.py, tests/test_crash_points.py) can check that the next run heals.

    CDC_MERGE_CRASH_AT=apply-before-offset dbt run     # dies after a mirror's writes, before its offset

The points (RELIABILITY.md lists them): landing-raw-write, landing-before-checkpoint,
apply-before-publish, apply-before-offset, apply-before-run-rows, full-refresh-before-offset,
rebuild-before-swap, rebuild-after-swap, table-drop (in the JVM: CdcMergeHadoopCatalog,
CrashPoints.java), maintenance, capture-before-confirm.
`<point>@N` dies the N-th time the point is reached in this process (default the first).
Unset, every check is one dictionary lookup.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

CRASH_AT = "CDC_MERGE_CRASH_AT"
# Reached by dbt run and cdc-run (reliability/crashes.py kills each of them at every one).
PIPELINE_POINTS = (
    "landing-raw-write",
    "landing-before-checkpoint",
    "apply-before-publish",
    "apply-before-offset",
    "apply-before-run-rows",
    "full-refresh-before-offset",
    "rebuild-before-swap",
    "rebuild-after-swap",
    "table-drop",
    "maintenance",
)
# Reached by the capture commands (tests/test_capture_faults.py).
CAPTURE_POINTS = ("capture-before-confirm",)
_reached: dict[str, int] = {}
_lock = threading.Lock()


def armed(point: str) -> bool:
    """Whether this process is told to die at point the time it is reached now (counts the visit)."""
    wanted = os.environ.get(CRASH_AT)
    if not wanted:
        return False
    name, _, nth = wanted.partition("@")
    if name != point:
        return False
    with _lock:
        _reached[point] = _reached.get(point, 0) + 1
        return _reached[point] == (int(nth) if nth else 1)


def die(point: str) -> None:
    """SIGKILL the Spark JVM this process started (if any), then this process: nothing runs after."""
    print(f"cdc_merge: crash point {point} reached; killing the process ({CRASH_AT})", flush=True)
    jvm = _spark_jvm_pid()
    if jvm is not None:
        try:
            os.kill(jvm, signal.SIGKILL)
        except ProcessLookupError:
            pass
    os.kill(os.getpid(), signal.SIGKILL)


def crash_point(point: str) -> None:
    """Die here when told to (CDC_MERGE_CRASH_AT); otherwise nothing."""
    if armed(point):
        die(point)


def crash_when_files_appear(point: str, folder: Path) -> threading.Event | None:
    """When told to die at point: watch folder, and die as soon as a file appears in it that was not
    there before (a data file the write in progress is writing, before its commit). Returns an Event
    to set when the write is over (the watcher then stops); None when not told to."""
    if not armed(point):
        return None
    before = _files_under(folder)
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            if _files_under(folder) - before:
                die(point)
            time.sleep(0.002)

    threading.Thread(target=watch, name=f"crash point {point}", daemon=True).start()
    return done


def _files_under(folder: Path) -> set[str]:
    return {str(path) for path in folder.rglob("*") if path.is_file()} if folder.is_dir() else set()


def _spark_jvm_pid() -> int | None:
    try:
        from pyspark import SparkContext
    except ImportError:
        return None
    gateway = getattr(SparkContext, "_gateway", None)
    proc = getattr(gateway, "proc", None) if gateway is not None else None
    return proc.pid if proc is not None else None
