"""A small landing batch parsed whole in the driver (python_jobs/landing/small_batch.py): its retry
after a crash. The way itself is held to the JVM fast path and the Python workers' parse in
test_jvm_parser.py (test_landing_with_and_without_the_jvm_parser_writes_the_same_tables)."""

from __future__ import annotations

import random

import pytest
from test_jvm_parser import (  # noqa: F401 (landing_tables: a fixture)
    land_dying_after_its_first_commit,
    landing_config,
    landing_tables,
    landing_tags_equal_to_python,
    mixed_lines,
)

from python_jobs.landing import land, small_batch


def test_a_batch_parsed_in_the_driver_that_dies_before_its_quarantine_commit_lands_every_line_once(
    spark, tmp_path, monkeypatch, landing_tables
):
    """A small batch parsed in the driver commits its events, then its quarantine: retried after a
    crash between the two, it keeps that way even where its size now says the JVM fast path."""
    land_dying_after_its_first_commit(spark, tmp_path, monkeypatch, landing_tables, "quarantined_records", seed=6)
    monkeypatch.setattr(small_batch, "MAX_BATCH_BYTES_PARSED_IN_DRIVER", -1)
    assert land.run(landing_config(tmp_path, landing_tables, "jvm"), spark=spark).counts["rejected"] > 0

    tags = landing_tags_equal_to_python(spark, tmp_path, monkeypatch, landing_tables)
    assert len(tags) == 1 and not tags[0].endswith(small_batch.JVM_COMMIT_SUFFIX)


def test_a_batch_retried_after_its_commits_counts_no_line_landed_again(spark, tmp_path, monkeypatch, landing_tables):
    """Killed after its commits, before the checkpoint records the batch (crash point
    landing-before-checkpoint): the retry appends nothing, and its summary says so, not the batch's
    lines again (the status page's events landed, the run's 'landed N events')."""
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "part-0.json").write_text("\n".join(mixed_lines(random.Random(7), 300)) + "\n", encoding="utf-8")

    def killed(point):
        if point == "landing-before-checkpoint":
            raise RuntimeError("killed before the checkpoint")

    with monkeypatch.context() as patched:
        patched.setattr(land.crash_points, "crash_point", killed)
        with pytest.raises(Exception, match="killed before the checkpoint"):
            land.run(landing_config(tmp_path, landing_tables, "jvm"), spark=spark)
    raw, quarantine = (spark.table(landing_tables[table, "jvm"]).count() for table in ("raw", "quarantine"))
    assert raw > 0 and quarantine > 0

    retried = land.run(landing_config(tmp_path, landing_tables, "jvm"), spark=spark)
    assert (spark.table(landing_tables["raw", "jvm"]).count(), spark.table(landing_tables["quarantine", "jvm"]).count()) == (raw, quarantine)
    assert (retried.counts["event"], retried.counts["rejected"], retried.counts["ignored"]) == (0, 0, 0), retried.line()
