"""dbt's JSON artifacts in a long-lived `cdc-run`: manifest.json only when dbt has parsed the
project again, run_results.json after every run.

With --write-json (its default) dbt writes manifest.json twice, semantic_manifest.json and
run_results.json in every invocation: for the demo's project 0.22 s of a 2.7 s cycle (BENCHMARKS.md,
"Demo"). A cycle after one that wrote them passes --no-write-json as long as dbt has not parsed the
project since (its partial_parse.msgpack, which dbt writes only when it parses, is unchanged, and
manifest.json is still there), and writes run_results.json itself from the run's result. A run
that parses again (a model edited meanwhile) leaves manifest.json as it was; the next run writes
it. The user's own --write-json or --no-write-json wins; without partial parsing (no msgpack)
every run writes them, as dbt does.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

log = logging.getLogger("cdc_merge")

NO_WRITE_JSON = "--no-write-json"
USER_CHOICES = ("--write-json", NO_WRITE_JSON)
RUN_RESULTS = "run_results.json"
MANIFEST = "manifest.json"
PARTIAL_PARSE = "partial_parse.msgpack"


def _mark(path: Path) -> tuple[int, int] | None:
    """(mtime_ns, size) of a file, None when it is missing."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


@dataclass
class JsonArtifacts:
    """What the last run that wrote dbt's JSON artifacts left, and whether the next run may skip them."""

    # Where dbt wrote run_results.json (its ArtifactWritten event); manifest.json is beside it.
    run_results: Path | None = None
    # partial_parse.msgpack's mark after that run.
    parsed: tuple[int, int] | None = None
    # This run: dbt wrote run_results.json; --no-write-json was added to it.
    written_now: bool = False
    skipped: bool = False

    def args_for(self, dbt_args: Sequence[str]) -> list[str]:
        """The dbt arguments of the next run: --no-write-json added where the artifacts would not change."""
        self.skipped = not any(arg in USER_CHOICES for arg in dbt_args) and self._current()
        return [*dbt_args, NO_WRITE_JSON] if self.skipped else list(dbt_args)

    def _current(self) -> bool:
        if self.run_results is None or self.parsed is None:
            return False
        target = self.run_results.parent
        return (target / MANIFEST).exists() and _mark(target / PARTIAL_PARSE) == self.parsed

    def callback(self, event: Any) -> None:
        """A dbt event callback: where dbt wrote run_results.json in this run."""
        if event.info.name == "ArtifactWritten" and Path(event.data.artifact_path).name == RUN_RESULTS:
            self.run_results = Path(event.data.artifact_path)
            self.written_now = True

    def after(self, result: Any) -> None:
        """After the run (result: dbt's result of it): run_results.json written where --no-write-json was
        added; the mark taken where dbt wrote the artifacts itself."""
        written, skipped, self.written_now, self.skipped = self.written_now, self.skipped, False, False
        if written and self.run_results is not None:
            self.parsed = _mark(self.run_results.parent / PARTIAL_PARSE)
        elif skipped and self.run_results is not None and hasattr(result, "write"):
            try:
                result.write(str(self.run_results))
            except OSError as error:  # the run itself went well: say so, and write them next time
                log.warning("cannot write %s: %s", self.run_results, error)
                self.parsed = None
