"""Online snapshots without a server (docs/online_snapshots.md): the open page between its
watermarks (python_jobs/capture/snapshot_pages.py), the records a passed page writes, how the
landing reads its range record (auto-detected Debezium), and the key ranges the apply takes from
it (python_jobs/apply/snapshot_ranges.py)."""

from __future__ import annotations

import json
import logging

from python_jobs.apply.snapshot_ranges import snapshot_ranges
from python_jobs.capture.snapshot_pages import OpenPage, Pages, TableSnapshot, page_events
from python_jobs.formats.detect import parse_line
from python_jobs.formats.records import ACTION_RANGE, STATUS_EVENT, TABLE_KEY


def source(position, snapshot):
    commit_lsn, lsn = position
    return {"connector": "postgresql", "db": "shop", "schema": "shop", "table": "items", "lsn": lsn,
            "commit_lsn": commit_lsn, "ts_ms": None, "snapshot": "true" if snapshot else "false"}


def opened(pages: Pages, rows: list[dict], reaches_end: bool = False) -> OpenPage:
    snapshot = pages.next_to_open()
    page = OpenPage(snapshot=snapshot, number=snapshot.pages, key_columns=("id",), rows=rows,
                    last_key=[str(rows[-1]["id"])] if rows else None,
                    last_image={"id": rows[-1]["id"]} if rows else None, reaches_end=reaches_end)
    pages.opened(page)
    return page


def test_a_page_drops_the_keys_changed_between_its_watermarks_and_only_those():
    pages = Pages()
    pages.request(TableSnapshot("shop.items", "first snapshot"))
    page = opened(pages, [{"id": 1, "qty": 5}, {"id": 2, "qty": 6}, {"id": 3, "qty": 7}])
    pages.changed("shop.items", '["1"]')  # before the low watermark: the page read it after
    pages.watermark({"page": "another:0", "mark": "low"}, (10, 10))  # of a page a restart left behind
    assert page.low is None
    pages.watermark({"page": page.watermark_id, "mark": "low"}, (20, 18))
    pages.changed("shop.orders", '["2"]')  # another table
    pages.changed("shop.items", '["3"]')
    assert pages.ready() is None
    pages.watermark({"page": page.watermark_id, "mark": "high"}, (30, 29))
    pages.changed("shop.items", '["2"]')  # after the high watermark: newer than the page's row anyway
    assert pages.ready() is page

    events = page_events(page, source, processed_ms=1)
    reads, (record,) = events[:-1], events[-1:]
    assert [event["after"]["id"] for event in reads] == [1, 2]
    assert all(event["op"] == "r" and event["source"]["commit_lsn"] == 30 for event in reads)
    # The range is the page's, dropped keys too: their changes are in the log, newer than the low watermark.
    assert record["range"] == {"after": None, "through": {"id": 3}, "low": source((20, 18), False), "key": ["id"]}
    assert record["source"]["commit_lsn"] == 30


def test_a_snapshot_goes_on_after_its_last_page_and_ends_with_the_range_to_the_end():
    pages = Pages()
    pages.request(TableSnapshot("shop.items", "requested", after=["100"], after_image={"id": 100}, start_inclusive=True))
    first = opened(pages, [{"id": 100}, {"id": 150}])
    for mark, position in (("low", (1, 1)), ("high", (2, 2))):
        pages.watermark({"page": first.watermark_id, "mark": mark}, position)
    assert page_events(first, source, 0)[-1]["range"]["from"] == {"id": 100}
    pages.finish(first, 2)
    snapshot = pages.snapshots[0]
    assert (snapshot.after, snapshot.after_image, snapshot.start_inclusive, snapshot.pages) == (["150"], {"id": 150}, False, 1)

    last = opened(pages, [{"id": 151}], reaches_end=True)
    for mark, position in (("low", (3, 3)), ("high", (4, 4))):
        pages.watermark({"page": last.watermark_id, "mark": mark}, position)
    assert page_events(last, source, 0)[-1]["range"] == {"after": {"id": 150}, "through": None, "low": source((3, 3), False),
                                                         "key": ["id"]}
    pages.finish(last, 1)
    assert pages.snapshots == [] and pages.next_to_open() is None


