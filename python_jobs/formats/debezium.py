"""Parse one Debezium JSON line (bare or {schema, payload}) into the fields of a raw event. Why over 300
lines: one envelope, whose row changes, schema changes, range records and transaction records share
its source position and images."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Mapping, Sequence

from python_jobs.formats.debezium_types import (
    decode_image,
    image_column_schemas,
    is_variable_scale_decimal,
    schemaless_column_schemas,
)
from python_jobs.formats.records import (
    STATUS_EVENT,
    STATUS_TOMBSTONE,
    IgnoredRecord,
    Members,
    ParsedLine,
    array_elements,
    RejectedRecord,
    canonical_key,
    format_seq,
    key_columns_for,
    line_ordered_seq,
    non_negative_int,
    object_members,
    positive_ms,
    parse_safely,
    configured_table,
    range_event,
    schema_event,
    short,
    truncate_event,
)
from python_jobs.formats.transactions import order_in_transaction, per_table_counts, transaction_id, tx_end_marker

ACTIONS = {"c": "insert", "u": "update", "d": "delete", "r": "read"}
NOT_ROW_CHANGES = {
    "m": "op 'm' is a logical decoding message, not a row change",
}
# Debezium writes snapshot as a string enum ("true", "last", ...); 0.x wrote a boolean.
NOT_SNAPSHOT = {None, False, "false"}
MYSQL_CONNECTORS = {"mysql", "mariadb"}
POSTGRES_CONNECTORS = {"postgresql"}

_TRAILING_DIGITS = re.compile(r"(\d+)$")


def parse_line(text: str, key_columns: Mapping[str, Sequence[str]]) -> ParsedLine:
    """Classify one line: an event, a tombstone, a blank line, or a rejected record."""
    return parse_safely(text, lambda line, members: parse_members(line, members, key_columns))[0]


def parse_members(text: str, members: Members, key_columns: Mapping[str, Sequence[str]]) -> ParsedLine:
    """The event in a line's top-level members, unwrapping a {schema, payload} envelope."""
    schema = None
    if "payload" in members and "op" not in members:
        schema = members.get("schema", (None, None, 0))[0]
        payload_value, _, payload_start = members["payload"]
        if payload_value is None:
            return ParsedLine(STATUS_TOMBSTONE)
        members = object_members(text, payload_start, "payload")
    envelope = {name: value for name, (value, _, _) in members.items()}

    op = envelope.get("op")
    if op is None and ("ddl" in envelope or "tableChanges" in envelope):
        return _schema_change(envelope, key_columns, _existing_rows_texts(text, members))
    if op is None and isinstance(envelope.get("range"), dict):
        return _key_range(text, members, envelope, key_columns)
    if op is None and envelope.get("status") == "END":
        return _transaction_end(envelope)
    if op is None and envelope.keys() == {"ts_ms"}:
        # The connector's heartbeat (heartbeat.interval.ms), with or without its schema.
        raise IgnoredRecord(f"Debezium heartbeat at ts_ms {short(envelope['ts_ms'])}")
    if op is None and envelope.get("status") == "BEGIN":
        raise IgnoredRecord(f"Debezium transaction BEGIN {short(envelope.get('id'))}")
    if op is None:
        raise RejectedRecord("field 'op' is missing: not a Debezium change event")
    if not isinstance(op, str):
        raise RejectedRecord(f"field 'op' is {short(op)}; expected c, u, d or r")
    if op in NOT_ROW_CHANGES:
        raise RejectedRecord(NOT_ROW_CHANGES[op])
    if op not in ACTIONS and op != "t":
        raise RejectedRecord(f"field 'op' has unknown value {short(op)}; expected c, u, d, r or t")
    source = envelope.get("source")
    if not isinstance(source, dict):
        raise RejectedRecord("field 'source' is missing or not an object")

    table_name = _table_name(source)
    transaction = _transaction(envelope.get("transaction"))
    if op == "t":
        key_columns_for(table_name, key_columns)
        return replace(truncate_event(table_name, _seq(source, op), _source_ts_ms(source, envelope.get("ts_ms"))), **transaction)
    image_field = "before" if op == "d" else "after"
    image = envelope.get(image_field)
    if not isinstance(image, dict):
        if op == "d":
            raise RejectedRecord(
                "delete has no 'before' image, so the deleted key is unknown "
                "(PostgreSQL: set REPLICA IDENTITY DEFAULT or FULL on the table)"
            )
        raise RejectedRecord(f"op '{op}' needs an 'after' object")
    columns = key_columns_for(table_name, key_columns)

    images = {name: _image(text, members, name, schema) for name in ("before", "after")}
    event = ParsedLine(
        STATUS_EVENT,
        table_name=table_name,
        key=canonical_key(images[image_field][0], image_field, columns),
        action=ACTIONS[op],
        raw_data=images["after"][1],
        before_data=images["before"][1],
        seq=_seq(source, op),
        source_ts_ms=_source_ts_ms(source, envelope.get("ts_ms")),
        **transaction,
    )
    return _key_change(event, images["before"][0], columns) if op == "u" else event


