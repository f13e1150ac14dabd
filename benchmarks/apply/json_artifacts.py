"""What writing dbt's JSON artifacts only where they change saves a cycle
(python_jobs/scheduler/dbt_artifacts.py, as cdc-run runs): the demo's cycles, landing included,
alternating with it and with dbt writing manifest.json, semantic_manifest.json and run_results.json
in every run, in one process with one SparkSession; maintenance cycles left out of both medians.

    .venv/bin/python -m benchmarks.apply.json_artifacts [--cycles 24]

Writes benchmarks/results/json_artifacts.json and .log.
"""

from __future__ import annotations

import contextlib

from benchmarks.common import demo_ab
from benchmarks.common.results import RESULTS_DIR


@contextlib.contextmanager
def written_every_run():
    """The baseline: dbt writes its JSON artifacts in every run, as a plain `dbt run` does."""
    from python_jobs.scheduler.dbt_artifacts import JsonArtifacts

    original = JsonArtifacts.args_for
    JsonArtifacts.args_for = lambda self, dbt_args: list(dbt_args)
    try:
        yield
    finally:
        JsonArtifacts.args_for = original


def main(argv: list[str] | None = None) -> int:
    return demo_ab.alternate(__doc__.split("\n\n")[0], argv, RESULTS_DIR / "json_artifacts.json",
                             "written_when_changed", "written_every_run", written_every_run)


if __name__ == "__main__":
    raise SystemExit(main())
