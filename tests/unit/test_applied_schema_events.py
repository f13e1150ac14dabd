"""python_jobs/apply/applied_schema_events.py: when a mirror's applied schema events answer for the raw log."""

from python_jobs.apply.applied_schema_events import AppliedEvents, after_chunk, known_before

ADDED = ["0003", '{"existing_rows": {"c": 7}}']
LATER = ["0009", '{"existing_rows": {"d": 1}}']


def test_a_chunk_from_the_raw_logs_start_had_nothing_applied_before_it():
    assert known_before({"after": None, "through": "5"}, None) == []


def test_the_process_first_run_of_a_mirror_reads_the_raw_log():
    assert known_before({"after": "5", "through": "6"}, None) is None


def test_a_chunk_at_the_offset_the_process_left_takes_its_events():
    applied = AppliedEvents("5", (tuple(ADDED),))
    assert known_before({"after": "5", "through": "6"}, applied) == [ADDED]


def test_a_mirror_another_process_moved_reads_the_raw_log():
    assert known_before({"after": "7", "through": "8"}, AppliedEvents("5", (tuple(ADDED),))) is None


def test_a_stream_chunk_reads_the_raw_log():
    # A Databend stream's chunk says 'after': None without starting at the raw log's start.
    assert known_before({"after": None, "through": "stream", "stream": "s"}, AppliedEvents("5", ())) is None


def test_after_a_chunk_the_mirror_has_its_events_too_at_the_new_offset():
    applied = after_chunk({"after": "5", "through": "6"}, "6", [ADDED], [LATER], None)
    assert applied == AppliedEvents("6", (tuple(ADDED), tuple(LATER)))
    assert known_before({"after": "6", "through": "7"}, applied) == [ADDED, LATER]


def test_a_quiet_chunk_moves_what_was_kept_on():
    kept = AppliedEvents("5", (tuple(ADDED),))
    assert after_chunk({"after": "5"}, "9", None, [], kept) == AppliedEvents("9", (tuple(ADDED),))


def test_a_quiet_chunk_after_an_offset_the_process_did_not_leave_forgets():
    assert after_chunk({"after": "7"}, "9", None, [], AppliedEvents("5", ())) is None


def test_an_event_seen_twice_is_kept_once():
    applied = after_chunk({"after": "5"}, "6", [ADDED], [ADDED], None)
    assert applied.events == (tuple(ADDED),)


def test_nothing_is_kept_without_an_offset_or_after_a_stream():
    assert after_chunk({"after": "5"}, None, [ADDED], [], None) is None
    assert after_chunk({"after": None, "stream": "s"}, "6", [ADDED], [], None) is None
