"""How far the mirrors of a consistency group may apply in one run: whole source transactions only.

The group's scan (macros/materializations/cdc_merge/consistency.sql) reads the raw snapshots of
the group's window, after its tail start, and gives one row per transaction, table and raw
snapshot: the transaction's distinct events there, and its end marker where one landed
(python_jobs/formats/transactions.py). From those rows this module decides:

- which transactions are whole: the marker landed, and as many distinct events as it counts (per
  table where it lists them); a marker without a count (wal2json, Maxwell) closes its
  transaction by itself, as those formats write it after the transaction's events;
- the horizon: markers in their order (the source's commit order, as the marker stream delivers
  them); every transaction up to the first one that is not whole is applied. A transaction whose
  marker has not landed committed after every landed marker, so it does not hold the horizon back;
- what is deferred: every transaction of the window beyond the horizon (not whole, after a
  transaction that is not whole, or without its marker yet). The mirrors skip their events;
- the next tail start: the raw snapshot right before the first one that holds a deferred
  transaction. The mirrors' offsets go there, so the next run reads the deferred transactions
  again, whole. Applied transactions with events or markers after it are remembered as settled:
  the next window sees only part of them and must not take them for open ones.

Events without a transaction id are applied as they come (formats that do not tell).
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence


@dataclass(frozen=True)
class ScanRow:
    """One row of the group's transaction scan."""

    tx_id: str
    table_name: str
    snapshot_id: str
    events: int
    marker_seq: Optional[str] = None
    marker_events: Optional[int] = None
    marker_tables: Optional[str] = None
    # The newest source commit time of the rows ('YYYY-MM-DD HH:MM:SS[.f]'), when known.
    source_ts: Optional[str] = None


@dataclass(frozen=True)
class Horizon:
    """What the group's mirrors apply in this run, and where the next run starts."""

    through: Optional[str]
    cut_seq: Optional[str]
    deferred: tuple = ()
    tail_start: Optional[str] = None
    # Applied transactions with events or a marker after tail_start: the next window sees only part
    # of them, and must not take them for open ones.
    settled: tuple = ()
    applied_transactions: int = 0
    # The cut's lag: the newest source commit among the window's transactions minus the newest
    # among those applied (0 when none waits); None when the source gives no commit times.
    cut_source_ts: Optional[str] = None
    lag_seconds: Optional[float] = None

    def as_dict(self) -> dict:
        return {"through": self.through, "cut_seq": self.cut_seq, "deferred": list(self.deferred),
                "tail_start": self.tail_start, "settled": list(self.settled),
                "applied_transactions": self.applied_transactions, "cut_source_ts": self.cut_source_ts,
                "lag_seconds": self.lag_seconds}


@dataclass
class _Transaction:
    events_by_table: dict = field(default_factory=dict)
    snapshots: set = field(default_factory=set)
    marker_seq: Optional[str] = None
    marker_events: Optional[int] = None
    marker_tables: Optional[dict] = None
    source_ts: Optional[str] = None

    def whole(self) -> bool:
        if self.marker_seq is None:
            return False
        if self.marker_tables:
            return all(self.events_by_table.get(table, 0) >= count for table, count in self.marker_tables.items())
        if self.marker_events is not None:
            return sum(self.events_by_table.values()) >= self.marker_events
        return True


