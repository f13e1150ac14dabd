"""The capture commands `cdc-run --capture` keeps running beside its dbt runs: capture, landing and
apply as one service. Each capture runs as a child process (`--follow` streams); one that ends
stops the service with its last words; stopping the service stops the captures with SIGTERM, which
write the whole transactions they hold before they exit. Before each run the service asks them to
write what they hold (roll()), so that the run lands every change they had received when it started.
"""

from __future__ import annotations

import ctypes
import logging
import os
import shlex
import signal
import subprocess
import threading
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from python_jobs.capture.roll_requests import ANNOUNCEMENT, ANSWER
from python_jobs.status.model import redact

log = logging.getLogger("cdc_merge")


# prctl(2): the signal the kernel sends a process when the thread that started it ends.
_PR_SET_PDEATHSIG = 1


def stopped_with_the_service(service_pid: int) -> Callable[[], None] | None:
    """What a capture runs before its command (Linux): SIGTERM when the service ends, even by SIGKILL.

    A capture orphaned by a killed cdc-run streamed on, unseen (its log into a closed pipe), holding
    the replication slot or its state file's lock: the restarted service's capture waited on them, and
    no run asked it to roll its files. SIGTERM makes it write what it holds and stop, as stop() does.
    The signal follows the starting thread: Captures.start() runs in the service's main thread."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux: the capture outlives a killed service
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]

    def before_exec() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != service_pid:  # the service died before the request was made
            os.kill(os.getpid(), signal.SIGTERM)

    return before_exec


class CaptureStartError(RuntimeError):
    """A --capture command that cannot be started; the message names it."""


@dataclass
class RunningCapture:
    command: str
    process: subprocess.Popen
    # The end of its output (its progress lines and, if it fails, why), kept for the message.
    tail: deque = field(default_factory=lambda: deque(maxlen=20))
    ended_by_itself: bool = False
    # It said it writes what it holds when sent SIGUSR1, and how many times it answered.
    rolls_on_request: bool = False
    answers: int = 0

    @property
    def name(self) -> str:
        return Path(shlex.split(self.command)[0]).name


class Captures:
    """Started together; a watcher per capture sets `ended` when one exits while the service runs."""

    def __init__(self, commands: Sequence[str], ended: threading.Event) -> None:
        self.commands = list(commands)
        self.ended = ended
        self.running: list[RunningCapture] = []
        self.watchers: list[threading.Thread] = []
        self.stopping = False
        self.answered = threading.Condition()

    def start(self) -> None:
        for command in self.commands:
            argv = shlex.split(command)
            if "--follow" not in argv:
                argv.append("--follow")
            try:
                process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                           preexec_fn=stopped_with_the_service(os.getpid()))
            except OSError as error:
                self.stop()  # the ones already started
                raise CaptureStartError(f"--capture {redact(command)!r}: cannot start {argv[0]}: {error.strerror or error}") from None
            capture = RunningCapture(command, process)
            self.running.append(capture)
            watcher = threading.Thread(target=self._watch, args=(capture,), daemon=True, name=f"capture {capture.name}")
            watcher.start()
            self.watchers.append(watcher)
            log.info("capture started (pid %d): %s", process.pid, redact(command))

    def _watch(self, capture: RunningCapture) -> None:
        for line in capture.process.stdout:
            if line.rstrip() == ANSWER:  # one a run: not for the log
                with self.answered:
                    capture.answers += 1
                    self.answered.notify_all()
                continue
            if line.rstrip() == ANNOUNCEMENT:
                capture.rolls_on_request = True
            capture.tail.append(redact(line.rstrip()))
            log.info("%s: %s", capture.name, capture.tail[-1])
        code = capture.process.wait()
        with self.answered:  # a roll() waiting for its answer waits no longer
            self.answered.notify_all()
        if not self.stopping:
            capture.ended_by_itself = True
            last = capture.tail[-1] if capture.tail else "no output"
            log.error("capture %s ended with exit status %d: %s; stopping after the run in progress",
                      capture.name, code, last)
            self.ended.set()

    def roll(self, timeout: float = 2.0) -> None:
        """Ask each capture that announced it to write the whole transactions it holds, and wait for
        their answers, at most timeout seconds: what one has not written by then waits for its next
        file (--max-wait-seconds), nothing is lost."""
        asked = {}
        for capture in self.running:
            if capture.rolls_on_request and capture.process.poll() is None:
                asked[id(capture)] = (capture, capture.answers)
                capture.process.send_signal(signal.SIGUSR1)
        with self.answered:
            self.answered.wait_for(lambda: all(capture.answers > before or capture.process.poll() is not None
                                               for capture, before in asked.values()), timeout=timeout)

    def failed(self) -> list[RunningCapture]:
        """The captures that ended by themselves with a non-zero status (not those stop() ended)."""
        return [capture for capture in self.running if capture.ended_by_itself and capture.process.returncode != 0]

    def stop(self, timeout: float = 60.0) -> None:
        """SIGTERM to each (it writes what it holds), SIGKILL after timeout (it resumes without loss)."""
        self.stopping = True
        for capture in self.running:
            if capture.process.poll() is None:
                capture.process.terminate()
        for capture in self.running:
            try:
                capture.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                log.warning("capture %s did not stop within %.0f s: killed", capture.name, timeout)
                capture.process.kill()
                capture.process.wait()
        for watcher in self.watchers:  # their last lines logged
            watcher.join(timeout=5)
