"""MetadataSummary.java's lines as the adapter reads them (table_metadata.parse_snapshot_log)."""

from __future__ import annotations

from dbt.adapters.cdc_spark.table_metadata import parse_snapshot_log, snapshot_history


def test_the_snapshot_log_lines_parse_as_the_log():
    lines = "current\t5\nsnapshot\t4\t\tappend\t10\t1000\nsnapshot\t5\t4\toverwrite\t0\t9000\n"

    assert parse_snapshot_log(lines) == {"current": "5", "snapshots": [
        {"snapshot_id": "4", "parent_id": None, "operation": "append", "added_records": 10, "committed_ms": 1000},
        {"snapshot_id": "5", "parent_id": "4", "operation": "overwrite", "added_records": 0, "committed_ms": 9000}]}
    assert parse_snapshot_log("current\t\n") == {"current": None, "snapshots": []}


def test_the_snapshot_history_marks_the_snapshots_committed_within_the_retention_as_recent():
    log = parse_snapshot_log("current\t5\nsnapshot\t4\t\tappend\t10\t1000\nsnapshot\t5\t4\treplace\t0\t9000\n")

    assert snapshot_history(log, keep_seconds=3, now_ms=12000) == {"current": "5", "snapshots": [
        {"snapshot_id": "4", "parent_id": None, "recent": 0}, {"snapshot_id": "5", "parent_id": "4", "recent": 1}]}
    assert [row["recent"] for row in snapshot_history(log, keep_seconds=0, now_ms=9000)["snapshots"]] == [0, 1]
