"""A benchmark process set up as tests/conftest.py sets up the suite's, and a call's seconds."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Tuple


def product_process(prefix: str) -> Path:
    """A new work folder, with the embedded target's warehouse in it; the process in UTC (PySpark hands
    timestamps to Python in the process's zone, the tables hold UTC), dbt sending no usage events and
    keeping its Jinja parses of a source text for the process, as when the figures were measured."""
    from dbt_common.tests import enable_test_caching

    work = Path(tempfile.mkdtemp(prefix=prefix))
    os.environ["CDC_MERGE_WAREHOUSE"] = str(work / "warehouse")
    os.environ["TZ"] = "UTC"
    time.tzset()
    os.environ.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
    enable_test_caching()
    return work


def timed_call(action: Callable[[], Any]) -> Tuple[float, Any]:
    """(seconds, result) of action()."""
    started = time.monotonic()
    result = action()
    return time.monotonic() - started, result
