"""Every CDC JSON dialect the landing job reads, and how a line's format is recognised."""

from __future__ import annotations

from typing import Callable, Iterable, Mapping, Sequence

from python_jobs.formats import canal, captured_wal2json, debezium, maxwell, ogg, wal2json
from python_jobs.formats.records import Members, ParsedLine, RejectedRecord, parse_safely

Parser = Callable[[str, Members, Mapping[str, Sequence[str]]], "ParsedLine | Iterable[ParsedLine]"]
PARSERS: dict[str, Parser] = {
    "debezium": debezium.parse_members,
    "canal": canal.parse_members,
    "maxwell": maxwell.parse_members,
    "ogg": ogg.parse_members,
    "wal2json": wal2json.parse_members,
    "captured_wal2json": captured_wal2json.parse_members,
}
FORMATS = ("auto", *PARSERS)


def detect(members: Members) -> str:
    """The format whose envelope fields the record has; 'auto' decides per line."""
    if "op_type" in members:
        return "ogg"
    # Canal's 'data' is an array of rows, Maxwell's one row: Flink's canal-json may leave out isDdl and pkNames.
    data_is_array = isinstance(members.get("data", (None,))[0], list)
    if "isDdl" in members or "pkNames" in members or ("type" in members and data_is_array):
        return "canal"
    # Maxwell's DDL records (--output_ddl) carry 'def' or 'sql' instead of 'data'.
    if "database" in members and "type" in members and any(name in members for name in ("xid", "data", "def", "sql")):
        return "maxwell"
    # Flink's debezium-json may write the envelope without 'source'.
    debezium_envelope = "op" in members and any(name in members for name in ("source", "before", "after"))
    # Schema changes, and the captures' online snapshot key ranges (python_jobs/capture/snapshot_pages.py).
    debezium_envelope = debezium_envelope or ("source" in members and any(name in members for name in ("ddl", "tableChanges", "range")))
    # A heartbeat (heartbeat.interval.ms) is {"ts_ms": ...} alone, on the connector's heartbeat topic.
    heartbeat = members.keys() == {"ts_ms"}
    if "payload" in members or debezium_envelope or heartbeat or _is_transaction_marker(members):
        return "debezium"
    if all(name in members for name in captured_wal2json.WRAPPER_MEMBERS):
        return "captured_wal2json"
    # A truncate ("action": "T") has no column lists; without include-lsn, only its table.
    wal2json_fields = ("lsn", "columns", "identity", "schema", "xid")
    if "action" in members and any(name in members for name in wal2json_fields):
        return "wal2json"
    raise RejectedRecord(
        "not a change event of a known format (Debezium needs 'op' and 'source', Canal 'type' and a 'data' array, "
        "Maxwell 'database', 'type' and 'data', GoldenGate 'op_type', wal2json 'action' and 'columns', 'identity' or 'schema')"
    )


def _is_transaction_marker(members: Members) -> bool:
    status = members.get("status")
    return status is not None and status[0] in ("BEGIN", "END") and "id" in members


def parse_line(text: str, key_columns: Mapping[str, Sequence[str]], format_name: str = "auto") -> list[ParsedLine]:
    """A line's events, or one blank, tombstone, ignored or rejected status with its reason."""

    def parse(line: str, members: Members):
        chosen = detect(members) if format_name == "auto" else format_name
        # The capture commands' files, read as Debezium's: PostgreSQL's stream writes record lines among its events.
        if chosen == "debezium" and all(name in members for name in captured_wal2json.WRAPPER_MEMBERS):
            chosen = "captured_wal2json"
        return PARSERS[chosen](line, members, key_columns)

    return parse_safely(text, parse)
