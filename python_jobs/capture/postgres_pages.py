"""The PostgreSQL side of online snapshots (docs/online_snapshots.md): watermarks as logical
messages in the slot's own stream, a page read by key, what the stream's changes and watermarks
tell the open page (snapshot_pages.Pages), and the capture's steps around them: the tables to read
(added to --tables, or asked for with cdc-snapshot), the next page, and a passed page's file.
`capture` is postgres_source.PostgresCapture, which calls these between its stream's files. Why over
300 lines: the page query's key order (which the range records name) and the pages' steps share it."""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections import OrderedDict
from typing import Any, Mapping, Sequence

from python_jobs.capture.postgres_columns import CatalogColumn, read_catalog
from python_jobs.capture.postgres_events import TableShape, of_bases, source_block
from python_jobs.capture.postgres_snapshot import quote_identifier, row_image, select_list, source_texts
from python_jobs.capture.snapshot_pages import (
    OpenPage,
    Pages,
    TableSnapshot,
    page_events,
    take_requested,
    write_page_file,
)
from python_jobs.capture.snapshot_requests import REQUESTS_EVERY_SECONDS, refuse, taken_requests
from python_jobs.formats.records import RejectedRecord, canonical_key
from python_jobs.formats.wal2json import parse_lsn, snapshot_converter, value_converter
from python_jobs.scaffold import SPARK_MAX_PRECISION

log = logging.getLogger("cdc_merge.capture")

WATERMARK_PREFIX = "cdc_merge.watermark"
# The transactions written last whose xids a page's SELECT is checked against (PageWatch.transaction).
WRITTEN_XIDS_KEPT = 100_000
# The text types, whose keys cdc-verify reads as they are (python_jobs/verify/source_ranges.py).
_TEXT_TYPES = ("text", "character", "name", "citext")
# Keys of these text types are paged in binary order (collate "C"), the order Spark and Databend
# compare strings in, so that a page's key range is the same range in a mirror. Not citext, which
# compares its values lower-cased under any collation, nor char(n), which compares them without
# their padding: those are paged by their written text, as the types a mirror keeps as text are.
_BINARY_ORDERED = re.compile(r"text|name|character varying(\(\d+\))?")
# The database encodings whose text's bytes are UTF-8's (SQL_ASCII keeps the client's, UTF-8 here).
_UTF8_BYTES = ("UTF8", "SQL_ASCII")
# Keys a mirror orders as the source does (cdc-scaffold's number, boolean, date, timestamp, or a uuid,
# whose text is in its bytes' order); the others are paged in the order of their written text.
_OWN_ORDER_TYPES = ("smallint", "integer", "bigint", "real", "double precision", "boolean", "date", "uuid")


def emit_watermark(connection: Any, page: str, mark: str) -> None:
    """A low or high watermark of a page, in the log the slot streams (committed at once: autocommit)."""
    with connection.cursor() as cursor:
        cursor.execute("select pg_logical_emit_message(true, %s, %s)", (WATERMARK_PREFIX, json.dumps({"page": page, "mark": mark})))