def test_the_rate_limit_holds_the_next_page_until_its_rows_are_due():
    pages = Pages()
    pages.request(TableSnapshot("shop.items", "first snapshot"))
    page = opened(pages, [{"id": n} for n in range(1, 1001)])
    pages.finish(page, 1000)
    assert pages.next_to_open(rows_per_second=10) is None  # 1,000 rows read: due in 100 s
    assert pages.next_to_open() is pages.snapshots[0]


def test_the_rate_limit_counts_from_the_request_not_from_the_capture_start(monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr("python_jobs.capture.snapshot_pages.time.monotonic", lambda: clock[0])
    pages = Pages()
    clock[0] += 3600  # an hour with nothing to read
    pages.request(TableSnapshot("shop.items", "first snapshot"))
    pages.finish(opened(pages, [{"id": n} for n in range(1, 101)]), 100)
    clock[0] += 5
    assert pages.next_to_open(rows_per_second=10) is None  # 100 rows read: due 10 s after the request
    clock[0] += 5.5
    assert pages.next_to_open(rows_per_second=10) is pages.snapshots[0]


def test_the_state_keeps_what_a_restart_resumes_from():
    pages = Pages()
    pages.request(TableSnapshot("shop.items", "added to --tables", after=["7"], after_image={"id": 7}))
    again = Pages(json.loads(json.dumps(pages.state())))
    assert again.state() == pages.state() and again.open is None


def test_a_range_record_lands_as_a_table_event_with_its_low_watermark_seq():
    record = {"source": source((30, 29), False), "ts_ms": 1795850263497,
              "range": {"after": {"id": 469}, "through": {"id": 914}, "low": source((20, 18), False)}}
    (parsed,) = parse_line(json.dumps(record), {"shop.items": ["id"]})
    assert (parsed.status, parsed.action, parsed.key, parsed.table_name) == (STATUS_EVENT, ACTION_RANGE, TABLE_KEY, "shop.items")
    raw = json.loads(parsed.raw_data)
    assert raw["after"] == {"id": 469} and raw["through"] == {"id": 914}
    assert raw["low"] < parsed.seq and raw["low"].startswith("00000000000000000020.00000000000000000018")

    bad = {**record, "range": {**record["range"], "through": 914}}
    (rejected,) = parse_line(json.dumps(bad), {"shop.items": ["id"]})
    assert "field 'range.through' is 914, not a key image" in rejected.reason


def test_the_apply_reads_ranges_in_seq_order_with_every_key_column_or_leaves_them_out():
    events = [
        ["0002", '{"after":{"order_id":1,"LINE":"b"},"through":null,"low":"0001"}'],
        ["0001", '{"from":{"order_id":1,"line":"a"},"through":{"order_id":1,"line":"b"},"low":"0000"}'],
        ["0003", '{"after":{"order_id":2},"through":null,"low":"0002"}'],  # not this mirror's key
        ["0004", '{"after":null,"through":null,"low":7}'],  # a low that is not a seq
        ["0005", None],
    ]
    ranges = snapshot_ranges(events, ["order_id", "line"])
    assert [(r["seq"], r["low"]) for r in ranges] == [("0001", "0000"), ("0002", "0001")]
    first, second = ranges
    assert first["after"] is None and first["from"] == [{"name": "order_id", "image": '{"order_id":1}'},
                                                        {"name": "line", "image": '{"line":"a"}'}]
    assert first["through"][1] == {"name": "line", "image": '{"line":"b"}'}
    assert second["after"][1] == {"name": "line", "image": '{"line":"b"}'} and second["through"] is None


def test_a_range_keeps_the_order_of_its_key_which_a_model_may_list_otherwise():
    # The landing keeps the images' own order as "key" (a VARIANT keeps an object's members by name).
    record = {"source": source((30, 29), False), "ts_ms": 1,
              "range": {"after": {"order_id": 1, "line": "b"}, "through": None, "low": source((20, 18), False)}}
    (parsed,) = parse_line(json.dumps(record), {"shop.items": ["order_id", "line"]})
    assert json.loads(parsed.raw_data)["key"] == ["order_id", "line"]
    (ranged,) = snapshot_ranges([["0001", '{"after":{"line":"b","order_id":1},"through":null,"low":"0000",'
                                           '"key":["order_id","line"]}']], ["line", "order_id"])
    assert [bound["name"] for bound in ranged["after"]] == ["order_id", "line"]


def test_a_page_after_a_restart_writes_and_lands_its_range_in_the_order_of_the_key_not_of_the_names():
    # The state file keeps a snapshot's last key with its members sorted by name (line before order_id).
    pages = Pages()
    pages.request(TableSnapshot("shop.items", "first snapshot"))
    first = OpenPage(snapshot=pages.next_to_open(), number=0, key_columns=("order_id", "line"),
                     rows=[{"order_id": 1, "line": "b"}], last_key=["1", "b"], last_image={"order_id": 1, "line": "b"},
                     reaches_end=False, key_order=("number", "text"))
    pages.opened(first)
    pages.finish(first, 1)
    again = Pages(json.loads(json.dumps(pages.state(), sort_keys=True)))
    assert list(again.snapshots[0].after_image) == ["line", "order_id"]
    page = OpenPage(snapshot=again.next_to_open(), number=1, key_columns=("order_id", "line"),
                    rows=[{"order_id": 2, "line": "a"}], last_key=["2", "a"], last_image={"order_id": 2, "line": "a"},
                    reaches_end=True, key_order=("number", "text"))
    again.opened(page)
    for mark, position in (("low", (1, 1)), ("high", (2, 2))):
        again.watermark({"page": page.watermark_id, "mark": mark}, position)
    record = page_events(page, source, 0)[-1]
    assert list(record["range"]["after"]) == ["order_id", "line"] and record["range"]["key"] == ["order_id", "line"]
    # (1,'b') to the end: (1,'c') is in the range, (2,'a') beyond 'b' by the names' order would not be.
    (ranged,) = snapshot_ranges([["0002", parse_line(json.dumps(record), {"shop.items": ["order_id", "line"]})[0].raw_data]],
                                ["line", "order_id"])
    assert [bound["name"] for bound in ranged["after"]] == ["order_id", "line"]


def test_the_landing_takes_a_ranges_key_order_from_its_key_or_its_order_before_its_images():
    bounds = {"after": {"line": "b", "order_id": 1}, "through": None, "low": source((20, 18), False)}
    for extra in ({"key": ["order_id", "line"]}, {"order": {"order_id": "number", "line": "text"}}):
        record = {"source": source((30, 29), False), "ts_ms": 1, "range": {**bounds, **extra}}
        (parsed,) = parse_line(json.dumps(record), {"shop.items": ["order_id", "line"]})
        assert json.loads(parsed.raw_data)["key"] == ["order_id", "line"], extra


def test_a_request_becomes_a_snapshot_of_its_range_or_says_why_not():
    from python_jobs.capture.snapshot_pages import requested_snapshot

    image = (lambda index, text: int(text) if index == 0 else text)
    snapshot = requested_snapshot({"table": "shop.lines", "from": ["10", "a"], "to": ["20", "z"]}, ["order_id", "line"], image)
    assert (snapshot.after, snapshot.after_image, snapshot.start_inclusive) == (["10", "a"], {"order_id": 10, "line": "a"}, True)
    assert (snapshot.through, snapshot.through_image) == (["20", "z"], {"order_id": 20, "line": "z"})
    whole = requested_snapshot({"table": "shop.lines", "from": None, "to": None}, ["order_id", "line"], image)
    assert (whole.after, whole.through, whole.start_inclusive) == (None, None, False)
    assert requested_snapshot({"table": "t", "from": ["1"], "to": None}, ["order_id", "line"], image) == \
        "--from 1 is not a key of order_id, line"
    assert "--to x,a" in requested_snapshot({"table": "t", "from": None, "to": ["x", "a"]}, ["order_id", "line"], image)


def test_a_read_asked_for_again_while_its_first_page_is_open_is_queued_unless_met_before_the_window():
    log = logging.getLogger("test")
    pages = Pages()
    pages.request(TableSnapshot("shop.t", "first"))
    page = opened(pages, [{"id": 1}])
    # A statement the stream met before the page's low watermark: the page's SELECT saw what it did.
    pages.request_once(TableSnapshot("shop.t", "altered"), log, met_in_stream=True)
    assert len(pages.snapshots) == 1
    # Met inside the window, or noticed in the catalog at no position: the page may hold rows from before.
    page.low = 10
    pages.request_once(TableSnapshot("shop.t", "altered"), log, met_in_stream=True)
    assert len(pages.snapshots) == 2
    pages.request_once(TableSnapshot("shop.t", "replaced"), log)
    assert len(pages.snapshots) == 2  # the one queued waits unstarted


def test_a_number_key_the_model_casts_to_text_is_a_problem_and_text_keys_are_not():
    from python_jobs.apply.snapshot_ranges import key_order_problem

    (numbers,) = snapshot_ranges([["0001", '{"from":{"id":10},"through":{"id":20},"low":"0000","key":["id"]}']], ["id"])
    (texts,) = snapshot_ranges([["0001", '{"from":{"id":"10"},"through":{"id":"20"},"low":"0000","key":["id"]}']], ["id"])
    said = key_order_problem([numbers], {"id": "string"}, "customers")
    assert said.startswith("cdc_merge model 'customers': unique_key column id is string in the model but a number at the source")
    assert "from 10 to 20" in said and "dbt run --full-refresh --select customers" in said
    assert key_order_problem([numbers], {"ID": "Nullable(String)"}, "customers") is not None  # Databend's type
    assert key_order_problem([numbers], {"id": "bigint"}, "customers") is None
    assert key_order_problem([texts], {"id": "string"}, "customers") is None  # keys the capture pages as text (numeric)


def test_a_page_says_how_it_ordered_its_key_and_the_range_carries_it_to_the_apply():
    from python_jobs.apply.snapshot_ranges import key_order_problem
    from python_jobs.capture import mysql_pages, postgres_pages
    from python_jobs.capture.mysql_events import Column
    from python_jobs.capture.postgres_columns import CatalogColumn

    assert [postgres_pages.key_order(CatalogColumn(1, "k", name)) for name in
            ("bigint", "numeric(10,2)", "numeric", "text", "character varying(20)", "date", "uuid", "interval")] == [
        "number", "number", "text", "text", "text", "value", "value", "text"]
    assert [mysql_pages.key_order(Column("k", data_type, column_type)) for data_type, column_type in
            (("int", "int(11)"), ("decimal", "decimal(10,2)"), ("decimal", "decimal(60,2)"), ("varchar", "varchar(10)"),
             ("enum", "enum('a')"), ("year", "year(4)"), ("bit", "bit(8)"), ("datetime", "datetime"), ("time", "time"))] == [
        "number", "number", "text", "text", "text", "number", "number", "value", "text"]

    pages = Pages()
    pages.request(TableSnapshot("shop.items", "first snapshot"))
    page = opened(pages, [{"code": "10", "id": "10"}, {"code": "9", "id": "9"}])
    page.key_columns, page.key_order, page.low, page.high = ("code",), ("text",), (10, 9), (12, 11)
    page.last_image = {"code": "9"}
    record = page_events(page, source, 1795850263497)[-1]
    assert record["range"]["order"] == {"code": "text"}
    (parsed,) = parse_line(json.dumps(record), {"shop.items": ["code"]})
    (planned,) = snapshot_ranges([[parsed.seq, parsed.raw_data]], ["code"])
    assert planned["order"] == {"code": "text"}
    # Text keys ('10' before '9') in a model that casts them to a number: as numbers 9 comes first.
    said = key_order_problem([planned], {"code": "int"}, "items")
    assert "unique_key column code is int in the model but ordered by its text at the source" in said
    assert "Cast the column to string" in said and "dbt run --full-refresh --select items" in said
    assert key_order_problem([planned], {"code": "string"}, "items") is None
    # A numeric key the capture writes as text ("12.50") is a number to its pages: text in the model orders otherwise.
    (decimals,) = snapshot_ranges([["0001", '{"from":{"id":"12.50"},"through":null,"low":"0000","key":["id"],'
                                            '"order":{"id":"number"}}']], ["id"])
    assert key_order_problem([decimals], {"id": "string"}, "items") is not None
    assert key_order_problem([decimals], {"id": "decimal(10,2)"}, "items") is None
    (dates,) = snapshot_ranges([["0001", '{"from":{"d":"2024-01-21"},"through":null,"low":"0000","key":["d"],'
                                         '"order":{"d":"value"}}']], ["d"])
    assert key_order_problem([dates], {"d": "string"}, "items") is None  # ISO text orders as the dates do
