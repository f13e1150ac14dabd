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