def read_page(connection: Any, snapshot: TableSnapshot, columns: Sequence[CatalogColumn], page_rows: int,
              number: int, token: str) -> OpenPage:
    """The next page of a snapshot: at most page_rows rows after snapshot.after, through snapshot.through,
    in key order, every value as the capture writes it, and the transactions running as it was read."""
    key = [column for column in columns if column.in_primary_key]
    names = [column.name for column in columns]
    image = row_image(names, [column.type_name for column in columns])
    key_positions = [names.index(column.name) for column in key]
    relation = snapshot.table if snapshot.partition is None else _quoted_table(snapshot.partition)
    with connection.cursor() as cursor:
        # One snapshot for both: the running transactions' 32-bit xids (the stream's), then the rows.
        cursor.execute("begin isolation level repeatable read read only")
        try:
            cursor.execute("select array(select (running::text::numeric % 4294967296)::bigint "
                           "from pg_snapshot_xip(pg_current_snapshot()) as running), current_setting('server_encoding')")
            xids, encoding = cursor.fetchone()
            unseen = frozenset(xids)
            ordered = ", ".join(_ordered(column, encoding) for column in key)
            conditions, parameters = [], []
            for bound, operator in ((snapshot.after, ">=" if snapshot.start_inclusive else ">"), (snapshot.through, "<=")):
                if bound is not None:
                    typed = ", ".join(_typed_parameter(column, encoding) for column in key)
                    conditions.append(f"({ordered}) {operator} ({typed})")
                    parameters.extend(bound)
            where = f"where {' and '.join(conditions)}" if conditions else ""
            # With parameters psycopg2 reads every %: the select list's are doubled.
            cursor.execute(f"select {select_list(names).replace('%', '%%')} from {relation} {where} "
                           f"order by {ordered} limit {int(page_rows)}", parameters)
            fetched = cursor.fetchall()
        finally:
            cursor.execute("rollback")
    rows = [image(values) for values in fetched]
    last = fetched[-1] if fetched else None
    return OpenPage(
        snapshot=snapshot, number=number, key_columns=tuple(column.name for column in key), rows=rows,
        last_key=[last[position] for position in key_positions] if last else None,
        last_image={column.name: rows[-1][column.name] for column in key} if rows else None,
        reaches_end=len(fetched) < page_rows, token=token, unseen=unseen, key_order=tuple(key_order(column) for column in key),
    )


def _quoted_table(table: str) -> str:
    return ".".join(quote_identifier(part) for part in table.split(".", 1))


def _in_own_order(column: CatalogColumn) -> bool:
    """Whether the mirror orders the key column as the source does: a number, a time or a uuid,
    mirrored as one. A mirror keeps the others as their text (cdc-scaffold's string: an unbounded
    numeric, an enum, money, inet, interval), which it orders by its bytes, not the source's order."""
    name = column.type_name
    if name.startswith("numeric"):
        # A mirror's decimal: cdc-scaffold's, wide enough for a scale over the precision or below 0
        # (numeric(37,-2) holds 39 digits, numeric(38,40) 40: wider than a decimal, so their text).
        typed = re.match(r"numeric\((\d+)(?:,(-?\d+))?\)", name)
        if typed is None:
            return False
        precision, scale = int(typed.group(1)), int(typed.group(2) or 0)
        return max(precision, scale) - min(scale, 0) <= SPARK_MAX_PRECISION
    return name in _OWN_ORDER_TYPES or name.startswith("timestamp")


def key_order(column: CatalogColumn) -> str:
    """How pages order the key column (snapshot_pages.KEY_ORDERS): a number's value, another value of its
    own order, or its written text."""
    if not _in_own_order(column):
        return "text"
    return "value" if column.type_name in ("boolean", "date", "uuid") or column.type_name.startswith("timestamp") else "number"


def _ordered(column: CatalogColumn, encoding: str = "UTF8") -> str:
    """The key column as the page query orders it. encoding: the database's (server_encoding)."""
    quoted = quote_identifier(column.name)
    if _in_own_order(column):
        return quoted
    if encoding not in _UTF8_BYTES:
        # Its bytes in collate "C" are in another order than the mirrors' (LATIN9: Š < ª): compared as UTF-8's.
        text = quoted if _BINARY_ORDERED.fullmatch(column.type_name) else f"format('%%s', {quoted})"
        return f"convert_to({text}, 'UTF8')"
    if _BINARY_ORDERED.fullmatch(column.type_name):
        return f'{quoted} collate "C"'
    # In a statement with parameters: % doubled.
    return f"format('%%s', {quoted}) collate \"C\""


def _ordered_text(text: str, encoding: str = "UTF8") -> str:
    """A text expression as pages and ranges order it: by its UTF-8 bytes, as the mirrors compare strings."""
    return f'{text} collate "C"' if encoding in _UTF8_BYTES else f"convert_to({text}, 'UTF8')"


