"""MetadataSummary.java's lines as the adapter reads them (table_metadata.parse_snapshot_log)."""

from __future__ import annotations

from dbt.adapters.cdc_spark.table_metadata import parse_snapshot_log


def test_the_snapshot_log_lines_parse_as_the_log():
    lines = "current\t5\nsnapshot\t4\t\tappend\t10\nsnapshot\t5\t4\toverwrite\t0\n"

    assert parse_snapshot_log(lines) == {"current": "5", "snapshots": [
        {"snapshot_id": "4", "parent_id": None, "operation": "append", "added_records": 10},
        {"snapshot_id": "5", "parent_id": "4", "operation": "overwrite", "added_records": 0}]}
    assert parse_snapshot_log("current\t\n") == {"current": None, "snapshots": []}
