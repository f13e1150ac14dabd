"""Progress lines of long work (python_jobs/progress.py)."""

from python_jobs.progress import Progress, duration_text


def test_a_line_comes_every_few_seconds_with_rate_and_time_left():
    now = [0.0]
    progress = Progress("reading shop.items online", "rows", total=1000, estimated=True, every_seconds=5,
                        clock=lambda: now[0])
    now[0] = 2.0
    assert progress.advance(100) is None  # not due yet
    now[0] = 5.0
    assert progress.advance(150) == "reading shop.items online: 250 of about 1,000 rows (25%), 50 rows/s, about 15 s left"
    now[0] = 6.0
    assert progress.advance(10) is None


def test_without_a_total_the_line_has_the_rate_only():
    now = [0.0]
    progress = Progress("landing", "events", clock=lambda: now[0])
    now[0] = 10.0
    assert progress.advance(5000) == "landing: 5,000 events, 500 events/s"


def test_durations_read_in_the_unit_that_fits():
    assert [duration_text(s) for s in (12, 600, 7200)] == ["12 s", "10 min", "2.0 h"]
