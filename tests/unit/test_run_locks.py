"""run_locks.holding: all of a run's locks or none, released at the end (python_jobs/run_locks.py)."""

from __future__ import annotations

import fcntl
import os

import pytest

from python_jobs import run_locks


def held_elsewhere(path):
    """The lock taken through a descriptor of its own, as another process holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def free(path) -> bool:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def test_locks_are_held_inside_and_released_after(tmp_path):
    locks = [(tmp_path / "a.lock", "checkpoint a"), (tmp_path / "b.lock", "table b")]
    with run_locks.holding(locks):
        assert not free(tmp_path / "a.lock") and not free(tmp_path / "b.lock")
    assert free(tmp_path / "a.lock") and free(tmp_path / "b.lock")


def test_a_lock_held_by_another_run_leaves_none_taken_and_names_it(tmp_path, monkeypatch):
    monkeypatch.setenv(run_locks.LOCK_WAIT, "0")
    other = held_elsewhere(tmp_path / "b.lock")
    try:
        with pytest.raises(run_locks.LockBusy, match="table b is in use by another run"):
            with run_locks.holding([(tmp_path / "a.lock", "checkpoint a"), (tmp_path / "b.lock", "table b")]):
                raise AssertionError("entered without the second lock")
        assert free(tmp_path / "a.lock")
    finally:
        os.close(other)


def test_an_error_inside_releases_the_locks(tmp_path):
    with pytest.raises(ValueError):
        with run_locks.holding([(tmp_path / "a.lock", "checkpoint a")]):
            raise ValueError("the landing failed")
    assert free(tmp_path / "a.lock")


def test_a_state_file_held_by_a_capture_is_said_to_be_held_by_a_capture(tmp_path, monkeypatch):
    """A capture waiting for its state file's lock was told "in use by another run" when the holder was
    a capture (cdc-capture-postgres --follow, or cdc-run's capture): the waiter is told it is a capture."""
    import subprocess
    import sys

    from python_jobs.capture import output

    state = tmp_path / "capture-state.json"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from python_jobs.capture import output\n"
         "with output.one_capture_per_state(Path(sys.argv[1])):\n    print('held', flush=True); time.sleep(60)", str(state)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        monkeypatch.setenv(run_locks.LOCK_WAIT, "0.3")
        with pytest.raises(output.CaptureError) as refused:
            with output.one_capture_per_state(state):
                raise AssertionError("entered a state file another capture holds")
        said = str(refused.value)
        assert f"the capture state {state} is in use by a capture (pid {holder.pid} on " in said, said
        assert "this capture changed nothing of it. Run again once that capture ends" in said, said
        assert "another run" not in said
    finally:
        holder.kill()
        holder.wait()
    # A run's lock (a mirror's, a checkpoint's) is told as before.
    other = held_elsewhere(tmp_path / "m.lock")
    try:
        monkeypatch.setenv(run_locks.LOCK_WAIT, "0")
        with pytest.raises(run_locks.LockBusy, match="mirror m is in use by another run .* this run changed nothing"):
            run_locks.acquire(tmp_path / "m.lock", "mirror m")
    finally:
        os.close(other)
