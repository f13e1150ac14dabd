"""Online snapshots, whatever the source (docs/online_snapshots.md): the tables being read in pages,
the page between its watermarks, and what a finished page writes. The captures do the I/O: they
write the watermarks, read the page, and tell the stream's changes and watermarks to Pages.

A page's life: opened (its rows read between a low and a high watermark), then the stream meets
the low watermark and the page notes the keys of its table the stream changes until it meets the
high one; then the page is ready, and its rows whose key did not change are written as snapshot
reads at the high watermark's position, with a range record that says which key range the page
covers completely (the apply deletes the mirror's older rows there that the page has not).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Mapping, Sequence

from python_jobs.capture.output import debezium_event
from python_jobs.progress import Progress
from python_jobs.formats.records import canonical_key

Row = dict[str, Any]
# The key's values as the source renders them (the page query compares them), and as the capture
# writes them (the range record's images); None: the table's start or end.
Key = Sequence[str]


# How a page orders a key column: by its number ("number"), by its written text's bytes ("text"), or
# by another value whose written text orders alike ("value": a date, a timestamp, a uuid, a boolean).
KEY_ORDERS = ("number", "text", "value")


@dataclass
class TableSnapshot:
    """A table (or a key range of it) being read in pages; what the capture's state keeps of it."""

    table: str
    reason: str
    after: list[str] | None = None  # the last key read (source text), exclusive; None: from the start
    after_image: dict[str, Any] | None = None  # that key as the capture writes it (the range record's)
    through: list[str] | None = None  # the range's last key (source text), inclusive; None: to the end
    through_image: dict[str, Any] | None = None
    # A requested range's first key is read too (its first page: key >= after); later pages go on after their last.
    start_inclusive: bool = False
    # Only this partition's rows, as the table's (a partition attached: postgres_partitions.py); its
    # pages have no range record, for the table's other rows in their key range are not in them.
    partition: str | None = None
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    pages: int = 0
    rows: int = 0
    # The table's row count as its statistics say when its first page was written (a whole table's
    # snapshot only): the progress line's estimate of what is left.
    estimated_rows: int | None = None

    def as_state(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class OpenPage:
    snapshot: TableSnapshot
    number: int
    key_columns: tuple[str, ...]
    rows: list[Row]  # in key order, as the capture writes values
    last_key: list[str] | None  # the page's last key as the source renders it
    last_image: dict[str, Any] | None
    reaches_end: bool  # fewer rows than asked: the page goes to the range's end
    low: Any = None  # the low watermark's position, once the stream met it
    high: Any = None
    changed: set[str] = field(default_factory=set)
    emptied: bool = False  # a truncate of its table in its window: none of its rows is written
    # Its watermarks' own: a page read again (after a reconnect) ignores those of the earlier reading.
    token: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    # The transactions (PostgreSQL xids) running as its rows were read: their changes are not in the page.
    unseen: frozenset[int] = frozenset()
    # How the page orders each key column (KEY_ORDERS), for the range record: a mirror whose model types
    # a column otherwise would take in keys the page never read (snapshot_ranges.key_order_problem).
    key_order: tuple[str, ...] = ()

    @property
    def watermark_id(self) -> str:
        return f"{self.snapshot.id}:{self.number}:{self.token}"


class Pages:
    """The snapshots a capture is serving, from its state's "snapshots", and its one open page."""

    def __init__(self, state: Sequence[Mapping[str, Any]] = ()) -> None:
        self.snapshots = [TableSnapshot(**entry) for entry in state]
        self.open: OpenPage | None = None
        self.progress: dict[str, Progress] = {}  # by snapshot id
        self._rows_budget_since = time.monotonic()
        self._rows_since = 0

    def state(self) -> list[dict[str, Any]]:
        return [snapshot.as_state() for snapshot in self.snapshots]

    def request(self, snapshot: TableSnapshot) -> None:
        if not self.snapshots:
            # The rate limit counts from the first page of what is read now: the seconds the capture
            # spent with nothing to read earn no rows.
            self._rows_budget_since, self._rows_since = time.monotonic(), 0
        self.snapshots.append(snapshot)

    def request_once(self, snapshot: TableSnapshot, log: Any, met_in_stream: bool = False) -> None:
        """A whole table's (or one partition's) read, unless the same waits unstarted: a statement
        that asks for it may be met again, after a restart, before the state says it was. One whose
        first page is open has started: its SELECT may have read the rows before the change. Unless the
        change was met_in_stream (a statement the stream just read) before that page's low watermark:
        it was in the log before the SELECT ran, which saw it."""
        before_window = met_in_stream and self.open is not None and self.open.low is None
        opened = self.open.snapshot if self.open is not None and not before_window else None
        if any(entry.table == snapshot.table and not entry.pages and entry.after is None and entry.through is None
               and entry.partition in (None, snapshot.partition) and entry is not opened for entry in self.snapshots):
            return
        log.info("%s: reading %s online", snapshot.reason, snapshot.partition or snapshot.table)
        self.request(snapshot)

    def tables_being_read(self) -> list[str]:
        return [snapshot.table for snapshot in self.snapshots]

    def next_to_open(self, rows_per_second: float | None = None) -> TableSnapshot | None:
        """The snapshot whose next page may be read now: none while a page is open, or while the rate
        limit's budget of rows is spent."""
        if self.open is not None or not self.snapshots:
            return None
        if rows_per_second and self._rows_since > rows_per_second * (time.monotonic() - self._rows_budget_since):
            return None
        return self.snapshots[0]

    def opened(self, page: OpenPage) -> None:
        self.open = page
        self._rows_since += len(page.rows)

    def watermark(self, content: Mapping[str, Any], position: Any) -> None:
        """A watermark the stream met: the open page's low or high one (others are of pages gone, e.g.
        before a restart, and say nothing)."""
        page = self.open
        if page is None or content.get("page") != page.watermark_id:
            return
        if content.get("mark") == "low":
            page.low = position
        elif content.get("mark") == "high" and page.low is not None:
            page.high = position

    def changed(self, table: str, key: str) -> None:
        """A change the stream met: its key's page row, if the page's window is open, is left out."""
        page = self.open
        if page is not None and page.snapshot.table == table and page.low is not None and page.high is None:
            page.changed.add(key)

    def emptied(self, table: str) -> None:
        """A truncate the stream met in the page's window: its rows may have been read before it,
        and none of them is the table's any more; the rows written since come from the stream."""
        if self.window_open(table):
            self.open.emptied = True

    def window_open(self, table: str) -> bool:
        page = self.open
        return page is not None and page.snapshot.table == table and page.low is not None and page.high is None

    def ready(self) -> OpenPage | None:
        return self.open if self.open is not None and self.open.high is not None else None

    def finish(self, page: OpenPage, written: int) -> None:
        """The page is written (written: its snapshot reads): its snapshot goes on after it, or is done."""
        snapshot = page.snapshot
        snapshot.pages += 1
        snapshot.rows += written
        if page.reaches_end:
            self.snapshots.remove(snapshot)
        else:
            snapshot.after, snapshot.after_image, snapshot.start_inclusive = page.last_key, page.last_image, False
        self.open = None

    def abandon(self) -> None:
        """The open page is read again (its watermarks were lost: a reconnect)."""
        self.open = None


def page_events(page: OpenPage, source: Callable[[Any, bool], dict[str, Any]], processed_ms: int) -> list[dict[str, Any]]:
    """What a ready page writes: its rows whose key the stream did not change between the watermarks,
    as snapshot reads at the high watermark's position, then its range record.

    source(position, snapshot): the capture's source block of the page's table at a position."""
    at_high = source(page.high, True)
    # Most pages have no key changed in their window: then no row's key is computed.
    rows = [] if page.emptied else [row for row in page.rows if canonical_key(row, "row", page.key_columns)
                                    not in page.changed] if page.changed else page.rows
    events = [
        debezium_event(op="r", before=None, after=row, source=at_high, transaction_id=None, total_order=0,
                       processed_ms=processed_ms)
        for row in rows
    ]
    snapshot = page.snapshot
    # From the key the page starts after (the previous page's last) to its own last, or to the range's end.
    through = snapshot.through_image if page.reaches_end else page.last_image
    if snapshot.partition is None:
        order = dict(zip(page.key_columns, page.key_order)) if page.key_order else None
        events.append(range_record(source(page.high, False), source(page.low, False), snapshot.after_image, through,
                                   processed_ms, page.key_columns, start_inclusive=snapshot.start_inclusive, order=order))
    return events


def range_record(source: Mapping[str, Any], low: Mapping[str, Any], after: Mapping[str, Any] | None,
                 through: Mapping[str, Any] | None, processed_ms: int, key: Sequence[str],
                 start_inclusive: bool = False, order: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The record that a page covers a key range completely: every row the table has in (after,
    through] as of the page's high watermark (its `source`) is a snapshot read there. The apply
    deletes the mirror's rows in the range older than the low watermark (`range.low`): rows the
    source no longer has. after/through: the key as an image ({column: value}); None: the table's
    start or end. key: the key's columns in the order the pages compare them, written as `key` and
    as the images' order (an image kept in the state comes back with its members sorted by name).
    start_inclusive: the range starts at `after` itself (written as `from`). order: how the pages
    ordered each key column ({column: one of KEY_ORDERS})."""
    bound = {"from" if start_inclusive else "after": in_key_order(after, key)}
    ordered = {"order": {name: order[name] for name in key if name in order}} if order else {}
    return {"source": source, "ts_ms": processed_ms,
            "range": {**bound, "through": in_key_order(through, key), "low": low, "key": list(key), **ordered}}


def in_key_order(image: Mapping[str, Any] | None, key: Sequence[str]) -> dict[str, Any] | None:
    """A key image with its members in key order (any members beyond the key after them)."""
    if image is None:
        return None
    return {**{name: image[name] for name in key if name in image}, **image}


def requested_snapshot(request: Mapping[str, Any], key_names: Sequence[str],
                       image: Callable[[int, str], Any]) -> TableSnapshot | str:
    """A cdc-snapshot request (snapshot_requests.py) as the snapshot it asks for, or why it is left out.
    image(i, text): the key's i-th value as the capture writes it (ValueError: not such a value)."""
    bounds: dict[str, tuple[list[str], dict[str, Any]] | None] = {}
    for name in ("from", "to"):
        texts = request.get(name)
        if texts is None:
            bounds[name] = None
            continue
        if len(texts) != len(key_names):
            return f"--{name} {','.join(texts)} is not a key of {', '.join(key_names)}"
        try:
            bounds[name] = (list(texts), {key_names[index]: image(index, text) for index, text in enumerate(texts)})
        except ValueError as error:
            return f"--{name} {','.join(texts)}: {error}"
    start, through = bounds["from"], bounds["to"]
    return TableSnapshot(str(request.get("table")), "requested", after=start[0] if start else None,
                         after_image=start[1] if start else None, through=through[0] if through else None,
                         through_image=through[1] if through else None, start_inclusive=start is not None)


def take_requested(pages: Pages, request: Mapping[str, Any], key_names: Sequence[str],
                   image: Callable[[int, str], Any], log: Any) -> str | None:
    """A request read (requested_snapshot) and its snapshot started; or why it is left out."""
    table = request.get("table")
    snapshot = requested_snapshot(request, key_names, image)
    if isinstance(snapshot, str):
        return snapshot
    pages.request(snapshot)
    log.info("reading %s again online, keys %s to %s", table, ",".join(snapshot.after) if snapshot.after else "start",
             ",".join(snapshot.through) if snapshot.through else "end")
    return None


def write_page_file(capture: Any, page: OpenPage, prefix: str, position_name: str, events: list[dict[str, Any]],
                    log: Any) -> None:
    """A written page's file (its rows and range record, page_events), counted, and its snapshot moved on."""
    snapshot = page.snapshot
    if events:  # none: a partition's page without rows
        capture.output.write(prefix, position_name, f"{snapshot.id}-{page.number:06d}", events)
        capture.summary.files += 1
    rows = len(events) - (snapshot.partition is None)  # and its range record
    capture.summary.snapshot_rows += rows
    if snapshot.estimated_rows is None and snapshot.after is None and snapshot.through is None and not snapshot.partition:
        snapshot.estimated_rows = capture.estimated_rows(snapshot.table)
    progress = capture.pages.progress.setdefault(snapshot.id, Progress(
        f"reading {snapshot.table} online ({snapshot.reason})", "rows", snapshot.estimated_rows, estimated=True,
        done=snapshot.rows))
    capture.pages.finish(page, rows)
    line = progress.advance(rows)
    if line and not page.reaches_end:
        log.info("%s", line)
    if page.reaches_end:
        capture.pages.progress.pop(snapshot.id, None)
        log.info("online snapshot of %s done: %d rows in %d pages", page.snapshot.table, page.snapshot.rows,
                 page.snapshot.pages)

