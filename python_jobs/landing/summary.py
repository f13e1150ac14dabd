"""What a landing did: its batches, files, counts per status and time; one line for the log and
one for dbt's run log."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from python_jobs.formats import records

# A count of the summary: files that changed or went away between listing and reading.
CHANGED_FILES = "changed_files"
# A count of the summary: the events that are transaction end markers (docs/raw_table.md), not row changes.
TX_ENDS = "tx_ends"


@dataclass
class LandingSummary:
    batches: int = 0
    files: int = 0
    bytes: int = 0  # of the files on this machine's file system
    counts: Counter = field(default_factory=Counter)
    seconds: float = 0.0

    def _events(self) -> str:
        """The events landed, and how many of them are transaction end markers if any are."""
        tx_ends = self.counts[TX_ENDS]
        return f"{self.counts[records.STATUS_EVENT]} events" + (f" ({tx_ends} of them transaction ends)" if tx_ends else "")

    def status(self) -> str:
        """One short line for dbt's run log."""
        return (
            f"landed {self._events()}, quarantined "
            f"{self.counts[records.STATUS_REJECTED] + self.counts[records.STATUS_IGNORED]} lines"
        )

    def line(self) -> str:
        events = self.counts[records.STATUS_EVENT]
        rate = events / self.seconds if self.seconds else 0.0
        return (
            f"landed {self._events()} from {self.files} files in {self.batches} batches "
            f"({rate:,.0f} events/s); quarantined {self.counts[records.STATUS_REJECTED]} bad lines and "
            f"{self.counts[records.STATUS_IGNORED]} records that are not row changes; "
            f"skipped {self.counts[records.STATUS_TOMBSTONE]} tombstones"
            + (f"; {self.counts[CHANGED_FILES]} files changed or went away while landed (see the quarantine)"
               if self.counts[CHANGED_FILES] else "")
        )
