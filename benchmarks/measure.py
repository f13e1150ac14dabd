"""Timing, peak-memory sampling and SQL-time accounting for the benchmarks (no psutil).

- PeakMemory samples the resident set size (VmRSS in /proc) of the Spark driver JVM
  and of its Python UDF workers every 0.1 s; each phase reports its own peak.
- SqlClock wraps dbt-spark's session cursor so a `dbt run` is split into time spent
  executing SQL in Spark and time spent in dbt itself (parsing, Jinja, adapter).
- format_table prints the report tables; tee_stdout copies what a benchmark prints to its log.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
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
class SqlClock:
    """Seconds spent inside dbt-spark's cursor executing and fetching SQL, per statement kind."""

    seconds: float = 0.0
    statements: int = 0
    by_kind: dict[str, list[float]] = field(default_factory=dict)
    recorded: list[list] = field(default_factory=list)
    active: bool = False

    def add(self, sql: str, seconds: float, new_statement: bool = True) -> None:
        if not self.active:
            return
        if sql.startswith(NEWEST_EVENTS):
            # Kept for the replay, not counted: no statement, the view of rows the driver holds.
            self.recorded.append([sql, seconds])
            return
        words = strip_comment(sql).lower().split(None, 2)
        kind = " ".join(words[:2]) if words and words[0] in ("show", "describe", "create", "drop") else (words[0] if words else "?")
        self.seconds += seconds
        self.statements += new_statement
        if new_statement:
            self.recorded.append([sql, seconds])
        elif self.recorded:
            self.recorded[-1][1] += seconds
        entry = self.by_kind.setdefault(kind, [0, 0.0])
        entry[0] += new_statement
        entry[1] += seconds

    @contextmanager
    def measuring(self):
        self.seconds, self.statements, self.by_kind, self.recorded, self.active = 0.0, 0, {}, [], True
        try:
            yield self
        finally:
            self.active = False


SQL_CLOCK = SqlClock()


def strip_comment(sql: str) -> str:
    """The statement without dbt's leading /* {"app": "dbt", ...} */ comment."""
    text = sql.strip()
    while text.startswith("/*") and "*/" in text:
        text = text[text.index("*/") + 2 :].strip()
    return text


