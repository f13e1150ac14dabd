"""A small landing batch parsed whole in the driver (python_jobs/landing/small_batch.py): its retry
after a crash. The way itself is held to the JVM fast path and the Python workers' parse in
test_jvm_parser.py (test_landing_with_and_without_the_jvm_parser_writes_the_same_tables)."""

from __future__ import annotations

import random

import pytest
from test_jvm_parser import assert_same_tables, landing_config, landing_tables, mixed_lines  # noqa: F401 (a fixture)

from python_jobs.landing import io, land, small_batch


def test_a_batch_parsed_in_the_driver_that_dies_before_its_quarantine_commit_lands_every_line_once(
    spark, tmp_path, monkeypatch, landing_tables
):
    """A small batch parsed in the driver commits its events, then its quarantine: retried after a
    crash between the two, it keeps that way even where its size now says the JVM fast path."""
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "part-0.json").write_text("\n".join(mixed_lines(random.Random(6), 600)) + "\n", encoding="utf-8")
    quarantined = land.quarantined_records

    def crash(*args, **kwargs):
        raise RuntimeError("killed between the two commits")

    monkeypatch.setattr(land, "quarantined_records", crash)
    with pytest.raises(Exception, match="killed between the two commits"):
        land.run(landing_config(tmp_path, landing_tables, "jvm"), spark=spark)
    raw_jvm = landing_tables["raw", "jvm"]
    assert spark.table(raw_jvm).count() > 0 and spark.table(landing_tables["quarantine", "jvm"]).count() == 0
    monkeypatch.setattr(land, "quarantined_records", quarantined)
    monkeypatch.setattr(small_batch, "MAX_BATCH_BYTES_PARSED_IN_DRIVER", -1)
    assert land.run(landing_config(tmp_path, landing_tables, "jvm"), spark=spark).counts["rejected"] > 0

    monkeypatch.setenv("CDC_MERGE_PARSERS_JAR", "")
    land.run(landing_config(tmp_path, landing_tables, "python"), spark=spark)
    assert_same_tables(spark, landing_tables)
    tags = spark.sql(f"select summary['{io.LANDING_BATCH_PROPERTY}'] as tag from {raw_jvm}.snapshots").collect()
    assert len(tags) == 1 and not tags[0].tag.endswith(small_batch.JVM_COMMIT_SUFFIX)
