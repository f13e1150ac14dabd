"""Timing, peak-memory sampling and SQL-time accounting for the benchmarks (no psutil).

- PeakMemory samples the resident set size (VmRSS in /proc) of the Spark driver JVM
  and of its Python UDF workers every 0.1 s; each phase reports its own peak.
- The SQL clock (sql_clock.py) splits a `dbt run` into time spent executing SQL in Spark and
  time spent in dbt itself (parsing, Jinja, adapter).
- format_table prints the report tables; tee_stdout copies what a benchmark prints to its log.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


def _rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    return 0


def _is_python(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/comm") as comm:
            return comm.read().startswith("python")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return False


def _children(pid: int) -> list[int]:
    """Direct and indirect Python child processes of pid (the JVM's Python UDF workers).

    The JVM also forks short-lived helpers (Hadoop's local file system runs commands); until
    they exec, such a child reports the whole JVM's RSS, which counted the JVM twice.
    """
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except FileNotFoundError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{parent}/task/{task}/children") as children:
                    kids = [int(k) for k in children.read().split()]
            except FileNotFoundError:
                continue
            found += kids
            todo += kids
    return [child for child in found if _is_python(child)]


class PeakMemory:
    """Background sampler of the JVM's RSS (the 'driver' in local mode) and its workers."""

    def __init__(self, jvm_pid: int, interval: float = 0.1):
        self.jvm_pid = jvm_pid
        self.interval = interval
        self._peak_jvm = 0
        self._peak_total = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="peak-memory")
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            jvm = _rss_bytes(self.jvm_pid)
            total = jvm + sum(_rss_bytes(child) for child in _children(self.jvm_pid))
            with self._lock:
                self._peak_jvm = max(self._peak_jvm, jvm)
                self._peak_total = max(self._peak_total, total)

    def reset(self) -> None:
        with self._lock:
            self._peak_jvm = _rss_bytes(self.jvm_pid)
            self._peak_total = self._peak_jvm

    def peaks(self) -> tuple[int, int]:
        """(JVM peak RSS, JVM + Python workers peak RSS) since the last reset, in bytes."""
        with self._lock:
            return self._peak_jvm, self._peak_total

    def stop(self) -> None:
        self._stop.set()


@dataclass
class Timer:
    seconds: float = 0.0


@contextmanager
def timed():
    timer = Timer()
    started = time.perf_counter()
    try:
        yield timer
    finally:
        timer.seconds = time.perf_counter() - started


def format_table(header: list[str], rows: list[list], right: frozenset[int] | set[int] = frozenset()) -> str:
    """A markdown table whose columns cannot run together, however long a value: every cell is padded
    to the widest value of its column and cells are separated by ' | '. Columns in `right` are
    right-aligned (numbers). None prints as an empty cell."""
    def text(cell) -> str:
        return "" if cell is None else str(cell).replace("|", "\\|").replace("\n", " ")

    cells = [[text(cell) for cell in header]] + [[text(cell) for cell in row] for row in rows]
    assert all(len(row) == len(header) for row in cells), "every row needs one cell per column"
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]

    def line(row: list[str]) -> str:
        return "| " + " | ".join(cell.rjust(w) if i in right else cell.ljust(w)
                                 for i, (cell, w) in enumerate(zip(row, widths))) + " |"

    rule = "|" + "|".join("-" * (w + 1) + ":" if i in right else "-" * (w + 2) for i, w in enumerate(widths)) + "|"
    return "\n".join([line(cells[0]), rule, *(line(row) for row in cells[1:])])


class _Tee:
    """sys.stdout that also writes to a file; everything else goes to the real stream."""

    def __init__(self, stream, file):
        self._stream, self._file = stream, file

    def write(self, text: str) -> int:
        self._file.write(text)
        return self._stream.write(text)

    def flush(self) -> None:
        self._file.flush()
        self._stream.flush()

    def __getattr__(self, name):
        return getattr(self._stream, name)


@contextmanager
def tee_stdout(path: Path | None):
    """Copy everything printed to stdout into path (the benchmark's log) while the block runs; no-op for None."""
    if path is None:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as file:
        stdout, sys.stdout = sys.stdout, _Tee(sys.stdout, file)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stdout = stdout
