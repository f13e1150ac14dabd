"""What the cdc_merge macros may ask of a connection's adapter, in one place.

The macros ask `cdc_merge.capabilities()` (macros/materializations/cdc_merge/capabilities.sql),
which returns this object's fields, instead of testing the engine, the adapter type or the
connection method where they need an answer (docs/architecture.md, "One engine switch").
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Dict


@dataclass(frozen=True)
class Capabilities:
    # dbt's SparkSession runs in this process: Iceberg metadata is read in the JVM, without a statement.
    in_process_session: bool
    # The idle check's facts (offsets, raw snapshot, the mirrors' metadata) are read once per invocation.
    idle_state: bool
    # A run's last offset row is kept and written with the invocation's other mirrors' (kept_rows.py).
    keeps_offset_rows: bool
    # A run's cdc_merge_runs row is kept and written with the invocation's other mirrors'.
    keeps_run_rows: bool
    # Crash points, the large-batch gate and the raw table's and shared tables' guards run in this
    # process (run_guard.sql): on Databend the statements run on the server, and these do nothing.
    guards: bool
    # One process applies (or maintains) a mirror or history at a time: its lock (run_guard.sql), an OS
    # file lock of this machine, or on a Thrift server with a JDBC catalog the catalog database's.
    mirror_locks: bool
    # The cdc_spark adapter's helpers on Iceberg tables and Spark views (snapshot log, newest offsets,
    # table metadata, the one pass over a range, appended rows): each reads in dbt's SparkSession
    # where it is in this process and answers None on a Thrift server, where the macro runs its query.
    iceberg_helpers: bool
    # A Databend stream may stand in for the raw snapshots (change_source='stream').
    change_streams: bool
    # A stored row an event changes is deleted and inserted anew, not updated (write_plan.py): a
    # delete-only MERGE reads only the key and seq of the changes (BENCHMARKS.md, "Levers tried").
    # Not measured on Databend, which keeps the UPDATE MERGE.
    replaces_rows: bool
    # The engine's SQL reads a keyword (order, rows, range) as a column's name where the macros write
    # one unquoted; Databend does not, and refuses such a model column by name (column_names.py).
    keywords_as_names: bool

    def as_dict(self) -> Dict[str, bool]:
        return asdict(self)


def spark(in_process_session: bool) -> Capabilities:
    """cdc_spark: in dbt's own SparkSession (method session) or through a Thrift server. Through a
    Thrift server the kept rows are written by INSERTs (kept_rows.sql) instead of in the driver: one
    per table for the invocation instead of one per mirror."""
    return Capabilities(
        in_process_session=in_process_session,
        idle_state=in_process_session,
        keeps_offset_rows=True,
        keeps_run_rows=True,
        guards=True,
        mirror_locks=True,
        iceberg_helpers=True,
        change_streams=False,
        replaces_rows=True,
        keywords_as_names=True,
    )


# cdc_databend: the idle facts come from Databend's system tables and fuse functions, read once per
# invocation for all its mirrors (cdc_databend/mirror_facts.py); idle mirrors' runs rows are kept.
# Its offset rows are written by each mirror: no lock in this process holds a mirror until they are.
DATABEND = Capabilities(
    in_process_session=False,
    idle_state=True,
    keeps_offset_rows=False,
    keeps_run_rows=True,
    guards=False,
    mirror_locks=True,
    iceberg_helpers=False,
    change_streams=True,
    replaces_rows=False,
    keywords_as_names=False,
)