def _key_change(event: ParsedLine, before: Any, columns: Sequence[str]) -> ParsedLine | list[ParsedLine]:
    """An update whose before image holds another key (a writer that does not split a key change into
    a delete and a create, as Debezium's connectors do) is a delete of the former key and an insert
    of the new one: the former key's row is gone from the source, as for Canal, Maxwell and GoldenGate."""
    if not isinstance(before, dict) or any(before.get(column) is None for column in columns):
        return event
    former = canonical_key(before, "before", columns)
    if former == event.key:
        return event
    return [replace(event, key=former, action="delete", raw_data=None), replace(event, action="insert", before_data=None)]


def _transaction(block: Any) -> dict[str, Any]:
    """tx_id and tx_order of Debezium's transaction block (provide.transaction.metadata), if any."""
    if block is None:
        return {}
    if not isinstance(block, dict):
        raise RejectedRecord(f"field 'transaction' is {short(block)}, not an object")
    return {
        "tx_id": transaction_id(block.get("id"), "transaction.id"),
        "tx_order": order_in_transaction(block.get("total_order"), "transaction.total_order"),
    }


def _transaction_end(envelope: Mapping[str, Any]) -> ParsedLine:
    """Debezium's END record: the transaction's event count, in all and per table. It carries no
    source position, so the line's place orders it (records.line_ordered_seq)."""
    return tx_end_marker(
        transaction_id(envelope.get("id"), "id"), line_ordered_seq(1), positive_ms(envelope.get("ts_ms")),
        envelope.get("event_count"), per_table_counts(envelope.get("data_collections")),
    )


def _key_range(text: str, members: Members, envelope: Mapping[str, Any], key_columns: Mapping[str, Sequence[str]]) -> ParsedLine:
    """The captures' record of a key range an online snapshot page read completely (snapshot_pages.range_record)."""
    source, low = envelope.get("source"), envelope["range"].get("low")
    if not isinstance(source, dict) or not isinstance(low, dict):
        raise RejectedRecord("a range record needs the objects 'source' and 'range.low'")
    table_name = _table_name(source)
    key_columns_for(table_name, key_columns)
    bounds = object_members(text, members["range"][2], "field 'range'")
    texts, key = {}, []
    for bound in ("after", "from", "through"):
        value, bound_text, _ = bounds.get(bound, (None, None, 0))
        if value is not None and not isinstance(value, dict):
            raise RejectedRecord(f"field 'range.{bound}' is {short(value)}, not a key image")
        texts[bound] = bound_text if value is not None else None
        key = key or list(value or ())
    order = envelope["range"].get("order")
    if order is not None and not (isinstance(order, dict) and all(isinstance(kind, str) for kind in order.values())):
        raise RejectedRecord(f"field 'range.order' is {short(order)}, not each key column's order")
    # The key's columns in the order the capture paged them: its "key", else its "order"'s members (both
    # written in that order), else the images' own (a page after a restart may have them sorted by name).
    named = envelope["range"].get("key")
    if isinstance(named, list) and named and all(isinstance(name, str) for name in named):
        key = named
    elif order:
        key = list(order)
    return range_event(table_name, _seq(source, "c"), _source_ts_ms(source, envelope.get("ts_ms")), _seq(low, "c"),
                       texts["from"] or texts["after"], texts["through"], start_inclusive=texts["from"] is not None,
                       key=key, order=order)


def _existing_rows_texts(text: str, members: Members) -> list[str | None]:
    """The exact JSON text of each tableChanges entry's existingRows (the captures' addition), or None."""
    value, _, start = members.get("tableChanges", (None, None, 0))
    if not isinstance(value, list):
        return []
    texts = []
    for element, _, element_start in array_elements(text, start, "field 'tableChanges'"):
        found = object_members(text, element_start, "tableChanges entry").get("existingRows") if isinstance(element, dict) else None
        texts.append(found[1] if found is not None and isinstance(found[0], dict) else None)
    return texts


def _schema_change(envelope: Mapping[str, Any], key_columns: Mapping[str, Sequence[str]],
                   existing_rows: Sequence[str | None]) -> list[ParsedLine]:
    """A schema change event: one schema event per changed table with configured keys, at its source position."""
    source = envelope.get("source")
    if not isinstance(source, dict):
        raise RejectedRecord("field 'source' is missing or not an object")
    changes = envelope.get("tableChanges") if isinstance(envelope.get("tableChanges"), list) else []
    events = []
    for index, change in enumerate(changes):
        if not isinstance(change, dict) or not isinstance(change.get("id"), str):
            continue
        parts = [part.strip('"') for part in re.findall(r'"(?:[^"]|"")*"|[^."]+', change["id"])]
        table_name = ".".join(parts[-2:])
        if not configured_table(table_name, key_columns):
            continue
        table = change.get("table") if isinstance(change.get("table"), dict) else {}
        columns = [
            {"name": column.get("name"), "type": _column_type(column)}
            for column in table.get("columns") or [] if isinstance(column, dict)
        ] if change.get("type") != "DROP" else None
        retyped = change.get("retypedColumns")
        events.append(schema_event(table_name, _seq(source, "c"), _source_ts_ms(source, envelope.get("ts_ms")),
                                   envelope.get("ddl"), None, columns,
                                   existing_rows[index] if index < len(existing_rows) else None,
                                   {str(name): str(type_name) for name, type_name in retyped.items()}
                                   if isinstance(retyped, dict) and retyped else None))
    if not events:
        raise IgnoredRecord(f"Debezium schema change of no configured table: {short(envelope.get('ddl'))}")
    return events


