"""Parse one line of `cdc-capture-postgres`'s record files: a wal2json record as the server
sent it, wrapped with its transaction's commit position, id, commit time and the change's order.

    {"commit_lsn":22711840,"tx_id":"771:22711840","ts_ms":1764424716050,"tx_order":3,
     "wal2json":{"action":"U","xid":771,"lsn":"0/15A8E10","timestamp":"...","schema":"shop",
                 "table":"accounts","columns":[...],"pk":[...]}}

The capture writes a record as it arrives, with no Python work on its columns, when its change
needs nothing the capture alone knows (python_jobs/capture/postgres_records.py); every other change
it writes as a Debezium event (python_jobs/capture/postgres_events.py). A line lands as the same
event as that change's Debezium event would: the same table, key, action and row images, seq
ordered by the commit position and then the change's own (docs/ordering.md), the transaction's id
and the change's order in it; the transaction's Debezium END record counts both kinds.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Mapping, Sequence

from python_jobs.formats import wal2json
from python_jobs.formats.records import (
    Members,
    ParsedLine,
    RejectedRecord,
    format_seq,
    non_negative_int,
    object_members,
    positive_ms,
    short,
)
from python_jobs.formats.transactions import order_in_transaction, transaction_id

# The members that tell such a line from a bare wal2json record (formats/detect.py).
WRAPPER_MEMBERS = ("commit_lsn", "wal2json")
# The changes the capture writes as records; any other action it writes as Debezium events.
RECORD_ACTIONS = ("I", "U", "D")


def parse_members(text: str, members: Members, key_columns: Mapping[str, Sequence[str]]) -> list[ParsedLine]:
    record = {name: value for name, (value, _, _) in members.items()}
    commit_lsn = non_negative_int(record, "commit_lsn", "")
    tx = {"tx_id": transaction_id(record.get("tx_id"), "tx_id"),
          "tx_order": order_in_transaction(record.get("tx_order"), "tx_order")}
    source_ts_ms = positive_ms(record.get("ts_ms"))
    _, _, start = members["wal2json"]
    inner = object_members(text, start, "field 'wal2json'")
    action = inner.get("action", (None,))[0]
    if action not in RECORD_ACTIONS:
        raise RejectedRecord(f"field 'wal2json.action' is {short(action)}; expected I, U or D")
    if "lsn" not in inner:
        raise RejectedRecord("field 'wal2json.lsn' is missing: the change's own position orders it")
    lsn = wal2json.parse_lsn(inner["lsn"][0])
    events = list(wal2json.parse_members(text, inner, key_columns))
    if len(events) != 1:
        # Each event has its own order in the transaction, which one line cannot give two.
        raise RejectedRecord("an update that changes the key: the capture writes it as Debezium events, not as a record")
    event = events[0]
    # Stream order: the commit's position first, then the change's own; streamed, so after any
    # snapshot row of the same position (phase 1). As the capture's Debezium update events, an
    # update keeps no image before (its old key is its key).
    return [replace(event, seq=format_seq(commit_lsn, lsn, 0, 1), source_ts_ms=source_ts_ms,
                    before_data=None if event.action == "update" else event.before_data, **tx)]
