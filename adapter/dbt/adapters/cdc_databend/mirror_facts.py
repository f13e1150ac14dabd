"""What Databend's idle check needs of the tables of one invocation, read once for all its mirrors
(macros/materializations/cdc_merge/idle.sql; on Spark the same comes from Iceberg's metadata in the
JVM, cdc_spark/table_metadata.py).

Per invocation, whatever the number of mirrors: one query of system.tables (which tables exist,
their engine, comment, blocks and size; the comment holds the model checksum, idle.sql) and one
of fuse_snapshot for every mirror and raw table found (a table's current snapshot is the one no
other names as its predecessor; the others' ages count for maintenance). Blocks are read with
fuse_block only for a mirror of at least SMALL_BLOCK_BYTES, because below that every block is
small and system.tables' block count is the count of small blocks.

Safe when stale, as run_state.py is: facts read at the invocation's first mirror can only make a
later mirror skip events that landed since, as a run that started a moment earlier would.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

# Blocks under this many bytes are small (macros/maintenance/table_state.sql, databend__).
SMALL_BLOCK_BYTES = 52_428_800
CHECKSUM_PREFIX = "cdc-merge.model-sql-md5="

Query = Callable[[str], List[Dict[str, Any]]]


@dataclass(frozen=True)
class TableFacts:
    engine: str
    comment: str
    blocks: int
    # (snapshot_id, previous_snapshot_id, age in seconds) of each snapshot; empty before the first write.
    snapshots: Tuple[Tuple[str, Optional[str], float], ...] = ()
    # Sizes of the blocks, read only where some may not be small (see the module's docstring).
    block_sizes: Optional[Tuple[int, ...]] = None

    @property
    def current_snapshot(self) -> Optional[str]:
        predecessors = {previous for _, previous, _ in self.snapshots if previous}
        current = [snapshot_id for snapshot_id, _, _ in self.snapshots if snapshot_id not in predecessors]
        return current[0] if len(current) == 1 else None

    @property
    def model_checksum(self) -> Optional[str]:
        return self.comment[len(CHECKSUM_PREFIX):] if self.comment.startswith(CHECKSUM_PREFIX) else None

    def mirror_state(self) -> Optional[Dict[str, Any]]:
        """The numbers of table_maintenance_state and the model checksum, as
        table_metadata.mirror_metadata gives them on Spark; None for a view or a table never written."""
        current = self.current_snapshot
        if self.engine.upper() != "FUSE" or current is None:
            return None
        small = self.blocks if self.block_sizes is None else sum(size < SMALL_BLOCK_BYTES for size in self.block_sizes)
        return {
            "small_data_files": small,
            "data_files": self.blocks,
            "delete_files": 0,  # Databend rewrites blocks on delete
            "older_snapshot_ages_seconds": [age for snapshot_id, _, age in self.snapshots if snapshot_id != current],
            "model_checksum": self.model_checksum,
        }


def _quoted(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def tables_sql(schemas: Iterable[str]) -> str:
    names = ", ".join(_quoted(schema) for schema in sorted(set(schemas)))
    return ("select database, name, engine, comment, number_of_blocks, data_size "
            f"from system.tables where database in ({names})")


def _split(table: str) -> Tuple[str, str]:
    schema, _, name = table.partition(".")
    return schema, name


def snapshots_sql(tables: Sequence[str]) -> str:
    """One query over the fuse_snapshot of every table (Databend has no table of all tables' snapshots)."""
    return " union all ".join(
        f"select {_quoted(table)} as table_name, snapshot_id, previous_snapshot_id,"
        " to_unix_timestamp(now()) - to_unix_timestamp(timestamp) as age_seconds"
        f" from fuse_snapshot({_quoted(_split(table)[0])}, {_quoted(_split(table)[1])})"
        for table in tables
    )


def blocks_sql(tables: Sequence[str]) -> str:
    return " union all ".join(
        f"select {_quoted(table)} as table_name, block_size"
        f" from fuse_block({_quoted(_split(table)[0])}, {_quoted(_split(table)[1])})"
        for table in tables
    )


def _text(value: Any) -> Optional[str]:
    return None if value is None or value == "" else str(value)


def read_facts(tables: Iterable[str], query: Query, listed_only: Iterable[str] = ()) -> Dict[str, Optional[TableFacts]]:
    """Facts of each table ('schema.name', lower case); None for a table that does not exist.
    listed_only: tables whose existence is enough (no snapshots read). At most three queries,
    whatever the number of tables."""
    bare = {table.lower() for table in listed_only}
    wanted = sorted({table.lower() for table in tables} | bare)
    if not wanted:
        return {}
    listed: Dict[str, Dict[str, Any]] = {
        f"{row['database']}.{row['name']}".lower(): row for row in query(tables_sql(_split(t)[0] for t in wanted))
    }
    found = [table for table in wanted
             if table in listed and table not in bare and str(listed[table]["engine"]).upper() == "FUSE"]
    snapshots: Dict[str, List[Tuple[str, Optional[str], float]]] = {table: [] for table in found}
    for row in query(snapshots_sql(found)) if found else []:
        snapshots[row["table_name"]].append((str(row["snapshot_id"]), _text(row["previous_snapshot_id"]), float(row["age_seconds"])))
    large = [table for table in found if int(listed[table]["data_size"] or 0) >= SMALL_BLOCK_BYTES]
    sizes: Dict[str, List[int]] = {table: [] for table in large}
    for row in query(blocks_sql(large)) if large else []:
        sizes[row["table_name"]].append(int(row["block_size"]))
    facts: Dict[str, Optional[TableFacts]] = {}
    for table in wanted:
        row = listed.get(table)
        facts[table] = None if row is None else TableFacts(
            engine=str(row["engine"]),
            comment=_text(row["comment"]) or "",
            blocks=int(row["number_of_blocks"] or 0),
            snapshots=tuple(snapshots.get(table, ())),
            block_sizes=tuple(sizes[table]) if table in sizes else None,
        )
    return facts


class InvocationFacts:
    """The facts of one invocation's tables: read for all its mirrors at the first question, and for
    a table not among them (another raw table) when it is asked about. Thread-safe (--threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._invocation_id: Optional[str] = None
        self._facts: Dict[str, Optional[TableFacts]] = {}

    def facts(self, invocation_id: str, table: str, invocation_tables: Callable[[], Iterable[str]],
              query: Query, listed_only: Iterable[str] = ()) -> Optional[TableFacts]:
        """invocation_tables: every table the invocation's mirrors will ask about, read on the first
        question; listed_only: tables whose existence is all that is asked (read_facts)."""
        table = table.lower()
        with self._lock:
            if invocation_id != self._invocation_id:
                self._invocation_id = invocation_id
                self._facts = read_facts({table, *invocation_tables()}, query, listed_only)
            elif table not in self._facts:
                self._facts.update(read_facts([table], query, listed_only))
            return self._facts.get(table)


def invocation_mirrors(selected: Iterable[str], nodes: Dict[str, Any]) -> List[str]:
    """'schema.alias' of the cdc_merge models this invocation runs."""
    mirrors = []
    for unique_id in selected:
        node = nodes.get(unique_id) or {}
        if node.get("config", {}).get("materialized") == "cdc_merge" and node.get("schema") and node.get("alias"):
            mirrors.append(f"{node['schema']}.{node['alias']}".lower())
    return mirrors