def _column_type(column: Mapping[str, Any]) -> str | None:
    """typeName(length[, scale]) as the schema change event describes the column."""
    type_name = column.get("typeName")
    if not isinstance(type_name, str):
        return None
    size = [str(column[name]) for name in ("length", "scale") if isinstance(column.get(name), int)]
    return f"{type_name}({','.join(size)})" if size else type_name


def _table_name(source: Mapping[str, Any]) -> str:
    """Schema-qualified source table: Postgres schema.table, MySQL database.table."""
    table = source.get("table")
    namespace = source.get("schema") or source.get("db")
    if not isinstance(table, str) or not table:
        raise RejectedRecord("field 'source.table' is missing")
    if not isinstance(namespace, str) or not namespace:
        raise RejectedRecord("fields 'source.schema' and 'source.db' are both missing")
    return f"{namespace}.{table}"


def source_position(source: Mapping[str, Any]) -> tuple[int, int, int] | None:
    """Where the change sits in the source log, as three non-negative integers; None when the
    envelope names no connector (Flink CDC's debezium-json and other writers of the envelope
    leave it out, with every position field): the line's place orders it then."""
    connector = source.get("connector")
    if connector is None:
        return None
    if not isinstance(connector, str):
        raise RejectedRecord(f"field 'source.connector' is {short(connector)}, not a connector name")
    if connector in MYSQL_CONNECTORS:
        binlog_file = source.get("file")
        match = _TRAILING_DIGITS.search(binlog_file) if isinstance(binlog_file, str) else None
        if match is None:
            raise RejectedRecord(
                f"field 'source.file' {short(binlog_file)} is not a binlog file name ending in a number"
            )
        row = non_negative_int(source, "row", "source.", default=0)
        # seq gives the row in its event 10 digits (records.format_seq).
        if row >= 10**10:
            raise RejectedRecord(f"field 'source.row' is {row}, more rows than one binlog event holds")
        return (int(match.group(1)), non_negative_int(source, "pos", "source."), row)
    if connector in POSTGRES_CONNECTORS:
        # The captures' commit_lsn (python_jobs/capture/postgres_events.source_block) puts commit order first.
        if source.get("commit_lsn") is not None:
            return (non_negative_int(source, "commit_lsn", "source."), non_negative_int(source, "lsn", "source."), 0)
        return (non_negative_int(source, "lsn", "source."), 0, 0)
    # A connector whose position we do not read: ordering it by its lines would ignore the one it has.
    raise RejectedRecord(
        f"connector {short(connector)} has no supported source position "
        "(supported: mysql, mariadb, postgresql)"
    )


def _seq(source: Mapping[str, Any], op: str) -> str:
    """Fixed-width sortable string: source position, then snapshot rows before streamed ones.

    Two events of one key at the same position are one event delivered twice, so the
    landed file and line are not part of seq; they only break ties inside one batch.
    Without a position, the landing appends the line's place (records.line_ordered_seq).
    """
    position = source_position(source)
    snapshot = source.get("snapshot")
    if not isinstance(snapshot, (str, bool, type(None))):
        raise RejectedRecord(f"field 'source.snapshot' is {short(snapshot)}, not a snapshot marker")
    phase = 0 if (op == "r" or snapshot not in NOT_SNAPSHOT) else 1
    if position is None:
        # Snapshot rows too: the writer (Flink CDC) emits them in stream order, and a snapshot taken
        # again after missed changes must win over the older streamed rows of its keys.
        return line_ordered_seq(1)
    return format_seq(*position, phase)


def _source_ts_ms(source: Mapping[str, Any], processed_ts_ms: Any) -> int | None:
    """Commit time in the source; early MySQL snapshots write 0, so fall back to processing time."""
    return positive_ms(source.get("ts_ms")) or positive_ms(processed_ts_ms)


def _image(text: str, members: Members, name: str, schema: Any) -> tuple[Any, str | None]:
    """(values, exact JSON text) of 'before' or 'after'; logical types decoded when a schema came with it."""
    value, image_text, start = members.get(name, (None, None, 0))
    if not isinstance(value, dict):
        return value, None
    column_schemas = image_column_schemas(schema, name)
    if not column_schemas:
        # Without the schema only a VariableScaleDecimal says what it is: {scale, value} (debezium_types).
        if not any(is_variable_scale_decimal(column) for column in value.values()):
            return value, image_text
        return decode_image(object_members(text, start, name), schemaless_column_schemas(value), name)
    return decode_image(object_members(text, start, name), column_schemas, name)