def install_sql_clock() -> SqlClock:
    """Time every statement dbt-spark's session cursor runs: execute (eager for commands) + fetch."""
    from dbt.adapters.spark import session

    cursor = session.Cursor
    if getattr(cursor, "_bench_wrapped", False):
        return SQL_CLOCK
    original_execute, original_fetchall, original_fetchone = cursor.execute, cursor.fetchall, cursor.fetchone

    from pyspark.sql import SparkSession

    original_sql = SparkSession.sql

    def timed_sql(self, sql_text, *args, **kwargs):
        started = time.perf_counter()
        try:
            return original_sql(self, sql_text, *args, **kwargs)
        finally:
            if getattr(_local, "in_cursor", False):
                SQL_CLOCK.add(sql_text, time.perf_counter() - started)

    def execute(self, sql, *parameters):
        _local.in_cursor = True
        try:
            return original_execute(self, sql, *parameters)
        finally:
            _local.in_cursor = False
            self._bench_sql = sql

    def fetch(original):
        def wrapped(self):
            fresh = getattr(self, "_rows", None) is None
            started = time.perf_counter()
            try:
                return original(self)
            finally:
                if fresh:
                    SQL_CLOCK.add(getattr(self, "_bench_sql", "fetch"), time.perf_counter() - started, new_statement=False)
        return wrapped

    from dbt.adapters.cdc_spark import position_deletes

    original_delete_rows = position_deletes.delete_rows

    def timed_delete_rows(spark, *arguments):
        """The apply's deletes by position run Spark jobs outside the cursor: recorded as a statement
        that the replay lever runs again (run_recorded_call)."""
        started = time.perf_counter()
        try:
            return original_delete_rows(spark, *arguments)
        finally:
            SQL_CLOCK.add(POSITION_DELETES + json.dumps(arguments), time.perf_counter() - started)

    original_commit_one_batch = position_deletes.commit_one_batch

    def timed_commit_one_batch(spark, *arguments):
        """A small batch's deletes by position and new rows in one commit, written outside the cursor:
        recorded as a statement that the replay lever runs again (all but its crash point, the last)."""
        started = time.perf_counter()
        try:
            return original_commit_one_batch(spark, *arguments)
        finally:
            SQL_CLOCK.add(ONE_COMMIT_BATCH + json.dumps(arguments[:-1]), time.perf_counter() - started)

    from dbt.adapters.cdc_spark.impl import CdcSparkAdapter

    original_checkpoint = CdcSparkAdapter.create_checkpoint_view

    def timed_checkpoint(self, view_name, sql, *observed, **kept):
        """The classified batch, kept as a checkpoint by the adapter: recorded as a statement too (its
        observed counts are not replayed)."""
        started = time.perf_counter()
        try:
            return original_checkpoint(self, view_name, sql, *observed, **kept)
        finally:
            SQL_CLOCK.add(CHECKPOINT + json.dumps([view_name, sql]), time.perf_counter() - started)

    original_newest = CdcSparkAdapter.create_newest_events_view

    def recorded_newest(self, view_name, table, after_snapshot, through_snapshot, *arguments):
        """A range's events deduplicated once for all its mirrors, as a view the classification reads
        and the run drops at its end: recorded, so that the replay lever makes the view again."""
        created = original_newest(self, view_name, table, after_snapshot, through_snapshot, *arguments)
        if created:
            SQL_CLOCK.add(NEWEST_EVENTS + json.dumps([view_name, table, after_snapshot, through_snapshot]), 0.0)
        return created

    SparkSession.sql = timed_sql
    position_deletes.delete_rows = timed_delete_rows
    position_deletes.commit_one_batch = timed_commit_one_batch
    CdcSparkAdapter.create_checkpoint_view = timed_checkpoint
    CdcSparkAdapter.create_newest_events_view = recorded_newest
    cursor.execute = execute
    cursor.fetchall = fetch(original_fetchall)
    cursor.fetchone = fetch(original_fetchone)
    cursor._bench_wrapped = True
    return SQL_CLOCK


_local = threading.local()
# How a recorded delete by position starts; the rest is the JSON of its arguments after spark.
POSITION_DELETES = "cdc_merge delete rows by position "
# ... and a query the adapter kept as a checkpoint view: the JSON of [view name, query].
CHECKPOINT = "cdc_merge checkpoint view "
# ... and a small batch committed at once (position_deletes.commit_one_batch): its arguments after spark.
ONE_COMMIT_BATCH = "cdc_merge one-commit batch "
# ... and the view of a range's newest events per key (shared_dedup.py): [view name, table, after, through].
NEWEST_EVENTS = "cdc_merge newest events view "


def run_recorded_call(spark, recorded: str) -> bool:
    """Runs a delete by position, a one-commit batch, a newest events view or a checkpoint view as
    recorded by the SQL clock again; False for a recorded SQL statement."""
    from dbt.adapters.cdc_spark import position_deletes

    if recorded.startswith(POSITION_DELETES):
        position_deletes.delete_rows(spark, *json.loads(recorded[len(POSITION_DELETES):]))
    elif recorded.startswith(ONE_COMMIT_BATCH):
        position_deletes.commit_one_batch(spark, *json.loads(recorded[len(ONE_COMMIT_BATCH):]), lambda: None)
    elif recorded.startswith(NEWEST_EVENTS):
        from dbt.adapters.cdc_spark.raw_ranges import RANGES

        view_name, table, after, through = json.loads(recorded[len(NEWEST_EVENTS):])
        RANGES.newest(spark.sparkContext.applicationId, table, after, through).createOrReplaceTempView(view_name)
    elif recorded.startswith(CHECKPOINT):
        view_name, sql = json.loads(recorded[len(CHECKPOINT):])
        spark.sql(sql).localCheckpoint(eager=True).createOrReplaceTempView(view_name)
    else:
        return False
    return True


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
