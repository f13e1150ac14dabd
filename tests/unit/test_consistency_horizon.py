"""The consistency group's horizon (python_jobs/apply/consistency_horizon.py), case by case."""

from __future__ import annotations

import json

from python_jobs.apply.consistency_horizon import ScanRow, decide, offset_after_chunk, scan_rows

MARKERS = "_cdc_merge.transactions"


def events(tx, table, snapshot, count=1):
    return ScanRow(tx, table, snapshot, count)


def end(tx, snapshot, seq, count=None, tables=None):
    return ScanRow(tx, MARKERS, snapshot, 1, marker_seq=seq, marker_events=count,
                   marker_tables=json.dumps({"tables": tables}) if tables is not None else None)


def test_whole_transactions_are_applied_and_the_tail_start_moves_to_the_newest_snapshot():
    rows = [events("t1", "shop.orders", "s1"), events("t1", "shop.lines", "s1", 2), end("t1", "s1", "001", 3),
            events("t2", "shop.orders", "s2"), end("t2", "s2", "002", 1)]
    horizon = decide(["s1", "s2"], None, None, rows)
    assert (horizon.cut_seq, horizon.deferred, horizon.tail_start, horizon.through) == ("002", (), "s2", "s2")
    assert (horizon.applied_transactions, horizon.settled) == (2, ())


def test_a_transaction_split_across_landing_batches_waits_and_the_tail_starts_right_before_it():
    # t2's lines land in s3: at s2 its END counts 3 events, 1 landed.
    rows = [events("t1", "shop.orders", "s1"), end("t1", "s1", "001", 1),
            events("t2", "shop.orders", "s2"), end("t2", "s2", "002", 3, {"shop.orders": 1, "shop.lines": 2})]
    horizon = decide(["s1", "s2"], None, None, rows)
    assert (horizon.cut_seq, horizon.deferred, horizon.tail_start, horizon.settled) == ("001", ("t2",), "s1", ())

    # The next run reads from s1: t2 is whole now.
    rows = [rows[2], rows[3], events("t2", "shop.lines", "s3", 2)]
    horizon = decide(["s2", "s3"], "s1", "001", rows)
    assert (horizon.cut_seq, horizon.deferred, horizon.tail_start) == ("002", (), "s3")


def test_a_transaction_after_one_that_is_not_whole_waits_too_though_it_is_whole():
    rows = [events("t1", "shop.orders", "s1"), end("t1", "s1", "001", 2),
            events("t2", "shop.orders", "s1"), end("t2", "s1", "002", 1)]
    horizon = decide(["s1"], "s0", "000", rows)
    assert (horizon.cut_seq, horizon.deferred, horizon.tail_start) == ("000", ("t1", "t2"), "s0")


def test_a_transaction_without_its_end_yet_is_deferred_but_does_not_hold_the_horizon():
    rows = [events("t1", "shop.orders", "s1"), end("t1", "s2", "001", 1), events("t2", "shop.orders", "s2")]
    horizon = decide(["s1", "s2"], None, None, rows)
    assert (horizon.cut_seq, horizon.deferred, horizon.tail_start) == ("001", ("t2",), "s1")
    # t1's END is after the tail start: the next window sees it without t1's events.
    assert horizon.settled == ("t1",)


def test_a_settled_transaction_seen_in_part_is_neither_open_nor_short_of_events():
    # A topic lagging a wave: t1's transfer lands in s2 with t2's first events; t1 was applied.
    rows = [events("t1", "bank.transfers", "s2"), events("t2", "bank.accounts", "s2"),
            end("t2", "s2", "002", 2, {"bank.accounts": 1, "bank.transfers": 1}), events("t2", "bank.transfers", "s3")]
    horizon = decide(["s2", "s3"], "s1", "001", rows, settled=["t1"])
    assert (horizon.cut_seq, horizon.deferred, horizon.tail_start, horizon.settled) == ("002", (), "s3", ())
    # t1's marker seen again with only part of its events still counts as applied.
    rows = [events("t1", "bank.transfers", "s2"), end("t1", "s2", "001", 3)]
    assert decide(["s2"], "s1", None, rows, settled=["t1"]).cut_seq == "001"


