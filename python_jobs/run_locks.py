"""One writer at a time: the landing of one checkpoint, the apply of one mirror.

Two processes that land with one checkpoint would both write the streaming checkpoint's logs
(Spark stops the second with `concurrentStreamLogUpdate`), and two that apply one mirror would
both insert the keys that are new to it. Each takes an exclusive lock first: an OS file lock
(flock) on a file under the system temp folder named after the warehouse or checkpoint, so it
holds between processes of this machine and goes away with its process, even one killed by
SIGKILL. A run that finds the lock held waits for it (CDC_MERGE_LOCK_WAIT seconds, default 600),
then applies what is new by then; if it is still held, the run stops with a message naming the
holder. Runs on several machines against one object-store warehouse are not covered; where the
catalog is a PostgreSQL database (the cluster target) a mirror's lock is taken there instead, which
holds across machines (catalog_locks.py; RELIABILITY.md, "Concurrency").
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import hashlib
import logging
import os
import socket
import tempfile
import time
from pathlib import Path
from typing import Iterator

log = logging.getLogger("cdc_merge")

LOCK_WAIT = "CDC_MERGE_LOCK_WAIT"
# What holds a lock, as one that waits for it is told: a run (dbt, the landing) or a capture (its state file).
RUN, CAPTURE = "run", "capture"
_ANOTHER = {RUN: "another run", CAPTURE: "a capture"}
_DEFAULT_WAIT_SECONDS = 600.0
# Locks this process holds, by lock file: taking one again (a run that failed without releasing
# it, in a cdc-run process) replaces the old hold.
_held: dict[str, int] = {}


class LockBusy(RuntimeError):
    """Another process holds the lock for longer than this one may wait."""


def lock_file(kind: str, place: str, name: str) -> Path:
    """The lock file of name (a mirror, a checkpoint) of the warehouse or folder place."""
    digest = hashlib.sha1(os.path.abspath(place).encode()).hexdigest()[:16]
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)
    return Path(tempfile.gettempdir()) / "cdc_merge_locks" / digest / f"{kind}-{safe}.lock"


def wait_seconds() -> float:
    value = os.environ.get(LOCK_WAIT)
    try:
        return float(value) if value else _DEFAULT_WAIT_SECONDS
    except ValueError:
        raise LockBusy(f"{LOCK_WAIT}={value!r} is not a number of seconds; set it to e.g. 600") from None


def acquire(path: Path, what: str, wait: float | None = None, role: str = RUN) -> None:
    """Hold path's lock until release(path) or this process ends; wait for another holder up to
    wait seconds (default wait_seconds()), then raise LockBusy saying who holds it. role: what this
    process is to one that waits for it (RUN, CAPTURE), written in the lock file with its pid."""
    wait = wait_seconds() if wait is None else wait
    release(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + wait
    told = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            holder_role, holder = _holder(fd)
            if time.monotonic() >= deadline:
                os.close(fd)
                raise LockBusy(busy_message(what, holder, wait, holder_role, role)) from None
            if not told:
                said = waiting_message(what, holder, wait, holder_role)
                log.info("%s", said)
                print(f"cdc_merge: {said}", flush=True)
                told = True
            time.sleep(0.2)
    os.ftruncate(fd, 0)
    since = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    os.pwrite(fd, f"{role}\npid {os.getpid()} on {socket.gethostname()} since {since}".encode(), 0)
    _held[str(path)] = fd


def _other(role: str) -> str:
    return _ANOTHER.get(role, f"another {role}")


def waiting_message(what: str, holder: str, wait: float, holder_role: str = RUN) -> str:
    return f"{what} is in use by {_other(holder_role)} ({holder}): waiting up to {wait:.0f} s"


def busy_message(what: str, holder: str, wait: float, holder_role: str = RUN, role: str = RUN) -> str:
    return (f"{what} is in use by {_other(holder_role)} ({holder}) and stayed so for {wait:.0f} s; this {role} changed "
            f"nothing of it. Run again once that {holder_role} ends (or wait longer: {LOCK_WAIT}=<seconds>).")


def release(path: Path) -> None:
    fd = _held.pop(str(path), None)
    if fd is not None:
        os.close(fd)  # closing the only descriptor drops the flock


@contextlib.contextmanager
def holding(locks: list[tuple[Path, str]]) -> Iterator[None]:
    """Each (lock, what) in order, or none of them (LockBusy names the one held elsewhere); all are
    released at the end."""
    try:
        for path, what in locks:
            acquire(path, what)
        yield
    finally:
        for path, _ in locks:
            release(path)


def release_all() -> None:
    """Every lock this process holds: its file locks and its locks in a catalog database (catalog_locks.py)."""
    from python_jobs import catalog_locks

    for path in list(_held):
        release(Path(path))
    catalog_locks.release_all()


def _holder(fd: int) -> tuple[str, str]:
    """What holds the lock (its role) and its pid, host and time, as it wrote them."""
    text = os.pread(fd, 300, 0).decode(errors="replace").strip()
    role, _, rest = text.partition("\n")
    return (role, rest.strip() or "starting") if rest else (RUN, text or "starting")
