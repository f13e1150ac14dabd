"""Progress of long work (docs/observability.md): a line every few seconds with what is done, the
rate and, when the total is known, the estimated time left. Used by the captures' online
snapshots, a mirror's catch-up of many chunks and cdc-verify."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable


def duration_text(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


@dataclass
class Progress:
    what: str
    unit: str
    total: float | None = None  # None: not known (the line has no estimate)
    every_seconds: float = 5.0
    estimated: bool = False  # the total is an estimate (a table's statistics): "about"
    clock: Callable[[], float] = time.monotonic
    done: float = 0
    started: float = field(default=-1.0)
    last_line: float = field(default=-1.0)

    def __post_init__(self) -> None:
        if self.started < 0:
            self.started = self.last_line = self.clock()
        self._initial = self.done  # done before this process started: not part of its rate

    def advance(self, count: float = 1) -> str | None:
        """Count done work; the progress line when one is due."""
        self.done += count
        now = self.clock()
        if now - self.last_line < self.every_seconds:
            return None
        self.last_line = now
        return self.line()

    def line(self) -> str:
        elapsed = max(self.clock() - self.started, 1e-6)
        rate = (self.done - self._initial) / elapsed
        text = f"{self.what}: {self.done:,.0f}"
        if self.total:
            text += f" of {'about ' if self.estimated else ''}{self.total:,.0f}"
        text += f" {self.unit}"
        if self.total:
            text += f" ({min(100.0, 100 * self.done / self.total):.0f}%)"
        text += f", {rate:,.0f} {self.unit}/s"
        if self.total and rate > 0:
            left = max(self.total - self.done, 0) / rate
            text += f", about {duration_text(left)} left"
        return text
