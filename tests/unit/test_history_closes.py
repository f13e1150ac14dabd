"""python_jobs/apply/history_closes.py: a history's chunk closes versions by its snapshot ranges and by
every truncate, the chunk's and those it applied before."""

import pytest

from python_jobs.apply.history_closes import history_closes
from python_jobs.apply.truncate_plan import TruncateError

T1 = "00000000000000000200.00000000000000000000.0000000000.1"
T2 = "00000000000000000300.00000000000000000000.0000000000.1"
RANGE = "00000000000000000250.00000000000000000000.0000000000.1"
LOW = "00000000000000000240.00000000000000000000.0000000000.1"


def test_nothing_closes_without_ranges_or_truncates():
    assert history_closes([], [], ["id"], "m") is None


def test_every_truncate_of_the_chunk_is_a_range_over_every_key_at_its_own_position():
    closes = history_closes([(T2, "truncate", None, "2026-01-01 00:00:00.3"), (T1, "truncate", None, None)], [], ["id"], "m")
    assert [(found["seq"], found["low"], found["after"], found["through"]) for found in closes["ranges"]] == [
        (T1, T1, None, None), (T2, T2, None, None)]
    assert closes["after"] == closes["ranges"] and closes["after_cause"] == "a truncate"
    assert closes["record"] == [{"seq": T1, "time": None}, {"seq": T2, "time": "2026-01-01 00:00:00.3"}]


def test_stored_truncates_close_the_batches_keys_only_and_are_not_recorded_again():
    raw = '{"after": null, "through": {"id": 5}, "low": "' + LOW + '", "key": ["id"]}'
    closes = history_closes([(RANGE, "range", raw, None), (T2, "truncate", None, None)],
                            [(T1, "2026-01-01 00:00:00.2"), (T2, None)], ["id"], "m")
    assert [found["seq"] for found in closes["ranges"]] == [T1, RANGE, T2]
    assert [found["seq"] for found in closes["after"]] == [RANGE, T2]
    # The run's log names what closed the versions no batch touched: a truncate's were said to be ranges'.
    assert closes["after_cause"] == "a truncate and online snapshot ranges"
    assert history_closes([(RANGE, "range", raw, None)], [], ["id"], "m")["after_cause"] == "online snapshot ranges"
    assert closes["record"] == []
    assert closes["truncates"] == [T1, T2]
    assert closes["times"][T1] == "2026-01-01 00:00:00.2"
    assert history_closes([], [(T1, None)], ["id"], "m")["after"] == []


def test_a_truncate_seq_that_is_not_a_position_is_refused():
    with pytest.raises(TruncateError, match="'m'.*not a position"):
        history_closes([("1' or '1", "truncate", None, None)], [], ["id"], "m")
