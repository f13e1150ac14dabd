"""SIGTERM and SIGINT as a threading.Event a long-running command stops on (cdc-run, the captures'
--follow), set without taking a lock in the signal handler.

Python runs a signal handler in the main thread between two of its bytecodes, wherever it is. A
handler that called Event.set() (which takes the event's lock) deadlocked that thread for good when
the signal came while the thread held the same lock: inside Event.wait(), or inside the handler's own
set() when a second signal came (a killed cdc-run's capture gets SIGTERM from the kernel and may get
more from whoever stops it). Such a capture never stopped and kept its state file's lock, so the
restarted service's capture waited behind it and the mirrors stopped following their source. The
handler here only writes the signal's number to a pipe; a thread of its own reads it, says so and
sets the event, waiting for the lock like any other thread.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Callable, Sequence

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def set_on_signals(stop: threading.Event, said: Callable[[int], None] | None = None,
                   signums: Sequence[int] = STOP_SIGNALS) -> bool:
    """Set stop when one of signums comes, said(signum) first (off the main thread, where logging is
    safe). Only the main thread can install handlers: False (nothing installed) elsewhere."""
    if threading.current_thread() is not threading.main_thread():
        return False
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)

    def on_signal(signum: int, _frame: object) -> None:
        try:
            os.write(write_fd, bytes([signum]))
        except BlockingIOError:
            pass  # the pipe is full of signals already: the event is being set

    def watch() -> None:
        while True:
            received = os.read(read_fd, 64)
            for signum in received:
                if said is not None:
                    said(signum)
                stop.set()

    threading.Thread(target=watch, name="stop-signals", daemon=True).start()
    for signum in signums:
        signal.signal(signum, on_signal)
    return True
