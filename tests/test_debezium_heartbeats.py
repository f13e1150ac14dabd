"""Debezium's heartbeat records (heartbeat.interval.ms: {"ts_ms": ...} on the heartbeat topic, with
or without their schema) dumped into the inbox beside the change events are kept aside as not
row changes, not quarantined as lines of an unknown format; the changes around them apply."""

from __future__ import annotations

import json

COLUMNS = "{{ cdc_merge.cdc_column('id', 'int') }}, {{ cdc_merge.cdc_column('name', 'string') }}, " \
          "{{ cdc_merge.cdc_metadata_columns() }}"
HEARTBEAT_SCHEMA = {"type": "struct", "fields": [{"type": "int64", "optional": False, "field": "ts_ms"}],
                    "optional": False, "name": "io.debezium.connector.common.Heartbeat"}


def change(pos: int, op: str, row: dict) -> str:
    return json.dumps({
        "before": row if op == "d" else None, "after": None if op == "d" else row, "op": op,
        "source": {"connector": "mysql", "db": "inventory", "table": "products", "file": "mysql-bin.000003",
                   "pos": pos, "row": 0, "snapshot": "false", "ts_ms": 1_588_252_600_000 + pos},
        "ts_ms": 1_588_252_600_100 + pos,
    })


def test_heartbeats_are_kept_aside_and_the_changes_around_them_apply(dbt_project):
    project = dbt_project
    (project.inbox / "part-0.json").write_text("\n".join([
        change(154, "c", {"id": 1, "name": "scooter"}),
        json.dumps({"ts_ms": 1588252618953}),
        change(400, "u", {"id": 1, "name": "red scooter"}),
        json.dumps({"schema": HEARTBEAT_SCHEMA, "payload": {"ts_ms": 1588252628953}}),
        change(600, "c", {"id": 2, "name": "hammer"}),
    ]) + "\n")
    summary = project.land({"inventory.products": ["id"]})
    assert (summary.counts["event"], summary.counts["ignored"], summary.counts["rejected"]) == (3, 2, 0)
    reasons = [row["reason"] for row in project.query(f"select reason from {project.raw_schema}.quarantine")]
    assert len(reasons) == 2 and all("Debezium heartbeat" in reason for reason in reasons), reasons

    project.write_model("products", "unique_key='id', source_table='inventory.products'", COLUMNS)
    project.dbt("run", "--select", "products")
    rows = project.query(f"select id, name from {project.schema}.products order by id")
    assert [(row["id"], row["name"]) for row in rows] == [(1, "red scooter"), (2, "hammer")]
