"""What the cdc_merge macros may ask of a connection's adapter, in one place.

The macros ask `cdc_merge.capabilities()` (macros/materializations/cdc_merge/capabilities.sql),
which returns this object's fields for the two adapter plugins and all-false for a plain
dbt-spark or dbt-databend target, instead of testing the engine, the adapter type or the
connection method where they need an answer.
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
    # Locks, crash points and the large-batch gate run in this process (run_guard.sql): on Databend
    # the statements run on the server, and these guards do nothing.
    guards: bool

    def as_dict(self) -> Dict[str, bool]:
        return asdict(self)


def spark(in_process_session: bool) -> Capabilities:
    """cdc_spark: in dbt's own SparkSession (method session) or through a Thrift server."""
    return Capabilities(
        in_process_session=in_process_session,
        idle_state=in_process_session,
        keeps_offset_rows=in_process_session,
        keeps_run_rows=in_process_session,
        guards=True,
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
)
