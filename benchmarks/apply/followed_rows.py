"""What following the offsets and runs tables through a warm process's own appends saves
(adapter/dbt/adapters/cdc_core/followed_rows.py): the demo's cycles, landing included, alternating
with the followed rows and without them (each cycle reads every mirror's newest offset with a query,
and the runs rows again for the new rows' quarantined lines), in one process
with one SparkSession; maintenance cycles left out of both medians.

    .venv/bin/python -m benchmarks.apply.followed_rows [--cycles 24]

Writes benchmarks/results/followed_rows.json and .log.
"""

from __future__ import annotations

import contextlib

from benchmarks.common import demo_ab
from benchmarks.common.results import RESULTS_DIR


@contextlib.contextmanager
def nothing_followed():
    """The baseline: what the bookkeeping tables hold known within one run only (each run reads every
    mirror's newest offset and the runs rows again), as before they were followed between runs."""
    from dbt.adapters.cdc_core.followed_rows import FollowedRows
    from dbt.adapters.cdc_core.run_state import STATE

    original = FollowedRows.appended
    FollowedRows.appended = lambda self, table, commit, rows, newer, **options: original(self, table, None, rows, newer, **options)
    STATE.offsets.forget()
    STATE.run_starts.forget()
    try:
        yield
    finally:
        FollowedRows.appended = original


def main(argv: list[str] | None = None) -> int:
    return demo_ab.alternate(__doc__.split("\n\n")[0], argv, RESULTS_DIR / "followed_rows.json",
                             "followed", "read_each_run", nothing_followed)


if __name__ == "__main__":
    raise SystemExit(main())
