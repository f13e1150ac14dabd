"""The SQL clock of the benchmarks: every statement a `dbt run` sends through dbt-spark's session
cursor, and the adapter's calls that write or read outside it (deletes by position, one-commit
batches, the kept checkpoint and newest-events views, rows read and appended in the driver), timed,
counted and recorded; run_recorded_call runs a recorded call again (benchmarks/apply/run.py's replay lever).
"""

from __future__ import annotations

import json
import re
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

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
        if sql.startswith(ROWS_IN_DRIVER):
            # A table's rows read in the driver for the append that follows: its time, no statement.
            self.recorded.append([sql, seconds])
            self.seconds += seconds
            return
        words = strip_comment(sql).lower().split(None, 2)
        if words and words[0] == "cdc_merge":
            kind = re.split(r"[\[{]", strip_comment(sql), maxsplit=1)[0].strip()  # an adapter call: "cdc_merge one-commit batch"
        else:
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

    from dbt.adapters.cdc_spark.session_cursor import KeptSettingsCursor

    cursor = session.Cursor
    if getattr(cursor, "_bench_wrapped", False):
        return SQL_CLOCK
    original_fetchall, original_fetchone = cursor.fetchall, cursor.fetchone

    from pyspark.sql import SparkSession

    original_sql = SparkSession.sql

    def timed_sql(self, sql_text, *args, **kwargs):
        started = time.perf_counter()
        try:
            return original_sql(self, sql_text, *args, **kwargs)
        finally:
            if getattr(_local, "in_cursor", False):
                SQL_CLOCK.add(sql_text, time.perf_counter() - started)

    def timed_execute(original_execute):
        """dbt-spark's cursor and the adapter's (session_cursor.py, which calls dbt-spark's for the first statement)."""
        def execute(self, sql, *parameters):
            outer = not getattr(_local, "in_cursor", False)
            _local.in_cursor = True
            try:
                return original_execute(self, sql, *parameters)
            finally:
                _local.in_cursor = not outer
                self._bench_sql = sql
        return execute

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

    from dbt.adapters.cdc_spark import kept_rows_in_driver

    original_read_rows, original_append = kept_rows_in_driver.read_rows, kept_rows_in_driver.append

    def timed_read_rows(*arguments, **options):
        """A small table read in the driver for the kept rows: its time, no statement (nothing to replay)."""
        started = time.perf_counter()
        try:
            return original_read_rows(*arguments, **options)
        finally:
            SQL_CLOCK.add(ROWS_IN_DRIVER + json.dumps(arguments[1:3]), time.perf_counter() - started)

    def timed_append(spark, statement):
        """The kept rows appended in the driver: a statement the replay lever runs again."""
        started = time.perf_counter()
        try:
            return original_append(spark, statement)
        finally:
            SQL_CLOCK.add(APPEND_IN_DRIVER + json.dumps(statement), time.perf_counter() - started)

    kept_rows_in_driver.read_rows, kept_rows_in_driver.append = timed_read_rows, timed_append
    SparkSession.sql = timed_sql
    position_deletes.delete_rows = timed_delete_rows
    position_deletes.commit_one_batch = timed_commit_one_batch
    CdcSparkAdapter.create_checkpoint_view = timed_checkpoint
    CdcSparkAdapter.create_newest_events_view = recorded_newest
    KeptSettingsCursor.execute = timed_execute(KeptSettingsCursor.execute)
    cursor.execute = timed_execute(cursor.execute)
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
# ... and a small table read in the driver (kept_rows_in_driver.read_rows): [table, columns] ...
ROWS_IN_DRIVER = "cdc_merge rows read in the driver "
# ... and rows appended there (kept_rows_in_driver.append): its statement.
APPEND_IN_DRIVER = "cdc_merge rows appended in the driver "


def run_recorded_call(spark, recorded: str) -> bool:
    """Runs a delete by position, a one-commit batch, a newest events view, a checkpoint view, or a
    table read or rows appended in the driver as recorded by the SQL clock again; False for a
    recorded SQL statement."""
    from dbt.adapters.cdc_spark import position_deletes

    if recorded.startswith(POSITION_DELETES):
        position_deletes.delete_rows(spark, *json.loads(recorded[len(POSITION_DELETES):]))
    elif recorded.startswith(ONE_COMMIT_BATCH):
        position_deletes.commit_one_batch(spark, *json.loads(recorded[len(ONE_COMMIT_BATCH):]), lambda: None)
    elif recorded.startswith(NEWEST_EVENTS):
        from dbt.adapters.cdc_spark.raw_ranges import RANGES

        view_name, table, after, through = json.loads(recorded[len(NEWEST_EVENTS):])
        RANGES.newest(spark.sparkContext.applicationId, table, after, through).createOrReplaceTempView(view_name)
    elif recorded.startswith(ROWS_IN_DRIVER):
        pass  # what it read is in the recorded append's constants
    elif recorded.startswith(APPEND_IN_DRIVER):
        from dbt.adapters.cdc_spark import kept_rows_in_driver

        kept_rows_in_driver.append(spark, json.loads(recorded[len(APPEND_IN_DRIVER):]))
    elif recorded.startswith(CHECKPOINT):
        view_name, sql = json.loads(recorded[len(CHECKPOINT):])
        spark.sql(sql).localCheckpoint(eager=True).createOrReplaceTempView(view_name)
    else:
        return False
    return True
