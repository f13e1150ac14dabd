"""python_jobs/commit_race.py: an idempotent statement that lost Iceberg's commit race runs again."""

from __future__ import annotations

import pytest

from python_jobs.commit_race import lost_commit_race, run_idempotent


class Statement:
    def __init__(self, errors: list[Exception]) -> None:
        self.errors, self.runs = errors, 0

    def __call__(self, sql: str) -> None:
        self.runs += 1
        if self.errors:
            raise self.errors.pop(0)


RACE = RuntimeError("java.lang.IllegalStateException: Runtime file filtering is not possible: the table has been concurrently modified.")


def test_a_lost_race_runs_the_statement_again_until_it_commits():
    statement = Statement([RACE, RuntimeError("org.apache.iceberg.exceptions.ValidationException: Found conflicting files")])
    assert run_idempotent(statement, "delete ...", sleep=lambda _: None) == 2
    assert statement.runs == 3


def test_after_its_last_attempt_the_race_is_reported():
    statement = Statement([RACE] * 3)
    with pytest.raises(RuntimeError, match="concurrently modified"):
        run_idempotent(statement, "delete ...", attempts=3, sleep=lambda _: None)
    assert statement.runs == 3


def test_any_other_error_is_reported_at_once():
    statement = Statement([RuntimeError("TABLE_OR_VIEW_NOT_FOUND")])
    with pytest.raises(RuntimeError, match="TABLE_OR_VIEW_NOT_FOUND"):
        run_idempotent(statement, "delete ...", sleep=lambda _: None)
    assert statement.runs == 1
    assert not lost_commit_race("TABLE_OR_VIEW_NOT_FOUND") and lost_commit_race(str(RACE))
