"""PostgreSQL changes as Debezium events: wal2json rows grouped into committed transactions,
and the events of each, with Debezium's marker for TOAST values an update did not change."""

from __future__ import annotations

import datetime as dt
import functools
import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import orjson

from python_jobs.capture.output import CAPTURE_VERSION, CaptureError, TransactionOrder
from python_jobs.formats.wal2json import NOT_AS_TEXT_TYPES, keeps_text, parse_lsn, snapshot_converter, value_converter

CONNECTOR = "postgresql"
# Debezium's marker for a TOAST column an update did not change (wal2json leaves it out).
UNAVAILABLE_VALUE = "__debezium_unavailable_value"


def lsn_text(position: int) -> str:
    return f"{position >> 32:X}/{position & 0xFFFFFFFF:X}"


def source_block(database: str, table: str, lsn: int, commit_lsn: int, *, snapshot: bool = False,
                 ts_ms: int | None = None, tx_id: int | None = None) -> dict[str, Any]:
    """Debezium's source block of the capture's events. commit_lsn, the commit of the event's
    transaction, orders events before lsn (docs/ordering.md): a change's own LSN can be older than a
    transaction committed before it, which an online snapshot's watermarks must not mistake."""
    schema, name = table.split(".", 1)
    return {"version": CAPTURE_VERSION, "connector": CONNECTOR, "name": "cdc_merge", "db": database, "schema": schema,
            "table": name, "lsn": lsn, "commit_lsn": commit_lsn, **({"txId": tx_id} if tx_id is not None else {}),
            "ts_ms": ts_ms, "snapshot": "true" if snapshot else "false"}


def change_lsn(text: str) -> int:
    """parse_lsn of a record the server wrote (two hex halves), without its checks for a person's text."""
    high, _, low = text.partition("/")
    try:
        return (int(high, 16) << 32) + int(low, 16)
    except ValueError:
        return parse_lsn(text)


# Each column type's conversion, None where the value stays as sent (most text types): a capture
# converts millions of values.
_CONVERSIONS: dict[str, Callable[[Any], Any] | None] = {}


