"""What a landing did: its batches, files, counts per status and time; one line for the log and
one for dbt's run log."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from python_jobs.formats import records

# A count of the summary: files that changed or went away between listing and reading.
CHANGED_FILES = "changed_files"


@dataclass
class LandingSummary:
    batches: int = 0
    files: int = 0
    bytes: int = 0  # of the files on this machine's file system
    counts: Counter = field(default_factory=Counter)
    seconds: float = 0.0

    def status(self) -> str:
        """One short line for dbt's run log."""
        return (
            f"landed {self.counts[records.STATUS_EVENT]} events, quarantined "
            f"{self.counts[records.STATUS_REJECTED] + self.counts[records.STATUS_IGNORED]} lines"
        )

    def line(self) -> str:
        events = self.counts[records.STATUS_EVENT]
        rate = events / self.seconds if self.seconds else 0.0
        return (
            f"landed {events} events from {self.files} files in {self.batches} batches "
            f"({rate:,.0f} events/s); quarantined {self.counts[records.STATUS_REJECTED]} bad lines and "
            f"{self.counts[records.STATUS_IGNORED]} records that are not row changes; "
            f"skipped {self.counts[records.STATUS_TOMBSTONE]} tombstones"
            + (f"; {self.counts[CHANGED_FILES]} files changed or went away while landed (see the quarantine)"
               if self.counts[CHANGED_FILES] else "")
        )
