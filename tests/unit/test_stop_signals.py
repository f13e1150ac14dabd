"""stop_signals.py: SIGTERM sets a capture's (and cdc-run's) stop event even when it comes while the
main thread holds the event's lock (inside Event.wait(), or inside the handler's own set() when
signals come one after another); the handler that called set() itself deadlocked there for good."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

SIGNALLED_INSIDE_THE_LOCK = textwrap.dedent("""
    import os, signal, threading
    from python_jobs.capture.output import stop_on_signals
    from python_jobs import stop_signals

    stop = stop_on_signals()
    with stop._cond:  # the event's lock, as Event.wait() and Event.set() hold it
        for _ in range(3):
            os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(10000):  # bytecodes, between which Python runs the handler
            pass
    print("capture stopped" if stop.wait(10) else "capture not stopped", flush=True)

    said, service = [], threading.Event()
    stop_signals.set_on_signals(service, lambda signum: said.append((signal.Signals(signum).name,
                                                                     threading.current_thread().name)))
    os.kill(os.getpid(), signal.SIGINT)
    print("service stopped" if service.wait(10) else "service not stopped", said[:1], flush=True)
""")


def test_a_stop_signal_inside_the_events_lock_sets_it_from_another_thread():
    try:
        done = subprocess.run([sys.executable, "-c", SIGNALLED_INSIDE_THE_LOCK], capture_output=True, text=True,
                              timeout=30, cwd=Path(__file__).resolve().parents[2])
    except subprocess.TimeoutExpired:
        raise AssertionError("the process deadlocked in its SIGTERM handler") from None
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["capture stopped", "service stopped [('SIGINT', 'stop-signals')]"], done.stdout