def columns_image(columns: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    image = {}
    conversions = _CONVERSIONS
    for column in columns:
        value = column.get("value")
        if value is not None:
            pg_type = column["type"]
            try:
                convert = conversions[pg_type]
            except KeyError:
                convert = value_converter(pg_type)
                convert = conversions[pg_type] = None if keeps_text(convert) else convert
            if convert is not None:
                value = convert(value)
        image[column["name"]] = value
    return image


DECODING_OPTIONS = {"format-version": "2", "include-lsn": "true", "include-timestamp": "true",
                    "include-pk": "true", "include-transaction": "true"}
# Numbers as their exact text where a float cannot keep it: the decoder of a record that orjson
# cannot read exactly (json.loads with options builds one a call).
_EXACT_DECODER = json.JSONDecoder(parse_float=str, parse_int=str)
# numeric(p,s) of at most 15 digits: a double keeps every such value, and formatting it with s
# decimals gives its text back exactly.
_EXACT_IN_DOUBLE = re.compile(r"^(?:numeric|decimal)\((\d+),(\d+)\)$")
_DOUBLE_DIGITS = 15


def wal2json_record(data: str | bytes) -> dict[str, Any]:
    """A wal2json record. Read by orjson (several times faster than json, which a capture pays per
    change); a numeric column's value comes back as the exact text Debezium's
    decimal.handling.mode=string writes, and a record whose numbers a double cannot hold exactly
    (numeric without a precision or of more than 15 digits, NaN, Infinity) is read again with
    every number as its text."""
    try:
        record = orjson.loads(data)
    except orjson.JSONDecodeError:  # NaN or Infinity written bare, which JSON has not
        return _exact_record(data)
    for columns in (record.get("columns"), record.get("identity")):
        for column in columns or ():
            value = column.get("value")
            if value.__class__ is float or value.__class__ is int:
                scale = _numeric_scale(column["type"])
                if scale is None:
                    continue
                if scale < 0:
                    return _exact_record(data)
                column["value"] = f"{value:.{scale}f}"
    return record


@functools.lru_cache(maxsize=1024)
def _numeric_scale(pg_type: str) -> int | None:
    """None for a type that is not numeric; its scale where a double holds its values exactly; else -1."""
    if not pg_type.startswith(("numeric", "decimal")):
        return None
    exact = _EXACT_IN_DOUBLE.match(pg_type)
    return int(exact.group(2)) if exact and int(exact.group(1)) <= _DOUBLE_DIGITS else -1


def _exact_record(data: str | bytes) -> dict[str, Any]:
    return _EXACT_DECODER.decode(data.decode() if isinstance(data, bytes) else data)


@dataclass
class Transaction:
    xid: int
    commit_ts_ms: int | None = None
    commit_lsn: int = 0
    changes: list[Mapping[str, Any]] = field(default_factory=list)
    # The stream's records as the server sent them, decoded only when needed (postgres_records.py).
    records: list[bytes] = field(default_factory=list)
    # How many of the records are logical messages (the capture's heartbeats, a page's watermarks), which change no row.
    messages: int = 0

    @property
    def row_changes(self) -> int:
        return len(self.records) - self.messages


class TransactionAssembler:
    """wal2json format-version 2 records, one at a time, into committed transactions."""

    def __init__(self) -> None:
        self.current: Transaction | None = None

    def add(self, lsn: int, xid: int, change: Mapping[str, Any]) -> Transaction | None:
        """The transaction this record commits (lsn: the commit's), else None."""
        action = change["action"]
        if action == "B":
            self.current = Transaction(xid=xid)
        elif action == "C":
            if self.current is None:
                raise CaptureError(f"commit of transaction {xid} at {lsn_text(lsn)} without its begin")
            committed, self.current = self.current, None
            committed.commit_lsn = lsn
            committed.commit_ts_ms = _commit_ms(change.get("timestamp"))
            return committed
        elif self.current is not None:
            self.current.changes.append(change)
        return None


def _commit_ms(timestamp: str | None) -> int | None:
    if not timestamp:
        return None
    return int(dt.datetime.fromisoformat(timestamp).timestamp() * 1000)


@dataclass(frozen=True)
class TableShape:
    """A captured table's columns as the catalog has them now (postgres_columns.py reads them)."""

    columns: frozenset[str]
    # The columns whose value may be stored out of line (TOAST): an update that leaves one unchanged leaves it out.
    toastable: frozenset[str] = frozenset()
    # The base type of each column of a domain type, which wal2json names instead (its values then come as text).
    domain_bases: Mapping[str, str] = field(default_factory=dict)


def change_events(
    transaction: Transaction, database: str, shapes: Mapping[str, TableShape], processed_ms: int,
    additions: Any = None, watch: Any = None, unmarked_toast: set[str] | None = None,
) -> list[dict[str, Any]]:
    """Debezium events of one committed transaction, in commit order.

    An update that changes the primary key becomes a delete of the old key and an insert
    of the new one, as Debezium emits it; the mirror is keyed by the primary key.
    additions (postgres_columns.ColumnAdditions): the columns added but not said yet, whose schema
    change events go before the first change that carries them (or at the capture's message).
    watch (postgres_pages.PageWatch): an online snapshot's open page, told every change.
    unmarked_toast: gets the tables of updates that may leave out an unchanged TOAST value they cannot
    mark (unchanged_toast), for the capture to read them again once their events are written.
    """
    events: list[dict[str, Any]] = []
    order = TransactionOrder()
    transaction_id = f"{transaction.xid}:{transaction.commit_lsn}"
    observers = [observer for observer in (additions, watch) if observer is not None]
    # Told of row changes only while they can matter (no addition pending, no page open: almost always);
    # neither starts to during a transaction's events.
    row_observers = [observer for observer in observers if observer.observes_rows()]
    # Each table's source block of this transaction, whose copies differ in lsn only (a capture makes millions).
    sources: dict[str, dict[str, Any]] = {}
    for change in transaction.changes:
        action = change["action"]
        for observer in observers if action == "M" else row_observers:
            events.extend(observer.before_change(change, transaction.commit_lsn, database, processed_ms))
        if action == "M":  # logical messages are not row changes
            continue
        table = f"{change['schema']}.{change['table']}"
        source = sources.get(table)
        if source is None:
            source = sources[table] = source_block(database, table, 0, transaction.commit_lsn,
                                                   ts_ms=transaction.commit_ts_ms, tx_id=transaction.xid)
        source = source.copy()
        source["lsn"] = change_lsn(change["lsn"])
        shape = shapes.get(table)
        if shape is not None and shape.domain_bases:
            of_bases(change, shape.domain_bases)
        identity = columns_image(change.get("identity") or ())
        after = columns_image(change.get("columns") or ())
        if action == "U" and unchanged_toast(after, identity, shape, lambda column: additions is not None
                                             and additions.is_pending(table, column)) and unmarked_toast is not None:
            unmarked_toast.add(table)
        pk_columns = [column["name"] for column in change.get("pk") or []]
        changes: list[tuple[str, dict | None, dict | None]]
        if action == "I":
            changes = [("c", None, after)]
        elif action == "D":
            changes = [("d", identity, None)]
        elif action == "U":
            old_key = [identity.get(name) for name in pk_columns] if identity else None
            new_key = [after.get(name) for name in pk_columns]
            changes = [("d", identity, None), ("c", None, after)] if old_key and old_key != new_key else [("u", None, after)]
        else:
            changes = [("t", None, None)]
        for op, before, image in changes:
            # output.debezium_event's envelope, built here: once per change.
            events.append({"before": before, "after": image, "source": source, "op": op, "ts_ms": processed_ms,
                           "transaction": order.next_block(transaction_id, table)})
    if order.total:
        events.append(order.end_record(transaction_id, transaction.commit_ts_ms))
    return events


def of_bases(change: dict[str, Any], bases: Mapping[str, str]) -> None:
    """The change's columns of a domain type typed as the domain's base type (bases: name -> type)."""
    for column in (change.get("columns") or []) + (change.get("identity") or []):
        base = bases.get(column.get("name"))
        if base is not None:
            column["type"] = base
            value = column.get("value")
            if isinstance(value, str) and base.split("(")[0] in NOT_AS_TEXT_TYPES:
                column["value"] = snapshot_converter(base)(value)


def unchanged_toast(after: dict[str, Any], identity: Mapping[str, Any], shape: TableShape | None,
                    added_since: Callable[[str], bool]) -> bool:
    """Fill in the columns an update left out of its new tuple: wal2json leaves out a TOAST value
    the update did not change. With REPLICA IDENTITY FULL the old tuple has it; otherwise Debezium's
    marker says so, and only for a column that can hold such a value and that the change's table
    had when it was decoded (not one added since, nor any when the change names a column the
    catalog no longer has: a rename or drop since), so that it never stands for a value it is not.
    True where such a change leaves out a column that may be one: its table is to be read again,
    or the mirror's column stays null until the row's next change (change_events' unmarked_toast)."""
    for column, value in identity.items():
        after.setdefault(column, value)
    if shape is None:
        return False
    if not set(after) <= shape.columns:
        return any(column not in after and not added_since(column) for column in shape.toastable)
    for column in shape.toastable:
        if column not in after and not added_since(column):
            after[column] = UNAVAILABLE_VALUE
    return False