def decide(window: Sequence[str], tail_start: Optional[str], previous_cut_seq: Optional[str],
           rows: Sequence[ScanRow], settled: Sequence[str] = (), previous_cut_source_ts: Optional[str] = None) -> Horizon:
    """window: the raw snapshots after tail_start through the newest, oldest first; settled: the
    previous horizon's settled transactions; previous_cut_source_ts: the latest cut's, which a cut
    applying no new transaction (a --full-refresh with nothing new) keeps."""
    transactions = _transactions(rows)
    settled_before = set(settled)
    markers = sorted((tx.marker_seq, tx_id) for tx_id, tx in transactions.items() if tx.marker_seq is not None)
    cut_seq, applied = previous_cut_seq, set(settled_before & set(transactions))
    for seq, tx_id in markers:
        if tx_id not in settled_before and not transactions[tx_id].whole():
            break
        cut_seq = seq if cut_seq is None or seq > cut_seq else cut_seq
        applied.add(tx_id)
    deferred = tuple(sorted(tx_id for tx_id in transactions if tx_id not in applied))
    index = {snapshot: position for position, snapshot in enumerate(window)}
    spans = {tx_id: [index[s] for s in tx.snapshots if s in index] for tx_id, tx in transactions.items()}
    # The tail starts right before the first snapshot holding a deferred transaction.
    first_deferred = min((min(spans[tx_id]) for tx_id in deferred if spans[tx_id]), default=len(window))
    last_settled = first_deferred - 1
    if last_settled < 0:
        next_tail, next_settled = tail_start, settled_before | applied
    else:
        next_tail = window[last_settled]
        next_settled = {tx_id for tx_id in applied if any(position > last_settled for position in spans[tx_id])}
    cut_source_ts = max((transactions[tx_id].source_ts for tx_id in applied if transactions[tx_id].source_ts),
                        key=_instant, default=previous_cut_source_ts)
    newest_source_ts = max((tx.source_ts for tx in transactions.values() if tx.source_ts), key=_instant, default=None)
    return Horizon(
        through=window[-1] if window else tail_start,
        cut_seq=cut_seq,
        deferred=deferred,
        tail_start=next_tail,
        settled=tuple(sorted(next_settled)),
        applied_transactions=len(applied),
        cut_source_ts=cut_source_ts,
        lag_seconds=_seconds_between(cut_source_ts, newest_source_ts) if deferred else (0.0 if transactions or cut_source_ts else None),
    )


def _instant(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text)


def _seconds_between(older: Optional[str], newer: Optional[str]) -> Optional[float]:
    if older is None or newer is None:
        return None
    return max(0.0, (_instant(newer) - _instant(older)).total_seconds())


def offset_after_chunk(pending: Sequence[str], tail_start: Optional[str], through: str) -> Optional[str]:
    """A group's mirror's offset once a chunk through `through` is applied: never past the tail start,
    so that a run that dies between chunks still reads the deferred transactions again.
    pending: the raw snapshots the mirror reads in this run, oldest first."""
    tail = pending.index(tail_start) if tail_start in pending else -1
    return through if pending.index(through) <= tail else tail_start


def _transactions(rows: Sequence[ScanRow]) -> dict:
    transactions: dict = {}
    for row in rows:
        tx = transactions.setdefault(row.tx_id, _Transaction())
        tx.snapshots.add(row.snapshot_id)
        if row.source_ts is not None and (tx.source_ts is None or _instant(row.source_ts) > _instant(tx.source_ts)):
            tx.source_ts = row.source_ts
        if row.marker_seq is not None:
            tx.marker_seq = max(tx.marker_seq or "", row.marker_seq)
            tx.marker_events = row.marker_events if row.marker_events is not None else tx.marker_events
            tables = json.loads(row.marker_tables).get("tables") if row.marker_tables else None
            tx.marker_tables = tables if tables else tx.marker_tables
        else:
            tx.events_by_table[row.table_name] = tx.events_by_table.get(row.table_name, 0) + int(row.events)
    return transactions


def scan_rows(rows: Sequence[Mapping[str, Any]]) -> list:
    """The scan's result rows (agate rows or dicts) as ScanRow; '' and -1 stand for null."""
    def text(value: Any) -> Optional[str]:
        return None if value is None or value == "" else str(value)

    def count(value: Any) -> Optional[int]:
        return None if value is None or value == "" or int(value) < 0 else int(value)

    return [
        ScanRow(
            tx_id=str(row["tx_id"]), table_name=str(row["table_name"]), snapshot_id=str(row["snapshot_id"]),
            events=int(row["events"] or 0), marker_seq=text(row["marker_seq"]),
            marker_events=count(row["marker_events"]), marker_tables=text(row["marker_tables"]),
            source_ts=text(row["source_ts"]) if "source_ts" in row.keys() else None,
        )
        for row in rows
    ]
