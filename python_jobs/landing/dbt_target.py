"""Where the landing model's dbt target lands: each adapter plugin runs the landing model inside
landing_into(), so that the landing config's sink must agree with the target (a config that lands
into Databend on a Spark target, or the other way round, would land where no mirror reads) and a
Databend target's landing reaches the server of the target itself."""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass
from typing import Iterator


@dataclass(frozen=True)
class LandingTarget:
    sink: str  # the landing config's sink this target needs: iceberg or databend
    name: str  # the dbt target, for messages
    databend_dsn: str | None = None  # the target's server, when the landing config's DSN variable is unset


_current = threading.local()


@contextlib.contextmanager
def landing_into(target: LandingTarget) -> Iterator[None]:
    previous = getattr(_current, "target", None)
    _current.target = target
    try:
        yield
    finally:
        _current.target = previous


def current() -> LandingTarget | None:
    """The target of the landing model running in this thread, or None outside dbt."""
    return getattr(_current, "target", None)
