"""What a consistency group's mirrors share in one invocation (python_jobs/apply/consistency_runs.py)."""

from __future__ import annotations

import threading
import time

from python_jobs.apply.consistency_runs import GroupRuns, cut_behind


def test_every_mirror_of_a_group_gets_the_first_horizon_decided_in_its_invocation():
    runs = GroupRuns()
    assert runs.horizon("inv-1", "shop") is None
    first = runs.keep_horizon("inv-1", "shop", lambda: {"through": "s2"})
    # A mirror that decided at the same time (after the first one's wait ran out) takes the first.
    assert runs.keep_horizon("inv-1", "shop", lambda: {"through": "s3"}) is first
    assert runs.horizon("inv-1", "shop") == {"through": "s2"}
    # The next invocation decides again, and forgets the one before.
    assert runs.keep_horizon("inv-2", "shop", lambda: {"through": "s3"}) == {"through": "s3"}
    assert runs.horizon("inv-1", "shop") is None


def test_the_cut_is_returned_once_when_the_last_member_is_done():
    runs = GroupRuns()
    members = ["m.orders", "m.lines"]
    assert runs.member_done("inv-1", "shop", "m.orders", "11", members) is None
    assert runs.member_done("inv-1", "bank", "m.accounts", "5", ["m.accounts"]) == {"snapshots": {"m.accounts": "5"}, "applied": True}
    assert runs.member_done("inv-1", "shop", "m.lines", "22", members) == {"snapshots": {"m.lines": "22", "m.orders": "11"},
                                                                           "applied": True}
    # The next invocation starts from no member done.
    assert runs.member_done("inv-2", "shop", "m.lines", "23", members) is None


def test_every_consistent_read_of_one_model_reads_the_cut_it_looked_up_first():
    runs = GroupRuns()
    assert runs.reader_cut("inv-1", "model.p.report", "shop") is None
    assert runs.keep_reader_cut("inv-1", "model.p.report", "shop", {"m.orders": "11"}) == {"m.orders": "11"}
    assert runs.keep_reader_cut("inv-1", "model.p.report", "shop", {"m.orders": "12"}) == {"m.orders": "11"}
    assert runs.keep_reader_cut("inv-1", "model.p.other", "shop", {"m.orders": "12"}) == {"m.orders": "12"}


def test_a_mirror_waits_for_the_one_deciding_and_takes_over_when_it_never_does():
    runs = GroupRuns(wait_seconds=5)
    assert runs.horizon("inv-1", "shop") is None  # this caller decides
    got = []
    waiter = threading.Thread(target=lambda: got.append(runs.horizon("inv-1", "shop")))
    waiter.start()
    time.sleep(0.2)
    assert got == []  # still waiting
    runs.keep_horizon("inv-1", "shop", lambda: {"through": "s2"})
    waiter.join(timeout=5)
    assert got == [{"through": "s2"}]

    impatient = GroupRuns(wait_seconds=0.2)
    assert impatient.horizon("inv-1", "shop") is None
    started = time.monotonic()
    assert impatient.horizon("inv-1", "shop") is None  # the first never decided: this one does
    assert 0.15 < time.monotonic() - started < 2


def test_a_catalog_transaction_stays_open_until_published_or_failed():
    runs = GroupRuns()
    assert runs.transactions_left_open() == [] and not runs.transaction_open("inv", "bank")
    runs.joined_transaction("inv", "bank")
    runs.joined_transaction("inv", "bank")  # every mirror of the group joins
    runs.joined_transaction("inv", "shop")
    assert runs.transaction_open("inv", "bank") and not runs.transaction_open("other", "bank")
    runs.transaction_closed("inv", "bank")  # the cut published it
    # At the invocation's end only the group whose cut never came is left to publish.
    assert runs.transactions_left_open() == [("inv", "shop")]
    runs.transaction_closed("inv", "shop")
    runs.transaction_closed("inv", "shop")
    assert runs.transactions_left_open() == []


def test_another_invocation_does_not_forget_a_transaction_left_open():
    runs = GroupRuns()
    runs.joined_transaction("first", "bank")
    runs.keep_horizon("second", "bank", lambda: {"through": "2"})
    assert runs.transactions_left_open() == [("first", "bank")]


def test_a_member_with_nothing_new_counts_done_and_a_cut_needs_one_that_applied():
    runs = GroupRuns()
    members = ["m.orders", "m.lines"]
    runs.keep_horizon("inv-1", "shop", lambda: {"through": "s2"})
    assert runs.member_done("inv-1", "shop", "m.orders", "11", members, applied=False) is None
    assert runs.member_done("inv-1", "shop", "m.lines", "22", members) == {"snapshots": {"m.lines": "22", "m.orders": "11"},
                                                                           "applied": True}
    assert runs.decided_horizon("inv-1", "shop") == {"through": "s2"}
    # Nothing new in any member: the caller asks whether the latest cut is behind them; no horizon is decided.
    assert runs.member_done("inv-2", "shop", "m.orders", "11", members, applied=False) is None
    assert runs.member_done("inv-2", "shop", "m.lines", "22", members, applied=False) == {
        "snapshots": {"m.lines": "22", "m.orders": "11"}, "applied": False}
    assert runs.decided_horizon("inv-2", "shop") is None
    assert runs.horizon("inv-2", "shop") is None  # the caller that asks to decide still may


def test_a_cut_is_behind_idle_members_only_where_it_reads_another_state_of_one():
    snapshots = {"m.lines": "22", "m.orders": "11"}
    assert not cut_behind([("m.orders", "11"), ("m.lines", "22")], snapshots)
    assert cut_behind([("m.orders", "11"), ("m.lines", "21")], snapshots)  # lines caught up in a run of it alone
    assert cut_behind([("m.orders", "11")], snapshots)  # lines joined the group after the cut
    assert cut_behind([], snapshots)  # no cut yet
    assert not cut_behind([("m.orders", 11), ("m.lines", 22)], snapshots)  # an engine's numbers compare as text
