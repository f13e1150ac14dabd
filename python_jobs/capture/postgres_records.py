"""The PostgreSQL capture's changes as the server sent them (streamed, or peeked by a one-shot
run): each wal2json record written with its transaction's commit position, id, commit time and the
change's order (python_jobs/formats/captured_wal2json.py), read no further than its first bytes, as
`pg_recvlogical` writes them.

A record is written so only when it lands as the very event its Debezium event would be
(postgres_events.change_events): an insert or a delete of a table whose columns the capture knows,
or an update whose new tuple names exactly the table's columns as the catalog has them now (no
unchanged TOAST value left out, which only the catalog can mark) and whose key is unchanged (its
old key's text is among the new tuple's). Any other transaction, and every transaction while an
online snapshot's page is open or a column addition is pending (which watch each change), is
decoded and written as Debezium events, as before.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

import orjson

from python_jobs.capture.output import TransactionOrder
from python_jobs.capture.postgres_events import Transaction, TransactionAssembler, change_events, wal2json_record
from python_jobs.formats.wal2json import parse_lsn

# A row change's first members as wal2json format-version 2 writes them with the capture's options
# (postgres_events.DECODING_OPTIONS, and the stream's include-xids); a name holding a quote or a
# backslash does not match, and its transaction is decoded.
_ROW_CHANGE_HEAD = re.compile(
    rb'\{"action":"([IUD])",(?:"xid":[0-9]+,)?"timestamp":"[^"\\]*","lsn":"([0-9A-F]{1,8})/([0-9A-F]{1,8})",'
    rb'"schema":"([^"\\]+)","table":"([^"\\]+)",'
)
# A column of a record's column list. In JSON text a quote inside a string is always escaped, so
# these patterns, and the member names below, only match the record's own structure.
_COLUMN_NAME = re.compile(rb'\{"name":"([^"\\]*)","type":')
_COLUMNS = b'"columns":['
_IDENTITY = b',"identity":['
_PK = b',"pk":['
_RECORD_PREFIX = b'{"action":"'
_ROW_ACTIONS = frozenset((b"I", b"U", b"D", b"T"))
# A record line's first member, and the member that holds the record (record_lines writes them).
_WRAPPED_PREFIX = b'{"commit_lsn":'
_WRAPPED_RECORD = b',"wal2json":'


def record_action(payload: bytes) -> str:
    """The action letter of a wal2json format-version 2 record, from its first bytes."""
    if payload.startswith(_RECORD_PREFIX) and payload[12:13] == b'"':
        return chr(payload[11])
    return str(wal2json_record(payload).get("action"))


class RecordAssembler:
    """The server's records, one at a time, into committed transactions of undecoded records; only
    a transaction's begin and commit, and logical messages (an online snapshot's watermarks), are
    decoded as they arrive."""

    def __init__(self) -> None:
        self.assembler = TransactionAssembler()
        # The logical messages of the open transaction, decoded; then of the one committed last.
        self.messages: list[dict] = []

    def add(self, lsn: int | str, payload: bytes, xid: int | None = None) -> Transaction | None:
        """The transaction this record commits, else None. lsn: the record's position (as text where
        the server gave it so, read only for a begin or commit); xid: its transaction's, where the
        record does not carry it."""
        current = self.assembler.current
        # A row change inside a transaction, the stream's most common message, by its action's byte alone.
        if current is not None and payload[11:12] in _ROW_ACTIONS and payload.startswith(_RECORD_PREFIX):
            current.records.append(payload)
            return None
        action = record_action(payload)
        if action in ("B", "C"):
            change = wal2json_record(payload)
            if action == "B":
                self.messages = []
            return self.assembler.add(parse_lsn(lsn) if isinstance(lsn, str) else lsn,
                                      int(change.get("xid") or xid or 0), change)
        current = self.assembler.current
        if current is not None:
            current.records.append(payload)
            if action == "M":
                current.messages += 1
                self.messages.append(wal2json_record(payload))
        return None


def peeked_transactions(rows: Iterable[tuple[str, int, str]]) -> Iterator[Transaction]:
    """Group pg_logical_slot_peek_changes rows (lsn, xid, wal2json v2 record) into transactions of
    undecoded records, as the stream's."""
    assembler = RecordAssembler()
    add = assembler.add
    for lsn, xid, data in rows:
        committed = add(lsn, data.encode(), xid)
        if committed is not None:
            yield committed


