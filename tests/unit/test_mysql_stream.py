"""The MariaDB/MySQL stream's answers to a run's roll requests (roll_requests.py) when its connection
is lost: nothing is held any more, so a run asking meanwhile waits for nothing."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from python_jobs.capture import mysql_stream
from python_jobs.capture.mysql_events import Transaction
from python_jobs.capture.roll_requests import REQUESTS


class LostConnection(ConnectionError):
    pass


def test_a_lost_connection_leaves_nothing_held(tmp_path):
    held_before_loss = []

    def transactions(binlog_file, position, heartbeat):
        yield Transaction(begin_file="binlog.000001", begin_position=4), "binlog.000001", 120  # held, not yet written
        held_before_loss.append(REQUESTS.holding())
        raise LostConnection("server gone")

    capture = SimpleNamespace(tables={}, transactions=transactions,
                              pages=SimpleNamespace(ready=lambda: None, open=object()))
    config = SimpleNamespace(max_changes_per_file=10_000, max_wait_seconds=60.0, progress_seconds=3600.0,
                             state=tmp_path / "state.json")
    with pytest.raises(LostConnection):
        mysql_stream.stream(capture, config, "binlog.000001", 4, stop=threading.Event())
    assert held_before_loss == [True]
    assert REQUESTS.holding() is False
