"""A PostgreSQL user's first day: tables a shop has, changed after the first snapshot in ways that
look ordinary and are not to a pipeline. Captured by the least-privileged user the docs prescribe;
after each step every mirror is compared with its source table by the user's own check (cdc_verify)."""

from __future__ import annotations

import datetime as dt
import json
import logging

from harness.postgres_server import create_capture_user
from python_jobs.capture import postgres as capture_postgres
from python_jobs.capture.postgres_events import UNAVAILABLE_VALUE
from python_jobs.capture.postgres_records import file_events
from test_capture_faults import postgres  # noqa: F401 - fixture
from test_online_snapshots import execute

SETUP = """
create schema shop;
create table shop.readings (k double precision primary key, n int);
insert into shop.readings values (1e300, 1), (1e-5, 2), (123456789012345678, 3), (0.5, 4), ('-0', 5);
create table shop.events (id int primary key, at timestamp, code char(5), note varchar(10));
insert into shop.events select g, timestamp '2026-01-01 10:00' + g * interval '40 days', 'c' || g, 'n' || g
from generate_series(1, 8) as g;
"""
MODELS = {
    "readings": ("shop.readings", "k", {"k": "double", "n": "int"}),
    "events": ("shop.events", "id", {"id": "int", "at": "timestamp", "code": "string", "note": "string"}),
}


def apply_and_verify(project, dsn: str) -> None:
    landed = project.land({table: [key] for table, key, _ in MODELS.values()})
    assert "quarantined 0 lines" in landed.status(), landed.status()
    project.dbt("run", "--select", *MODELS)
    project.dbt("run-operation", "cdc_verify", "--args", json.dumps({"source": {"postgres": dsn}, "select": list(MODELS)}),
                expect_success=False)
    reports = [line for line in project.dbt_log().splitlines() if " vs shop." in line][-len(MODELS):]
    assert all(": equal: " in line for line in reports), "\n".join(reports)


def write_models(project, models: dict) -> None:
    for name, (table, key, columns) in models.items():
        project.write_model(name, f"unique_key='{key}', source_table='{table}', on_schema_change='sync_all_columns'",
                            f"{{{{ cdc_merge.cdc_columns({columns!r}) }}}}, {{{{ cdc_merge.cdc_metadata_columns() }}}}")


def test_float_keys_a_renamed_column_and_a_retype_that_converts_values_reach_the_mirrors(postgres, dbt_project, tmp_path, caplog):  # noqa: F811
    """A double precision key the snapshot read and the stream changed: one row per key, as the source
    has (the snapshot's lines are Debezium's, whose numbers land as decimals, the stream's records
    wal2json's, whose numbers land as floats: 1E+300 and 1e+300 must be one key). A column renamed
    after its rows' last changes: the model reads the new name, which every row holds at the source
    and none of their events carried, so the capture reads the table again online. And ALTER COLUMN
    ... TYPE, which rewrites every row without a change in the log: timestamp made timestamptz reads
    each value in the session's time zone (10:00 in New York is 15:00 UTC), char(5) made varchar drops
    the trailing spaces; the capture reads the rewritten table again online."""
    execute(postgres, SETUP)
    dsn = create_capture_user(postgres, ["shop"])
    write_models(dbt_project, MODELS)
    config = capture_postgres.CaptureConfig(dsn=dsn, tables=tuple(table for table, _, _ in MODELS.values()), slot="first_day",
                                            out=dbt_project.inbox, state=tmp_path / "capture-state.json", page_rows=5)
    capture_postgres.run(config)
    apply_and_verify(dbt_project, dsn)

    caplog.set_level(logging.INFO, logger="cdc_merge.capture")
    execute(postgres, "update shop.readings set n = n + 10; delete from shop.readings where k = 1e-5;"
                      "alter table shop.readings rename column n to qty;"
                      "set timezone = 'America/New_York'; alter table shop.events alter column at type timestamptz;"
                      "alter table shop.events alter column code type varchar(5);"
                      "update shop.events set note = 'after' where id = 2")
    capture_postgres.run(config)
    assert "reading shop.events online" in caplog.text
    write_models(dbt_project, {"readings": ("shop.readings", "k", {"k": "double", "qty": "int"})})  # as cdc-scaffold writes it
    apply_and_verify(dbt_project, dsn)
    assert sorted(row["qty"] for row in dbt_project.query(f"select qty from {dbt_project.schema}.readings")) == [11, 13, 14, 15]
    assert dbt_project.query(f"select at, code from {dbt_project.schema}.events where id = 3") == [
        {"at": dt.datetime(2026, 5, 1, 14, 0), "code": "c3"}]


def test_a_column_set_to_storage_plain_keeps_the_values_stored_out_of_line(postgres, tmp_path):  # noqa: F811
    """ALTER COLUMN ... SET STORAGE PLAIN leaves the values stored out of line (TOAST) where they are,
    and an update that does not change one logs it as it logs any such value: not at all. The
    capture marks it unchanged (the mirror keeps its value) and a key change reads it from the table,
    as for any column that can hold such a value, instead of leaving it out (the mirror's null)."""
    execute(postgres, "create schema shop; create table shop.docs (id int primary key, n int, body text);"
                      "insert into shop.docs select g, g, (select string_agg(md5(g::text || s::text), '') "
                      "from generate_series(1, 200) as s) from generate_series(1, 2) as g;"
                      "alter table shop.docs alter column body set storage plain")
    config = capture_postgres.CaptureConfig(dsn=create_capture_user(postgres, ["shop"]), tables=("shop.docs",),
                                            slot="plain", out=tmp_path / "inbox", state=tmp_path / "capture-state.json")
    capture_postgres.run(config)
    execute(postgres, "update shop.docs set n = 10 where id = 1; update shop.docs set id = 20 where id = 2")
    capture_postgres.run(config)

    streamed = [event for path in sorted(config.out.glob("pg-plain-0*.json")) for event in file_events(path) if event.get("op")]
    assert [(event["op"], (event["after"] or {}).get("body", "left out")[:8]) for event in streamed] == [
        ("u", UNAVAILABLE_VALUE[:8]), ("d", "left out"), ("c", "3c59dc04")]