def test_a_tail_that_cannot_move_keeps_every_applied_transaction_of_the_window_settled():
    rows = [events("t9", "shop.orders", "s1"), events("t1", "shop.orders", "s1"), end("t1", "s1", "001", 1)]
    horizon = decide(["s1"], "s0", None, rows, settled=["t0"])
    assert (horizon.deferred, horizon.tail_start, horizon.settled) == (("t9",), "s0", ("t0", "t1"))


def test_duplicates_do_not_make_a_transaction_look_whole_early_and_markers_without_counts_close_it():
    # The scan counts distinct events, so a file landed twice counts once; wal2json's C has no count.
    rows = [events("t1", "public.a", "s1"), end("t1", "s1", "001")]
    assert decide(["s1"], None, None, rows).deferred == ()
    rows = [events("t1", "shop.orders", "s1", 1), end("t1", "s1", "001", 2)]
    assert decide(["s1"], None, None, rows).deferred == ("t1",)


def test_nothing_in_the_window_keeps_the_previous_cut_and_moves_the_tail_start_to_the_newest_snapshot():
    horizon = decide(["s5"], "s4", "009", [])
    assert (horizon.cut_seq, horizon.deferred, horizon.tail_start, horizon.through) == ("009", (), "s5", "s5")
    horizon = decide([], "s4", "009", [])
    assert (horizon.tail_start, horizon.through) == ("s4", "s4")


def test_scan_rows_reads_query_rows_with_numbers_as_text_or_decimals_and_empty_for_null():
    (row,) = scan_rows([{"tx_id": 7, "table_name": MARKERS, "snapshot_id": 123, "events": "1",
                         "marker_seq": "001", "marker_events": 2.0, "marker_tables": ""}])
    assert row == ScanRow("7", MARKERS, "123", 1, "001", 2, None)
    (row,) = scan_rows([{"tx_id": "t", "table_name": "a.b", "snapshot_id": "s", "events": 3,
                         "marker_seq": "", "marker_events": -1, "marker_tables": ""}])
    assert row == ScanRow("t", "a.b", "s", 3)


def test_the_cut_lag_is_the_newest_commit_in_the_window_minus_the_newest_applied():
    rows = [ScanRow("t1", "shop.orders", "s1", 1, source_ts="2026-11-26 08:00:00.5"),
            ScanRow("t1", MARKERS, "s1", 1, marker_seq="001", marker_events=1, source_ts="2026-11-26 08:00:01"),
            ScanRow("t2", "shop.orders", "s1", 1, source_ts="2026-11-26 08:00:09.25")]
    horizon = decide(["s1"], None, None, rows)
    assert (horizon.cut_source_ts, horizon.lag_seconds) == ("2026-11-26 08:00:01", 8.25)
    rows.append(ScanRow("t2", MARKERS, "s1", 1, marker_seq="002", marker_events=1, source_ts="2026-11-26 08:00:10"))
    assert decide(["s1"], None, None, rows).lag_seconds == 0.0
    assert decide(["s1"], None, None, []).lag_seconds is None


def test_a_cut_that_applies_no_new_transaction_keeps_the_latest_cuts_source_commit():
    # A --full-refresh of a group with nothing new: the cut is written again, as far as the last one.
    horizon = decide(["s1"], "s1", "001", [], previous_cut_source_ts="2026-11-26 08:00:01")
    assert (horizon.cut_source_ts, horizon.lag_seconds) == ("2026-11-26 08:00:01", 0.0)
    # A transaction still waiting: the lag counts from that cut's commit.
    waiting = [ScanRow("t2", "shop.orders", "s2", 1, source_ts="2026-11-26 08:00:04")]
    horizon = decide(["s2"], "s1", "001", waiting, previous_cut_source_ts="2026-11-26 08:00:01")
    assert (horizon.cut_source_ts, horizon.lag_seconds, horizon.deferred) == ("2026-11-26 08:00:01", 3.0, ("t2",))


def test_a_chunk_never_moves_the_offset_past_the_tail_start():
    pending = ["s1", "s2", "s3", "s4"]
    assert [offset_after_chunk(pending, "s2", through) for through in pending] == ["s1", "s2", "s2", "s2"]
    # A tail start before the mirror's offset, or the start of the log: every chunk stays there.
    assert {offset_after_chunk(pending, tail, "s1") for tail in ("s0", None)} == {"s0", None}
    assert offset_after_chunk(pending, "s4", "s3") == "s3"
