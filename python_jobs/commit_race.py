"""Iceberg's optimistic commits: a statement that rewrites a table while another writer commits to
it can lose the race, and then nothing of it is committed. A statement that is idempotent (a
DELETE by predicate: maintenance's trims of the offsets and runs tables, which other mirrors
append to at any moment) is run again; any other is reported, with what to do
(adapter/dbt/adapters/cdc_spark/connections.py)."""

from __future__ import annotations

import time
from typing import Any, Callable

# What the JVM's error says when a commit lost to another writer's. "concurrently modified": a
# copy-on-write DELETE whose table changed between planning and its runtime file filter.
LOST_COMMIT_RACE = ("CommitFailedException", "ValidationException", "Cannot fast-forward", "CommitStateUnknownException",
                    "has been concurrently modified")


def lost_commit_race(message: str) -> bool:
    return any(marker in message for marker in LOST_COMMIT_RACE)


def run_idempotent(execute: Callable[[str], Any], sql: str, attempts: int = 8, pause_seconds: float = 0.2,
                   sleep: Callable[[float], None] = time.sleep) -> int:
    """Runs sql, again after a lost commit race, up to attempts times; returns how many times it ran again."""
    for attempt in range(1, attempts + 1):
        try:
            execute(sql)
            return attempt - 1
        except Exception as error:
            if attempt == attempts or not lost_commit_race(str(error)):
                raise
            sleep(pause_seconds * attempt)
    raise AssertionError("unreachable")
