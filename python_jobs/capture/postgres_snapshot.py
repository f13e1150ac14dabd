"""The capture's first snapshot (and a --resnapshot): the slot created with an exported snapshot, and
every row of the captured tables read in it and written as a snapshot read at the slot's
consistent point, so that snapshot + stream is exactly each table's history from there; and the
values a key change's update did not log, read from the table the same way."""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping, Sequence

from python_jobs.capture.output import debezium_event
from python_jobs.capture.postgres_connection import connect
from python_jobs.capture.postgres_events import UNAVAILABLE_VALUE, source_block
from python_jobs.formats.wal2json import keeps_text, parse_lsn, snapshot_converter


def take_snapshot(capture: Any, replaces_mirrors: bool = False) -> int:
    """Create the slot and write every row as of its consistent point; returns that LSN.
    replaces_mirrors: each table's rows come after a truncate just before that point, so the
    mirrors drop rows deleted while no slot kept the changes."""
    import psycopg2
    import psycopg2.extras

    replication = connect(capture.config.dsn, connection_factory=psycopg2.extras.LogicalReplicationConnection)
    try:
        with replication.cursor() as slot_cursor:
            # The exported snapshot lives while this connection stays idle: read everything now.
            slot_cursor.execute(f"CREATE_REPLICATION_SLOT {capture.config.slot} LOGICAL wal2json EXPORT_SNAPSHOT")
            _, consistent_point, snapshot_name, _ = slot_cursor.fetchone()
            position = parse_lsn(consistent_point)
            reader = connect(capture.config.dsn)
            try:
                reader.set_session(isolation_level="REPEATABLE READ", readonly=True)
                with reader.cursor() as cursor:
                    cursor.execute("set transaction snapshot %s", (snapshot_name,))
                    cursor.execute("set local timezone = 'UTC'")
                # The columns as of the snapshot, not as of the capture's start.
                capture.catalog = capture.read_catalog(reader)
                for table in capture.config.tables:
                    if replaces_mirrors:
                        _write_truncate_before(capture, table, position)
                    _snapshot_table(capture, reader, table, position)
            finally:
                reader.close()
    finally:
        replication.close()
    return position


def _source_block(capture: Any, table: str, position: int, snapshot: bool) -> dict[str, Any]:
    # Every transaction the stream carries commits after the snapshot's position.
    return source_block(capture.database, table, position, position, snapshot=snapshot)


def _write_truncate_before(capture: Any, table: str, position: int) -> None:
    # One position before the snapshot's rows, which share the snapshot's own.
    truncate = debezium_event(op="t", before=None, after=None, source=_source_block(capture, table, position - 1, False),
                              transaction_id=None, total_order=0, processed_ms=int(time.time() * 1000))
    capture.output.write(f"pg-{capture.config.slot}-snapshot-{table}", f"{position:016X}", "000000", [truncate])
    capture.summary.files += 1


def _snapshot_table(capture: Any, reader: Any, table: str, position: int) -> None:
    """Every row as a snapshot read. Each column is read as its type's text output, which is what
    wal2json sends for a streamed change, and converted by the same function, so a row reads the
    same from the snapshot as from the stream (numbers, JSON, arrays, bytea, char(n), times alike)."""
    columns = capture.catalog[table]
    image = row_image([column.name for column in columns], [column.type_name for column in columns])
    source = _source_block(capture, table, position, True)
    column_list = select_list([column.name for column in columns])
    # A named cursor streams the rows from the server instead of holding the table in memory.
    with reader.cursor(name="cdc_merge_snapshot") as cursor:
        cursor.itersize = capture.config.max_changes_per_file
        cursor.execute(f"select {column_list} from {table}")
        part = 0
        while True:
            rows = cursor.fetchmany(capture.config.max_changes_per_file)
            if not rows:
                break
            part += 1
            now_ms = int(time.time() * 1000)
            events = [
                debezium_event(
                    op="r", before=None, source=source, transaction_id=None, total_order=0, processed_ms=now_ms,
                    after=image(row),
                )
                for row in rows
            ]
            capture.output.write(f"pg-{capture.config.slot}-snapshot-{table}", f"{position:016X}", f"{part:06d}", events)
            capture.summary.files += 1
            capture.summary.snapshot_rows += len(events)


