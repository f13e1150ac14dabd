"""cdc-run --capture's supervision of capture processes (scheduler/captures.py), with small Python
children standing in for the capture commands: milliseconds to a second, no database."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import threading
import time

import pytest

from python_jobs.scheduler.captures import Captures, CaptureStartError

# Prints its arguments, then waits for SIGTERM and exits 0, as a following capture does.
FOLLOWING = (
    "import signal, sys, threading; stop = threading.Event(); signal.signal(signal.SIGTERM, lambda *_: stop.set());"
    "print(' '.join(sys.argv[1:]), flush=True); stop.wait(30); print('stopped cleanly', flush=True)"
)
FAILING = "import sys; print('cdc-capture-postgres: replication slot x is gone', flush=True); sys.exit(2)"


def command(code: str, *args: str) -> str:
    return shlex.join([sys.executable, "-c", code, *args])


def wait_until_started(capture) -> None:
    """Until its first line: its SIGTERM handler is set."""
    for _ in range(2000):
        if capture.tail:
            return
        threading.Event().wait(0.01)
    raise AssertionError("the capture printed nothing in 20 s")


def test_a_capture_that_ends_stops_the_service_with_its_last_words():
    ended = threading.Event()
    captures = Captures([command(FOLLOWING, "--out", "inbox"), command(FAILING)], ended)
    captures.start()
    try:
        assert ended.wait(timeout=20)
        wait_until_started(captures.running[0])
    finally:
        captures.stop(timeout=20)
    (failed,) = captures.failed()
    assert failed.process.returncode == 2
    assert failed.tail[-1] == "cdc-capture-postgres: replication slot x is gone"
    following = captures.running[0]
    assert following.process.returncode == 0 and following.tail[-1] == "stopped cleanly"
    assert following.tail[0] == "--out inbox --follow"  # streaming, whether the command said so or not


def test_stopping_the_service_stops_its_captures_cleanly():
    ended = threading.Event()
    captures = Captures([command(FOLLOWING, "--follow")], ended)
    captures.start()
    wait_until_started(captures.running[0])
    captures.stop(timeout=20)
    assert not ended.is_set() and captures.failed() == []
    assert captures.running[0].process.returncode == 0


def test_a_capture_command_that_cannot_start_is_named_and_the_others_are_stopped():
    captures = Captures([command(FOLLOWING), "/no/such/cdc-capture-postgres --out inbox"], threading.Event())
    with pytest.raises(CaptureStartError, match="cannot start /no/such/cdc-capture-postgres"):
        captures.start()
    assert captures.running[0].process.poll() is not None


def test_a_roll_request_is_answered_at_once_when_nothing_is_held_and_by_the_loop_otherwise():
    import os
    import select
    import signal

    from python_jobs.capture.roll_requests import ANNOUNCEMENT, ANSWER, RollRequests

    read_fd, write_fd = os.pipe()
    requests = RollRequests(answer_fd=write_fd)
    before = signal.getsignal(signal.SIGUSR1)
    try:
        requests.install()
        assert os.read(read_fd, 4096).decode() == f"{ANNOUNCEMENT}\n"
        os.kill(os.getpid(), signal.SIGUSR1)  # Python runs the handler before the next line
        assert os.read(read_fd, 4096).decode() == f"{ANSWER}\n" and not requests.take()

        requests.holding = lambda: True  # a transaction not yet in a file
        os.kill(os.getpid(), signal.SIGUSR1)
        assert select.select([requests.wake_fd], [], [], 1)[0]  # the loop's select wakes
        assert not select.select([read_fd], [], [], 0)[0]  # no answer before the file
        assert requests.take() and not requests.take()
        requests.answer()
        assert os.read(read_fd, 4096).decode() == f"{ANSWER}\n"
    finally:
        signal.signal(signal.SIGUSR1, before)
        os.close(read_fd)
        os.close(write_fd)


def test_a_capture_is_stopped_cleanly_when_its_service_is_killed(tmp_path):
    """A cdc-run killed by SIGKILL left its capture streaming on, unseen, holding the slot or its
    state's lock against the restarted service's capture; the capture now gets SIGTERM."""
    ready, marker = tmp_path / "ready", tmp_path / "stopped"
    # As FOLLOWING, saying so in files: its output goes into the killed service's pipe.
    capture = command(
        "import signal, threading; stop = threading.Event(); signal.signal(signal.SIGTERM, lambda *_: stop.set());"
        f"open({str(ready)!r}, 'w').close(); stop.wait(30) and open({str(marker)!r}, 'w').write('cleanly')")
    service = (
        "import sys, threading, time; from python_jobs.scheduler.captures import Captures; "
        f"captures = Captures([{capture!r}], threading.Event()); captures.start(); "
        "print(captures.running[0].process.pid, flush=True); time.sleep(60)"
    )
    process = subprocess.Popen([sys.executable, "-c", service], stdout=subprocess.PIPE, text=True)
    try:
        capture_pid = int(process.stdout.readline())
        deadline = time.monotonic() + 20
        while not ready.exists() and time.monotonic() < deadline:  # its SIGTERM handler set
            time.sleep(0.05)
        process.kill()
        process.wait(timeout=10)
        deadline = time.monotonic() + 10
        # The file appears at open(), its text at the write after: read until the text is there.
        while not (marker.exists() and marker.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists() and marker.read_text() == "cleanly"
    finally:
        if process.poll() is None:
            process.kill()
        with contextlib.suppress(ProcessLookupError):
            os.kill(capture_pid, signal.SIGKILL)
