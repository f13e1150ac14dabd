"""cdc-verify right after `cdc_maintain`: the maintenance compacts the raw table, which gives it a new
current snapshot holding no event the mirror has not applied. cdc-verify took the mirror for caught
up only when its offset was the raw table's current snapshot, so it waited --wait-seconds for each
mirror (60 s by default) and then said the mirror "had not applied past the source's position ...:
it is behind, or its capture is", of a mirror that was neither."""

from __future__ import annotations

import json
import time

from harness.postgres_server import create_capture_user
from python_jobs.capture import postgres as capture_postgres
from python_jobs.verify import cli as verify_cli
from test_capture_faults import postgres  # noqa: F401 - fixture
from test_online_snapshots import execute

PROFILES = verify_cli.Path(__file__).resolve().parent.parent / "profiles"
ITEMS = "{{ cdc_merge.cdc_columns({'id': 'int', 'code': 'string'}) }}, {{ cdc_merge.cdc_metadata_columns() }}"
RAW_SNAPSHOT = {
    "databend_local": "select snapshot_id from fuse_snapshot('{raw}', 'raw_events') order by timestamp desc limit 1",
    "local": "select cast(snapshot_id as string) as snapshot_id from {raw}.raw_events.refs where name = 'main'",
}


def test_verify_after_maintenance_compacted_the_raw_table_does_not_wait(postgres, conformance_project):  # noqa: F811
    project = conformance_project
    execute(postgres, "create schema shop; create table shop.items (id int primary key, code text);"
                      "insert into shop.items select g, 'c' || g from generate_series(1, 30) g")
    dsn = create_capture_user(postgres, ["shop"])
    config = capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.items",), slot="maintained", out=project.inbox,
                                            state=project.work_dir / "state.json")
    project.write_model("items", "unique_key='id', source_table='shop.items'", ITEMS)
    capture_postgres.run(config)
    project.land({"shop.items": ["id"]})
    execute(postgres, "update shop.items set code = 'u' || id where id <= 10; delete from shop.items where id > 25")
    capture_postgres.run(config)
    project.land({"shop.items": ["id"]})  # a second landing: a second block or file for the compaction to join
    project.dbt("run", "--select", "items")
    raw_snapshot = RAW_SNAPSHOT[project.target].format(raw=project.raw_schema)
    (before,) = project.query(raw_snapshot)
    project.dbt("run-operation", "cdc_maintain", "--args", json.dumps({"models": ["items"], "force": True}))
    (after,) = project.query(raw_snapshot)
    assert after != before, "the maintenance left the raw table as it was: nothing to show"

    started = time.monotonic()
    status = verify_cli.main(["--project-dir", str(project.project_dir), "--profiles-dir", str(PROFILES), "--target",
                              project.target, "--select", "items", "--postgres", dsn, "--wait-seconds", "30"])
    log = project.dbt_log()
    assert status == 0, log[-3000:]
    assert f"{project.schema}.items vs shop.items: equal: 25 rows" in log, log[-3000:]
    assert "had not applied past" not in log, log[-3000:]
    assert time.monotonic() - started < 25
