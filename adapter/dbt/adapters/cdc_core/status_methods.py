"""The adapter method behind `dbt run-operation cdc_merge.cdc_status` (macros/status.sql): the
pipeline's status from its tables (python_jobs/status/tables.py), as lines. A mixin of both adapters."""

import time
from datetime import datetime
from typing import Any, Dict, List, Optional, Sequence

from dbt.adapters.base import available
from dbt.adapters.base.meta import AdapterMeta

from python_jobs.progress import Progress
from python_jobs.status import tables
from python_jobs.status.text import render_text


class StatusMethods(metaclass=AdapterMeta):
    """AdapterMeta collects the @available methods, as it does for the adapter class itself."""

    @available
    def cdc_status_from_tables(self, runs: Sequence[Dict[str, Any]], checks: Sequence[Dict[str, Any]],
                               hours: float, models: Optional[Sequence[str]] = None) -> List[str]:
        status = tables.snapshot_from_tables(runs, checks, None if models is None else [str(model) for model in models])
        tables.LAST[:] = [status]  # for cdc-status, in this process, to add the captures' files and print
        return render_text(status, float(hours))

    @available
    def cdc_progress_line(self, key: str, done: int, total: int, unit: str, started: Any) -> str:
        """Long work's progress as the macros count it (a mirror's chunks): done of total, the rate
        and the time left (python_jobs/progress.py). started: when the work began (a UTC datetime)."""
        progress = _PROGRESS.get(key)
        if progress is None or done <= 1:
            elapsed = (datetime.utcnow() - started).total_seconds() if isinstance(started, datetime) else 0.0
            progress = _PROGRESS[key] = Progress(key, unit, total, every_seconds=0, started=time.monotonic() - elapsed)
            progress.last_line = progress.started
        progress.done = done
        if done >= total:
            _PROGRESS.pop(key, None)
        return progress.line()


# Progress of work the macros count, by key (cdc_progress_line).
_PROGRESS: Dict[str, Progress] = {}