def decoded(transaction: Transaction) -> Transaction:
    """The transaction with its records decoded, for change_events."""
    if transaction.records and not transaction.changes:
        transaction.changes = [wal2json_record(payload) for payload in transaction.records]
    return transaction


def table_columns(catalog: Mapping[str, Sequence[str]]) -> dict[bytes, tuple[bytes, ...]]:
    """{b"schema.table": its column names in order, as UTF-8}, as record_lines compares them."""
    return {table.encode(): tuple(name.encode() for name in names) for table, names in catalog.items()}


def record_lines(transaction: Transaction, columns: Mapping[bytes, tuple[bytes, ...]]) -> tuple[list[bytes], int] | None:
    """The transaction's lines, its records wrapped and then its Debezium END record, and its first
    change's position; None when one of its records must be decoded (the module's doc says which)."""
    commit_lsn = transaction.commit_lsn
    tx_id = f"{transaction.xid}:{commit_lsn}"
    ts_ms = b"null" if transaction.commit_ts_ms is None else b"%d" % transaction.commit_ts_ms
    head = b'{"commit_lsn":%d,"tx_id":"%s","ts_ms":%s,"tx_order":' % (commit_lsn, tx_id.encode(), ts_ms)
    per_table: dict[bytes, int] = {}
    lines = []
    first_lsn = 0
    for payload in transaction.records:
        match = _ROW_CHANGE_HEAD.match(payload)
        if match is None:
            return None
        action, schema, name = match.group(1, 4, 5)
        table = schema + b"." + name
        names = columns.get(table)
        if names is None or (action == b"U" and not _update_as_sent(payload, match.end(), names)):
            return None
        if not lines:
            first_lsn = (int(match.group(2), 16) << 32) + int(match.group(3), 16)
        per_table[table] = per_table.get(table, 0) + 1
        lines.append(b"%s%d,\"wal2json\":%s}" % (head, len(lines) + 1, payload))
    if not lines:
        return None
    order = TransactionOrder(len(lines), {table.decode(): count for table, count in per_table.items()})
    lines.append(orjson.dumps(order.end_record(tx_id, transaction.commit_ts_ms)))
    return lines, first_lsn


def _update_as_sent(payload: bytes, start: int, names: tuple[bytes, ...]) -> bool:
    """Whether an update's new tuple names exactly the table's columns and keeps its old key."""
    columns = payload.find(_COLUMNS, start)
    identity = payload.find(_IDENTITY, start)
    pk = payload.find(_PK, start)
    if columns < 0:
        return False
    end = identity if identity >= 0 else pk if pk >= 0 else len(payload)
    if tuple(_COLUMN_NAME.findall(payload, columns, end)) != names:
        return False
    if identity < 0:
        return True
    # The old key's entries as text ({"name":..,"type":..,"value":..},...), which an unchanged key
    # repeats among the new tuple's columns.
    old_key = payload[identity + len(_IDENTITY): (pk if pk > identity else len(payload) - 1) - 1]
    return bool(old_key) and payload.find(old_key, columns, end) >= 0


def file_events(path: Path) -> Iterator[dict[str, Any]]:
    """Each line of a capture's file as a Debezium event (or END record): a record line as the event
    the capture writes for its change when it decodes it (for readers of the files: the benchmarks,
    the tests)."""
    with open(path, "rb") as lines:
        for line in lines:
            line = line.rstrip(b"\n")
            if not line.startswith(_WRAPPED_PREFIX):
                yield orjson.loads(line)
                continue
            wrapper = orjson.loads(line[: line.index(_WRAPPED_RECORD)] + b"}")
            commit_lsn = wrapper["commit_lsn"]
            transaction = Transaction(xid=int(wrapper["tx_id"].split(":")[0]), commit_ts_ms=wrapper["ts_ms"],
                                      commit_lsn=commit_lsn,
                                      changes=[wal2json_record(line[line.index(_WRAPPED_RECORD) + len(_WRAPPED_RECORD):-1])])
            event = change_events(transaction, "", {}, 0)[0]
            event["transaction"]["total_order"] = wrapper["tx_order"]
            yield event