def fill_unsent_toast(connection: Any, events: Sequence[dict[str, Any]], catalog: Mapping[str, Sequence[Any]],
                      updates_of: frozenset[str] | set[str] = frozenset()) -> None:
    """A key change's insert with the TOAST values its update did not change, read from the table;
    and so an update of a table in updates_of (an online snapshot's page window: postgres_pages.PageWatch).

    With REPLICA IDENTITY DEFAULT the server logs neither the old row's nor the new row's unchanged
    out-of-line values, and a new key has no mirror row to keep them from: they would stay null. Nor
    may a key an online snapshot's page leaves out (changed in its window): the mirror's row is none
    (a first snapshot) or the one being repaired. The table's value now is the row's newest; a later
    change in the log writes over it in order, and a row gone since is deleted by a later change too.
    One query per table and 1,000 rows."""
    lacking: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        after = event.get("after")
        if after and event.get("op") in ("c", "u") and UNAVAILABLE_VALUE in after.values():
            source = event["source"]
            table = f"{source['schema']}.{source['table']}"
            if event["op"] == "c" or table in updates_of:
                lacking.setdefault(table, []).append(after)
    for table, images in lacking.items():
        columns = catalog.get(table) or ()
        key = [column for column in columns if column.in_primary_key]
        toastable = [column for column in columns if column.toastable and not column.in_primary_key]
        read = [*key, *toastable]
        image = row_image([column.name for column in read], [column.type_name for column in read])
        schema, name = table.split(".", 1)
        row_key = ", ".join(quote_identifier(column.name) for column in key)
        one_key = "(" + ", ".join(f"%s::{column.type_name}" for column in key) + ")"
        for start in range(0, len(images), 1000):
            chunk = images[start:start + 1000]
            with connection.cursor() as cursor:
                cursor.execute(
                    f"select {select_list([column.name for column in read]).replace('%', '%%')} "
                    f"from {quote_identifier(schema)}.{quote_identifier(name)} "
                    f"where ({row_key}) in ({', '.join([one_key] * len(chunk))})",
                    [None if after.get(column.name) is None else str(after[column.name]) for after in chunk for column in key])
                found = {tuple(row[column.name] for column in key): row for row in map(image, cursor.fetchall())}
            for after in chunk:
                row = found.get(tuple(after.get(column.name) for column in key))
                if row is not None:
                    after.update({name: value for name, value in row.items() if after.get(name) == UNAVAILABLE_VALUE})


def row_image(names: Sequence[str], type_names: Sequence[str]) -> Callable[[Sequence[str | None]], dict[str, Any]]:
    """A function from a row read by select_list to its image as the capture writes it: each column's
    text converted as a streamed change's value is (snapshot_converter); text kept as it is."""
    converting = [(name, convert) for name, convert in zip(names, map(snapshot_converter, type_names))
                  if not keeps_text(convert)]

    def image(values: Sequence[str | None]) -> dict[str, Any]:
        row = dict(zip(names, values))
        for name, convert in converting:
            text = row[name]
            if text is not None:
                row[name] = convert(text)
        return row

    return image


def quote_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def select_list(names: Sequence[str]) -> str:
    """The columns as their types' text output: format('%s') calls the output function, as wal2json
    does (a cast to text may differ: char(n) loses its padding, inet its netmask). IS NOT NULL is
    false for a row type's value with a null field, row(1, null), which is no null: IS DISTINCT FROM
    NULL tells a value from null (format() would render null as '')."""
    return ", ".join(f"case when {quote_identifier(name)} is distinct from null then format('%s', {quote_identifier(name)}) end"
                     for name in names)


def source_texts(connection: Any, key: Sequence[Any], texts: Sequence[str] | None) -> list[str] | None:
    """A requested bound's values as the source writes them (format('%s'), in the capture's session):
    a uuid in upper case, a time stamp in another zone or none, a char(n) without its padding name
    the key the source's pages start or end at, and the range record must name it as the mirror holds
    it (its lower-case text, UTC), or the mirror's range covers rows the pages did not read, and deletes
    them. ValueError: a value the key's type does not take. A bound of another length is left as it is."""
    import psycopg2

    if texts is None or len(texts) != len(key):
        return None if texts is None else list(texts)
    selected = ", ".join(f"format('%%s', %s::{column.type_name})" for column in key)
    # A bytea also in hex without its \x, as the mirror holds it (and cdc-verify --repair asks for it).
    texts = [f"\\x{text}" if column.type_name == "bytea" and not str(text).startswith("\\x") else str(text)
             for column, text in zip(key, texts)]
    try:
        with connection.cursor() as cursor:
            cursor.execute(f"select {selected}", texts)
            return [str(text) for text in cursor.fetchone()]
    except psycopg2.DataError as error:
        raise ValueError(f"{','.join(texts)}: {' '.join(str(error).split())}") from error
