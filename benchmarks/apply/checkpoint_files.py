"""What writing the landing's streaming checkpoint through the local file system saves a cycle
(python_jobs/landing/io/session.py, local_file_system_conf: Spark's FileSystem-based checkpoint
manager over the file system that forks no process): the demo's cycles, landing included,
alternating with it and with Spark's default FileContext-based manager, whose local file system
forks `readlink` and `chmod` for each log file, in one process with one SparkSession; the cycle's
and its landing's medians, maintenance cycles left out.

    .venv/bin/python -m benchmarks.apply.checkpoint_files [--cycles 40]

Writes benchmarks/results/checkpoint_files.json and .log.
"""

from __future__ import annotations

import contextlib
import time
from typing import Callable

from benchmarks.common import demo_ab
from benchmarks.common.results import RESULTS_DIR

FILE_CONTEXT_MANAGER = "org.apache.spark.sql.execution.streaming.FileContextBasedCheckpointFileManager"


@contextlib.contextmanager
def file_context_manager():
    """The baseline: Spark's default manager, as in a session without the project's settings, set
    around the landing's streaming query (dbt's cursor sets the profile's settings before each
    statement; Spark reads this one as a streaming query starts)."""
    from python_jobs.landing import io

    landing_batches = io.run_available_batches

    def with_file_context(files, *args, **kwargs):
        with io.session_conf(files.sparkSession, {io.session.CHECKPOINT_FILE_MANAGER_SETTING: FILE_CONTEXT_MANAGER}):
            return landing_batches(files, *args, **kwargs)

    io.run_available_batches = with_file_context
    try:
        yield
    finally:
        io.run_available_batches = landing_batches


def landing_timed() -> Callable[[], dict[str, float]]:
    """The landing's seconds in each cycle (python_jobs.landing.land.run, which the landing model calls)."""
    from python_jobs.landing import land

    timed: list[float] = []
    run = land.run

    def run_timed(*args, **kwargs):
        started = time.perf_counter()
        try:
            return run(*args, **kwargs)
        finally:
            timed.append(time.perf_counter() - started)

    land.run = run_timed

    def landing() -> dict[str, float]:
        seconds = {"landing": sum(timed)}
        timed.clear()
        return seconds
    return landing


def main(argv: list[str] | None = None) -> int:
    return demo_ab.alternate(__doc__.split("\n\n")[0], argv, RESULTS_DIR / "checkpoint_files.json",
                             "file_system_manager", "file_context_manager", file_context_manager, landing_timed())


if __name__ == "__main__":
    raise SystemExit(main())
