"""A captured PostgreSQL table replaced under its name, the way migrations replace tables: a copy
built beside it and renamed to its name (the old one renamed away or dropped), or the table dropped
and created again. The rows of the new table were written under another name, or before it was a
captured table, and the old table's rows leave without a delete in the log: the capture reads the
table again online (its range records delete the rows that left). Captured by the least-privileged
user, one-shot and --follow, and after the capture was down across the swap; after each, the mirror
is compared with the source table by the user's own check (cdc_verify)."""

from __future__ import annotations

import json
import time

from harness.postgres_server import create_capture_user
from python_jobs.capture import postgres as capture_postgres
from python_jobs.capture.postgres_records import file_events
from test_capture_faults import following_capture, postgres, stopped, wait_for  # noqa: F401 - postgres is a fixture
from test_online_snapshots import execute
from test_postgres_partitions import apply_and_verify

COLUMNS = "{{ cdc_merge.cdc_columns({'id': 'int', 'region': 'string', 'amount': 'decimal(10,2)'}) }}, " \
          "{{ cdc_merge.cdc_metadata_columns() }}"


def swap_in_a_copy(keep_old: bool, first: int) -> str:
    """A copy of shop.events with other rows, renamed to its name; the old table renamed away or dropped."""
    return ("create table shop.events_new (like shop.events including all);"
            f"insert into shop.events_new select g, 'new', g from generate_series({first}, {first + 20}) as g;"
            "insert into shop.events_new select id, region, amount + 1 from shop.events where id % 2 = 0;"
            + ("alter table shop.events rename to events_old_" + str(first) + ";" if keep_old else "drop table shop.events;")
            + "alter table shop.events_new rename to events;"
            # A change after the swap comes through the stream, on the new table.
            f"update shop.events set amount = 0 where id = {first}")


def written_ids(out) -> set[int]:
    """The ids of the rows the capture's files written so far hold (stream and online reads)."""
    return {int(event["after"]["id"]) for path in out.glob("*.json") for event in file_events(path)
            if (event.get("after") or {}).get("id") is not None}


def mirror_ids(project) -> set[int]:
    return {row["id"] for row in project.query(f"select id from {project.schema}.events")}


def test_a_table_replaced_under_its_name_is_read_again(postgres, dbt_project, tmp_path):
    execute(postgres, "create schema shop; create table shop.events (id int primary key, region text, amount numeric(10,2));"
                      "insert into shop.events select g, 'r' || (g % 3), g * 1.5 from generate_series(1, 60) as g")
    dsn = create_capture_user(postgres, ["shop"])
    dbt_project.write_model("events", "unique_key='id', source_table='shop.events'", COLUMNS)
    config = capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.events",), slot="swapped", out=dbt_project.inbox,
                                            state=tmp_path / "capture-state.json", page_rows=16)
    capture_postgres.run(config)
    apply_and_verify(dbt_project, dsn)

    # Renamed in, the old table renamed away: one-shot capture.
    execute(postgres, swap_in_a_copy(keep_old=True, first=100))
    capture_postgres.run(config)
    apply_and_verify(dbt_project, dsn)
    assert 1 not in mirror_ids(dbt_project) and {2, 100, 120} <= mirror_ids(dbt_project)

    # Dropped and created again, with rows written before and after: one-shot.
    execute(postgres, "drop table shop.events; create table shop.events (id int primary key, region text, amount numeric(10,2));"
                      "insert into shop.events values (500, 'again', 5)")
    capture_postgres.run(config)
    apply_and_verify(dbt_project, dsn)
    assert mirror_ids(dbt_project) == {500}

    # While the capture follows: renamed in, the old one dropped.
    args = ["--dsn", dsn, "--tables", "shop.events", "--slot", "swapped", "--out", str(dbt_project.inbox),
            "--state", str(config.state), "--max-wait-seconds", "0.2"]
    with following_capture("postgres", *args) as following:
        time.sleep(2)
        execute(postgres, swap_in_a_copy(keep_old=False, first=200))
        execute(postgres, "insert into shop.events values (300, 'after', 3)")
        wait_for(lambda: {220, 300} <= written_ids(dbt_project.inbox))
        stderr = stopped(following)
    assert "replaced" in stderr, stderr
    apply_and_verify(dbt_project, dsn)
    assert {200, 220, 300} <= mirror_ids(dbt_project)

    # Swapped while the capture was down: noticed when it starts.
    execute(postgres, swap_in_a_copy(keep_old=True, first=700))
    capture_postgres.run(config)
    apply_and_verify(dbt_project, dsn)
    assert 201 not in mirror_ids(dbt_project) and {700, 720} <= mirror_ids(dbt_project)


def test_a_table_replaced_inside_the_window_of_its_first_page_is_read_again(postgres, dbt_project, tmp_path, monkeypatch):
    """Dropped and created again with other rows after the first page of its online snapshot read the
    old rows, before the page's high watermark: the read asked for again was taken for one waiting
    unstarted, so the page's rows the new table lacks (2 and 3 of 1 to 4) stayed in the mirror."""
    from python_jobs.capture import postgres_pages

    execute(postgres, "create schema shop; create table shop.events (id int primary key, region text, amount numeric(10,2));"
                      "insert into shop.events select g, 'old', g from generate_series(1, 30) as g")
    read_page, pages_read = postgres_pages.read_page, []

    def replaced_in_the_first_window(*args, **kwargs):
        page = read_page(*args, **kwargs)
        pages_read.append(page)
        if len(pages_read) == 1:  # after the page's rows were read, before its high watermark
            execute(postgres, "drop table shop.events; create table shop.events (id int primary key, region text, "
                              "amount numeric(10,2)); insert into shop.events select g, 'new', -g from "
                              "generate_series(1, 40, 3) as g")
        return page

    monkeypatch.setattr(postgres_pages, "read_page", replaced_in_the_first_window)
    dsn = create_capture_user(postgres, ["shop"])
    dbt_project.write_model("events", "unique_key='id', source_table='shop.events'", COLUMNS)
    config = capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.events",), slot="first_window", out=dbt_project.inbox,
                                            state=tmp_path / "capture-state.json", snapshot_mode="online", page_rows=4)
    capture_postgres.run(config)
    capture_postgres.run(config)  # and any read it asked for after its last page
    assert json.loads(config.state.read_text())["snapshots"] == []
    assert [int(row["id"]) for row in pages_read[0].rows] == [1, 2, 3, 4]
    apply_and_verify(dbt_project, dsn)
    assert mirror_ids(dbt_project) == set(range(1, 41, 3))
