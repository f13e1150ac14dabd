"""Online snapshots on a real PostgreSQL 15 (docs/online_snapshots.md): a table read in pages while a
writer changes it, a table added to a running capture, and a key range read again to repair a
mirror into which drift was put (a changed, a missing and an extra row). After each, the mirror is
compared with the source table by the user's own check (cdc_verify), and with the raw log by
cdc_mirror_matches_log. Captured by the least-privileged user the docs prescribe."""

from __future__ import annotations

import json
import random
import threading
import time

import pytest

from postgres_server import create_capture_user
from python_jobs.capture import postgres as capture_postgres
from python_jobs.capture.snapshot_requests import write_request
from test_capture_faults import postgres  # noqa: F401 - a fixture

ITEMS = "{{ cdc_merge.cdc_columns({'id': 'int', 'code': 'string', 'qty': 'int'}) }}, {{ cdc_merge.cdc_metadata_columns() }}"
LINES = ("{{ cdc_merge.cdc_columns({'order_id': 'int', 'line': 'string', 'qty': 'int'}) }}, "
         "{{ cdc_merge.cdc_metadata_columns() }}")
TESTS = """version: 2
models:
  - name: {model}
    data_tests:
      - cdc_mirror_matches_log:
          arguments:
            source_table: {table}
            raw_relation: ref('raw_events')
"""


def execute(server, sql: str, parameters=None) -> None:
    connection = server.connect()
    with connection.cursor() as cursor:
        cursor.execute(sql, parameters)
    connection.commit()
    connection.close()


class Writer(threading.Thread):
    """Changes shop.items at random, over keys inside and beyond the table, in transactions of one to
    three statements that take some milliseconds (so that many are open across a page's watermarks),
    while the capture's state says a snapshot is being read (and at most half a minute)."""

    def __init__(self, server, state) -> None:
        super().__init__(daemon=True)
        self.server, self.state, self.statements = server, state, 0

    def snapshot_read(self) -> bool:
        try:
            state = json.loads(self.state.read_text())
        except (OSError, ValueError):
            return False
        return state.get("snapshot_done") and not state.get("snapshots")

    def run(self) -> None:
        connection = self.server.connect()
        chance = random.Random(20261128)
        deadline = time.monotonic() + 30
        with connection.cursor() as cursor:
            while not self.snapshot_read() and time.monotonic() < deadline:
                for _ in range(chance.randint(1, 3)):
                    key, roll = chance.randint(1, 2600), chance.random()
                    if roll < 0.4:
                        cursor.execute("update shop.items set qty = qty + 1 where id = %s", (key,))
                    elif roll < 0.6:
                        cursor.execute("delete from shop.items where id = %s", (key,))
                    else:
                        cursor.execute("insert into shop.items values (%s, 'new', 0) on conflict (id) do update set qty = -1",
                                       (key,))
                    self.statements += 1
                    time.sleep(0.003)
                connection.commit()
        connection.close()


def apply_and_check(project, dsn: str, models: list[str]) -> None:
    """Land, apply, then the mirrors against the source (cdc_verify) and the raw log (dbt test)."""
    landed = project.land({"shop.items": ["id"], "shop.order_lines": ["order_id", "line"]})
    assert "quarantined 0 lines" in landed.status(), landed.status()
    project.dbt("run", "--select", *models)
    project.dbt("run-operation", "cdc_verify", "--args", json.dumps({"source": {"postgres": dsn}, "select": models,
                                                                      "sample": 5000}))
    reports = [line for line in project.dbt_log().splitlines() if " vs shop." in line][-len(models):]
    assert all(": equal: " in report for report in reports), reports
    project.dbt("test", "--select", *models)


def test_tables_read_online_while_written_added_and_a_range_read_again_repair_the_mirror(postgres, conformance_project, tmp_path):
    dbt_project = conformance_project
    execute(postgres, "create schema shop; create table shop.items (id int primary key, code text, qty int);"
                      "insert into shop.items select g, 'c' || g, g from generate_series(1, 2000) g;"
                      "create table shop.order_lines (order_id int, line text, qty int, primary key (order_id, line));"
                      "insert into shop.order_lines select g / 10, 'l' || (g % 10), g from generate_series(1, 500) g")
    dsn = create_capture_user(postgres, ["shop"])
    config = capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.items",), slot="online", out=dbt_project.inbox,
                                            state=tmp_path / "capture-state.json", snapshot_mode="online", page_rows=300,
                                            snapshot_rows_per_second=800)
    for model, table, columns in (("items", "shop.items", ITEMS), ("order_lines", "shop.order_lines", LINES)):
        key = "'id'" if model == "items" else "['order_id', 'line']"
        dbt_project.write_model(model, f"unique_key={key}, source_table='{table}'", columns)
        (dbt_project.project_dir / "models" / "mirrors" / f"_{model}.yml").write_text(TESTS.format(model=model, table=table))

    # The first snapshot, in pages of 300 rows at 800 rows a second, while a writer changes the table.
    writer = Writer(postgres, config.state)
    writer.start()
    first = capture_postgres.run(config)
    writer.join()
    assert first.snapshot_rows > 0 and writer.statements > 100, (first, writer.statements)
    capture_postgres.run(config)  # what the writer did after the last page
    apply_and_check(dbt_project, dsn, ["items"])

    # A table added to --tables: read online, while the first streams.
    execute(postgres, "update shop.items set qty = 7 where id <= 10")
    added = capture_postgres.CaptureConfig(**{**config.__dict__, "tables": ("shop.items", "shop.order_lines")})
    assert capture_postgres.run(added).snapshot_rows >= 500
    apply_and_check(dbt_project, dsn, ["items", "order_lines"])

    # Drift put into the mirror behind the pipeline's back: a changed row, a missing one, an extra one.
    schema = dbt_project.schema
    dbt_project.execute(f"update {schema}.items set qty = 999 where id = 1500")
    dbt_project.execute(f"delete from {schema}.items where id = 1501")
    dbt_project.execute(f"insert into {schema}.items (id, code, qty, _cdc_key, _cdc_seq, _cdc_source_ts) "
                        f"values (2999, 'extra', 1, '[\"2999\"]', '00000000000000000001', current_timestamp())")
    with pytest.raises(AssertionError):
        apply_and_check(dbt_project, dsn, ["items"])
    # Read keys 1400 to 3000 again: only that range.
    write_request(config.state, "shop.items", ["1400"], ["3000"])
    again = capture_postgres.run(added)
    assert 0 < again.snapshot_rows <= 1601
    apply_and_check(dbt_project, dsn, ["items", "order_lines"])
    assert "rows the source no longer has removed (online snapshot ranges)" in dbt_project.dbt_log()
