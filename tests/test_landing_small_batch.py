"""A small landing batch parsed whole in the driver (python_jobs/landing/small_batch.py): its retry
after a crash. The way itself is held to the JVM fast path and the Python workers' parse in
test_jvm_parser.py (test_landing_with_and_without_the_jvm_parser_writes_the_same_tables)."""

from __future__ import annotations

from test_jvm_parser import (  # noqa: F401 (landing_tables: a fixture)
    land_dying_after_its_first_commit,
    landing_config,
    landing_tables,
    landing_tags_equal_to_python,
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
