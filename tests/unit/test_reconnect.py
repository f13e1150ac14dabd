"""A following capture's reconnects (python_jobs/capture/reconnect.py): lost connections waited
out with a doubling wait, anything else raised, a stop during the wait honoured."""

from __future__ import annotations

import threading

import pytest

from python_jobs.capture.reconnect import Backoff, follow_with_reconnects


class Lost(Exception):
    pass


def test_lost_connections_are_waited_out_with_doubling_waits_and_logged(caplog):
    outcomes = [Lost("server closed the connection"), Lost("connection refused"), None]

    def follow():
        outcome = outcomes.pop(0)
        if outcome is not None:
            raise outcome

    backoff = Backoff(first_seconds=0.001, longest_seconds=0.004)
    with caplog.at_level("WARNING", logger="cdc_merge.capture"):
        follow_with_reconnects(follow, lambda error: str(error) if isinstance(error, Lost) else None,
                               threading.Event(), "db:5432", backoff)
    assert outcomes == [] and backoff.attempts == 2
    assert [record.getMessage().split(": reconnecting")[0] for record in caplog.records] == [
        "lost the connection to db:5432 (server closed the connection)", "lost the connection to db:5432 (connection refused)"]
    assert "(attempt 2)" in caplog.records[-1].getMessage()


def test_the_wait_doubles_up_to_its_longest():
    backoff = Backoff()
    assert [backoff.next_wait() for _ in range(8)] == [1, 2, 4, 8, 16, 32, 60, 60]


def test_an_error_a_person_must_fix_is_raised_at_once():
    def follow():
        raise ValueError("replication slot is gone")

    with pytest.raises(ValueError, match="slot is gone"):
        follow_with_reconnects(follow, lambda error: None, threading.Event(), "db", Backoff(first_seconds=0.001))


def test_a_stop_while_waiting_ends_the_follow():
    stop, calls = threading.Event(), []

    def follow():
        calls.append(1)
        stop.set()  # SIGTERM arrives as the connection breaks
        raise Lost("gone")

    follow_with_reconnects(follow, str, stop, "db", Backoff(first_seconds=30))
    assert calls == [1]
