"""Which raw table a landing checkpoint's files went into, by the table's identity, not its name.

A checkpoint lists the files it landed (input_files.py); a landing skips them. When the raw table is
made again under the same name (its warehouse folder lost, emptied or restored from elsewhere, the
table dropped), dbt creates it empty, and a landing with the old checkpoint skipped every file landed
before: the mirrors, rebuilt from the new raw table, missed their rows with no message. The
checkpoint therefore records the Iceberg table's UUID (on Databend its table_id), which a table made
again does not keep, and a landing into another table of that name is refused before anything is read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from python_jobs.landing.io.errors import LandingError

# Beside Spark's offsets, commits and sources, and cdc_merge_destination (claim_checkpoint).
_TABLE_FILE = "cdc_merge_raw_table_uuid"


@dataclass(frozen=True)
class TableIdentity:
    """A raw table as it is now: its UUID and whether it holds any commit."""

    uuid: str
    has_commits: bool


def committed_batches(checkpoint_dir: Path) -> int:
    """How many micro-batches the checkpoint records as committed (its commits/ entries; Spark keeps
    the last 100 or so)."""
    commits = checkpoint_dir / "commits"
    return sum(entry.name.isdigit() for entry in commits.iterdir()) if commits.is_dir() else 0


def claim_raw_table(checkpoint_dir: Path, raw_table: str, identity: TableIdentity | None) -> None:
    """Refuse a raw table other than the one the checkpoint's files were landed into; record it
    the first time. identity None (a sink without one): nothing is checked."""
    if identity is None:
        return
    record = checkpoint_dir / _TABLE_FILE
    try:
        recorded: str | None = record.read_text().strip()
    except FileNotFoundError:
        recorded = None
    landed = committed_batches(checkpoint_dir)
    # A checkpoint from before the record: a raw table without a single commit cannot be the one
    # its batches went into.
    made_again = identity.uuid != recorded if recorded is not None else landed > 0 and not identity.has_commits
    if made_again:
        raise LandingError(
            f"the landing checkpoint {checkpoint_dir} lists the files landed into {raw_table} (its last {landed} batches "
            f"committed), "
            f"but {raw_table} is not the table they were landed into: it was made again (its warehouse folder lost, "
            "emptied or restored from elsewhere, or the table dropped). Landing with this checkpoint would skip "
            "every file it lists and the mirrors would miss their events. Restore the warehouse folder; or, to "
            f"land every file again into the new table, remove the checkpoint folder {checkpoint_dir} (and put the "
            "files moved to landed: back into the input folder) and run again"
        )
    if recorded != identity.uuid:
        checkpoint_dir.mkdir(parents=True, exist_ok=True)
        # Whole or absent, also when the process dies while it writes.
        partial = checkpoint_dir / f".{_TABLE_FILE}.partial"
        partial.write_text(identity.uuid + "\n")
        os.replace(partial, record)
