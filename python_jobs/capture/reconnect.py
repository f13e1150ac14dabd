"""A following capture (`--follow`, `cdc-run --capture`) outlives its source's restarts and network
breaks: the stream is started again, after a wait that doubles from 1 s to 60 s, each attempt in the
log; it stops only on what a person must fix (a refused statement, a slot or binlog that is gone).
Nothing is lost meanwhile: the files and the state say what was written, and the source sends the
rest again from there (output.py). A run without --follow still stops with a clear error, for the
scheduler that runs it to run it again.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Callable

log = logging.getLogger("cdc_merge.capture")


@dataclass
class Backoff:
    first_seconds: float = 1.0
    longest_seconds: float = 60.0
    attempts: int = 0

    def next_wait(self) -> float:
        wait = min(self.longest_seconds, self.first_seconds * 2 ** self.attempts)
        self.attempts += 1
        return wait


def follow_with_reconnects(follow: Callable[[], None], lost: Callable[[BaseException], str | None],
                           stop: threading.Event, source: str, backoff: Backoff | None = None) -> None:
    """follow() until it returns (stop is set); an error for which lost() gives a description (a
    connection lost, or not made again yet) is waited out and follow() called again; any other
    error is raised. A stream that ran longer than the longest wait starts the waits over."""
    backoff = backoff or Backoff()
    while True:
        started = time.monotonic()
        try:
            follow()
            return
        except Exception as error:  # noqa: BLE001 - lost() decides which errors are a lost connection
            detail = lost(error)
            if detail is None:
                raise
        if time.monotonic() - started > backoff.longest_seconds:
            backoff.attempts = 0
        wait = backoff.next_wait()
        log.warning("lost the connection to %s (%s): reconnecting in %.0f s (attempt %d); nothing is lost meanwhile",
                    source, detail, wait, backoff.attempts)
        if stop.wait(wait):
            return