def _typed_parameter(column: CatalogColumn, encoding: str = "UTF8") -> str:
    if _in_own_order(column):
        return f"%s::{column.type_name}"
    if encoding not in _UTF8_BYTES:
        return "convert_to(%s::text, 'UTF8')"
    if _BINARY_ORDERED.fullmatch(column.type_name):
        return f'%s::{column.type_name} collate "C"'
    # A page's last key is kept as the text select_list reads (format('%s'), as the capture writes it).
    return '%s::text collate "C"'


class PageWatch:
    """What the stream's changes tell the open page (change_events calls it for every change): its
    watermarks, and the keys of its table changed between them. shapes: the tables' columns of a
    domain type, whose key values wal2json sends as the domain's text, not as the page reads them.

    A commit is in the log before it is visible (one waiting for a synchronous standby, above all),
    so a transaction the stream carries before the low watermark may be one the page's SELECT did
    not see (xid: the transaction whose changes come; written: those the capture wrote before the
    page opened, open_next_page): then the page is read again."""

    def __init__(self, pages: Pages, shapes: Mapping[str, TableShape] | None = None,
                 written: OrderedDict[int, None] | None = None) -> None:
        self.pages, self.shapes, self.written = pages, shapes or {}, written if written is not None else OrderedDict()
        self.xid = 0

    def transaction(self, xid: int) -> None:
        """The transaction whose changes come next, kept among those written (open_next_page)."""
        self.xid = xid
        self.written[xid] = None
        if len(self.written) > WRITTEN_XIDS_KEPT:
            self.written.popitem(last=False)

    def observes_rows(self) -> bool:
        """Whether a row change can tell the page anything: only while one is open."""
        return self.pages.open is not None

    def windows_open(self) -> set[str]:
        """The table whose page window is open (a transaction is inside it or not: the watermarks
        commit alone), whose updates' unsent TOAST values are read from the table: the page leaves
        out a key changed there, and the update's placeholder would keep a value the mirror may not
        have (postgres_snapshot.fill_unsent_toast)."""
        page = self.pages.open
        return {page.snapshot.table} if page is not None and self.pages.window_open(page.snapshot.table) else set()

    def before_change(self, change: Mapping[str, Any], commit_lsn: int, database: str,
                      processed_ms: int) -> list[dict[str, Any]]:
        action = change.get("action")
        if action == "M":
            if change.get("prefix") == WATERMARK_PREFIX:
                # Positions in commit order, as the capture's events have them (postgres_events.source_block).
                self.pages.watermark(json.loads(change.get("content") or "{}"), (commit_lsn, parse_lsn(change["lsn"])))
            return []
        table = f"{change.get('schema')}.{change.get('table')}"
        page = self.pages.open
        if page is not None and page.low is None and page.snapshot.table == table and self.xid in page.unseen:
            # Before the window, where the range record would delete its rows, and not in the page.
            log.info("a page of %s is read again: a transaction committed before its low watermark was not visible "
                     "to it (a commit waiting for a synchronous standby)", table)
            self.pages.abandon()
            return []
        if action == "T" and self.pages.window_open(table):
            self.pages.emptied(table)
        if action in ("I", "U", "D") and self.pages.window_open(table):
            key_columns = page.key_columns
            shape = self.shapes.get(table)
            if shape is not None and shape.domain_bases:  # a copy typed as the page's row is: its base type
                change = {field: [dict(column) for column in change.get(field) or ()] for field in ("columns", "identity")}
                of_bases(change, shape.domain_bases)
            for image_field in ("columns", "identity"):
                image = {column["name"]: value_converter(column["type"])(column["value"])
                         for column in change.get(image_field) or () if column.get("value") is not None}
                try:
                    self.pages.changed(table, canonical_key(image, image_field, key_columns))
                except RejectedRecord:  # an image without the key (a delete's new tuple)
                    pass
        return []


