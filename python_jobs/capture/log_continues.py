"""Whether a --resnapshot's new snapshot can replace what the mirrors hold: only from a position after
every one the capture wrote before.

Each event's seq is its position in the source's log (formats/debezium.py), and the apply keeps, per
key, the event of the higher seq: a truncate removes the mirror's rows older than itself, a range
record those older than its low watermark. A server whose log started over (restored from a backup,
made anew, a MariaDB `RESET MASTER`) writes positions below the mirrors' rows, which then outrank
every new change and survive the truncate and the range records: the mirrors would silently differ
from the source. So a resnapshot first reads where the source's log is now and refuses, before
dropping or writing anything, when that is before where the capture's state says it had written.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Optional, Tuple

from python_jobs.capture.output import CaptureError
from python_jobs.formats.wal2json import parse_lsn

# The state's key for the position a resnapshot replaces through, as text (kept while it runs, so
# that a rerun of one that died half way checks it too).
REPLACED_THROUGH = "replaced_through"

Position = Tuple[int, ...]


def check_log_continues(source: str, written: Optional[Position], written_text: str, now: Position, now_text: str,
                        state_file: Any) -> None:
    """Raises CaptureError when the log's position now is before the written one (None: nothing known)."""
    if written is None or now >= written:
        return
    raise CaptureError(
        f"{source}'s log is now at {now_text}, before {written_text}, where {state_file} says this capture had "
        f"written: the server's log started over (a server restored from a backup or made anew, or its log "
        f"reset). Nothing was done: the mirrors hold rows at later positions than any new change, so a new "
        f"snapshot could not replace them. Start the pipeline over: a new raw_table in the landing config, a new "
        f"--state file and slot, then dbt run --full-refresh (docs/operating.md, \"When the log is lost\")"
    )


def postgres_written(state: Mapping[str, Any]) -> Optional[Tuple[Position, str]]:
    """The highest LSN the state says was written (its snapshot's, the stream's), with its text."""
    texts = [state.get(REPLACED_THROUGH), state.get("written_lsn"), state.get("snapshot_lsn")]
    known = [(parse_lsn(text), text) for text in texts if isinstance(text, str)]
    if not known:
        return None
    lsn, text = max(known)
    return (lsn,), text


def mysql_written(state: Mapping[str, Any]) -> Optional[Tuple[Position, str]]:
    """The binlog position the state says was written through ((file number, position)), with its text."""
    kept = state.get(REPLACED_THROUGH)
    binlog_file, position = kept.rpartition(":")[::2] if isinstance(kept, str) else (state.get("file"), state.get("pos"))
    if not isinstance(binlog_file, str) or not binlog_file or not str(position).isdigit():
        return None
    return mysql_position(binlog_file, int(position)), f"{binlog_file}:{int(position)}"


def mysql_position(binlog_file: str, position: int) -> Position:
    """A binlog position as the events' seqs order it: the number the file's name ends in, then the offset."""
    number = re.search(r"(\d+)$", binlog_file)
    return (int(number.group(1)) if number else 0, position)
