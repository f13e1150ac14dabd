"""A --resnapshot refuses a source whose log started over below what the capture had written
(python_jobs/capture/log_continues.py)."""

from __future__ import annotations

import pytest

from python_jobs.capture.log_continues import (
    REPLACED_THROUGH,
    check_log_continues,
    mysql_position,
    mysql_written,
    postgres_written,
)
from python_jobs.capture.output import CaptureError


def test_the_highest_lsn_the_state_names_is_the_one_written():
    assert postgres_written({}) is None
    assert postgres_written({"snapshot_lsn": "0/16B3748", "written_lsn": "1/A0"}) == ((0x1000000A0,), "1/A0")
    assert postgres_written({"snapshot_lsn": "2/0", "written_lsn": "1/A0"}) == ((0x200000000,), "2/0")
    # Kept by a resnapshot under way, whose state holds no other position.
    assert postgres_written({"resnapshot": True, REPLACED_THROUGH: "3/10"}) == ((0x300000010,), "3/10")


def test_a_binlog_position_orders_by_the_number_its_file_ends_in_then_the_offset():
    assert mysql_position("mysql-bin.000010", 4) > mysql_position("mysql-bin.000009", 99_999)
    # Another base name (log_bin changed) orders by the number, as the events' seqs do.
    assert mysql_position("mariadb-bin.000002", 500) > mysql_position("mysql-bin.000002", 499)
    assert mysql_written({"file": "mysql-bin.000003", "pos": 1234}) == ((3, 1234), "mysql-bin.000003:1234")
    assert mysql_written({"resnapshot": True, REPLACED_THROUGH: "mysql-bin.000003:1234"}) == ((3, 1234), "mysql-bin.000003:1234")
    assert mysql_written({"resnapshot": True}) is None


def test_a_log_behind_the_written_position_is_refused_with_what_to_do():
    check_log_continues("src", None, "", (5,), "5", "state.json")
    check_log_continues("src", (3, 10), "f.3:10", (3, 10), "f.3:10", "state.json")
    check_log_continues("src", (3, 10), "f.3:10", (4, 4), "f.4:4", "state.json")
    with pytest.raises(CaptureError, match=r"src's log is now at f\.1:4, before f\.3:10, where state\.json says.*"
                                           r"started over.*Nothing was done.*--full-refresh"):
        check_log_continues("src", (3, 10), "f.3:10", (1, 4), "f.1:4", "state.json")