def take_snapshot_requests(capture: Any) -> None:
    """cdc-snapshot's requests (snapshot_requests.py): each table or key range read again, online."""
    capture.requests_taken_at = time.monotonic()
    state = capture.config.state
    with taken_requests(state, capture.pages) as requests:
        for request in requests:
            table = request.get("table")
            columns = read_catalog(capture.connection, [table]).get(table) if table in capture.config.tables else None
            if not columns:
                refuse(state, request, f"not a table this capture reads ({', '.join(capture.config.tables)})", log)
                continue
            key = [column for column in columns if column.in_primary_key]
            try:
                request = {**request, **{bound: source_texts(capture.connection, key, request.get(bound))
                                         for bound in ("from", "to")}}
            except ValueError as error:
                refuse(state, request, str(error), log)
                continue
            reason = take_requested(capture.pages, request, [column.name for column in key],
                                    lambda index, text: snapshot_converter(key[index].type_name)(text), log)
            if reason is not None:
                refuse(state, request, reason, log)


def open_next_page(capture: Any) -> bool:
    """The next page of an online snapshot, read between its watermarks, if one may be read now
    (snapshot_pages.py); whether one was. A table dropped meanwhile ends its snapshot."""
    import psycopg2

    if time.monotonic() - capture.requests_taken_at >= REQUESTS_EVERY_SECONDS:
        take_snapshot_requests(capture)
    snapshot = capture.pages.next_to_open(capture.config.snapshot_rows_per_second)
    if snapshot is None:
        return False
    number, token = snapshot.pages, uuid.uuid4().hex[:8]
    watermark = f"{snapshot.id}:{number}:{token}"  # OpenPage.watermark_id
    columns = read_catalog(capture.connection, [snapshot.table]).get(snapshot.table)
    if not columns:
        log.warning("online snapshot of %s ends: the table is gone", snapshot.table)
        capture.pages.snapshots.remove(snapshot)
        return True
    emit_watermark(capture.connection, watermark, "low")
    try:
        page = read_page(capture.connection, snapshot, columns, capture.config.page_rows, number, token)
    except psycopg2.errors.UndefinedTable:
        log.warning("online snapshot of %s ends: the table is gone", snapshot.table)
        capture.pages.snapshots.remove(snapshot)
        return True
    except psycopg2.errors.UndefinedColumn:  # dropped or renamed since the catalog was read: read again
        return False
    if page.unseen & capture.written_xids.keys():
        # Its SELECT did not see a transaction the stream has passed (PageWatch): read again, in a while.
        if getattr(capture, "unseen_page", None) != (snapshot.id, number):
            capture.unseen_page = (snapshot.id, number)
            log.info("a page of %s waits: a transaction committed in the log is not visible yet (a commit waiting "
                     "for a synchronous standby)", snapshot.table)
        return False
    emit_watermark(capture.connection, watermark, "high")
    if read_catalog(capture.connection, [snapshot.table]).get(snapshot.table) != columns:
        # An ALTER TABLE after the catalog was read: the rows lack a column added there, which a change
        # before the high watermark carries, and would be written after it (its default null in the mirror).
        log.info("a page of %s is read again: an ALTER TABLE changed its columns while it was read", snapshot.table)
        return False
    capture.pages.opened(page)
    return True


def write_page(capture: Any, page: OpenPage, processed_ms: int) -> None:
    """A page the stream has passed: its rows and range record as one file (snapshot_pages.page_events).
    Its watermarks' positions are (commit LSN, LSN) (PageWatch)."""

    def source(position: tuple[int, int], snapshot: bool) -> dict[str, Any]:
        commit_lsn, lsn = position
        return source_block(capture.database, page.snapshot.table, lsn, commit_lsn, snapshot=snapshot)

    write_page_file(capture, page, f"pg-{capture.config.slot}-pages-{page.snapshot.table}", f"{page.high[0]:016X}",
                    page_events(page, source, processed_ms), log)


def read_added_tables(capture: Any) -> None:
    """A table added to --tables since the state was written is read online, as the others stream."""
    known = capture.state.get("tables")
    if known is None:  # a state from before tables were recorded: every table was snapshotted
        capture.state["tables"] = list(capture.config.tables)
        return
    being_read = capture.pages.tables_being_read()
    for table in capture.config.tables:
        if table not in known and table not in being_read:
            log.info("%s was added to --tables: reading it online while the others stream", table)
            capture.pages.request(TableSnapshot(table, "added to --tables"))
    capture.state["tables"] = list(capture.config.tables)
