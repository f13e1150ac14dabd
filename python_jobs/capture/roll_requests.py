"""A file on request: before each run, `cdc-run` asks its captures to write the whole transactions
they hold, so that the run lands every change its captures had received when it started, not only
those a file's --max-wait-seconds had already closed (a change waited up to that long for the next
run before).

The protocol, on the capture's output, which cdc-run reads (scheduler/captures.py): a following
capture says ANNOUNCEMENT at its start; SIGUSR1 asks it to write what it holds; it says ANSWER once
the file is on disk and in its state, or at once when it holds nothing (during its snapshot, between
transactions). cdc-run never signals a command that did not announce itself: SIGUSR1 ends a
process that does not handle it.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Callable

ANNOUNCEMENT = "writes the transactions it holds when sent SIGUSR1"
ANSWER = "wrote the transactions it held, as asked"


class RollRequests:
    """SIGUSR1 in this process, as a request the stream's loop takes; the loop's select wakes on wake_fd."""

    def __init__(self, answer_fd: int = 2) -> None:
        self.wake_fd, self._wake_write_fd = os.pipe()
        os.set_blocking(self.wake_fd, False)
        os.set_blocking(self._wake_write_fd, False)
        self.answer_fd = answer_fd
        # Set by the stream while it follows: whether it holds transactions not yet in a file.
        self.holding: Callable[[], bool] = lambda: False
        self._requested = False

    def install(self) -> None:
        """Handle SIGUSR1 from now on (main thread only) and say so on the output."""
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGUSR1, self._on_signal)
            self._say(ANNOUNCEMENT)

    def _on_signal(self, *_: object) -> None:
        if not self.holding():
            self._say(ANSWER)  # nothing to write: no need to wait for the loop
            return
        self._requested = True
        try:
            os.write(self._wake_write_fd, b"\0")
        except BlockingIOError:
            pass  # the pipe is full of wake-ups already

    def take(self) -> bool:
        """Whether a request came since the last take (the wake-ups read off the pipe)."""
        try:
            while os.read(self.wake_fd, 4096):
                pass
        except BlockingIOError:
            pass
        requested, self._requested = self._requested, False
        return requested

    def answer(self) -> None:
        self._say(ANSWER)

    def _say(self, line: str) -> None:
        # One write(2) of a whole line: a signal handler may run inside a logging call, whose
        # buffered stream must not be written again from here.
        os.write(self.answer_fd, f"{line}\n".encode())


REQUESTS = RollRequests()
