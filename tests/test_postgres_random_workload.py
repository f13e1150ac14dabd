"""A seeded random workload on a real PostgreSQL 15 against the whole pipeline: concurrent sessions
insert, update (key columns too), delete and insert again, in transactions that interleave on the
same rows (row locks serialize them), commit, roll back, roll back to savepoints, and go through
PREPARE TRANSACTION / COMMIT PREPARED / ROLLBACK PREPARED; a TRUNCATE now and then, columns added
with a default and without one, and a column retyped by a rewrite of its table. Meanwhile the capture follows, killed with SIGKILL and started again at random
moments, a key range is read again online (cdc-snapshot), and the mirrors are landed and applied at
random points. At the end every mirror equals its source table row by row, and cdc_verify says so;
so do the current versions of four histories (hard and soft deletes, a TOAST column, one whose versions
open only on changes of one column), which take the columns added on the way in place; their data tests pass, and the versions they share with the same
histories rebuilt from the raw log hold the same values of the added columns.

CDC_RANDOM_WORKLOAD_SEEDS (1 on Spark, 2 on Databend; or 1,2 or 1-20, each on the engines of CDC_RANDOM_WORKLOAD_ENGINES,
tests/workload_seeds.py) and CDC_RANDOM_WORKLOAD_ROUNDS (2) make it hunt longer, and
CDC_RANDOM_WORKLOAD_ALTER_CHANCE (0.06, a transaction's) makes the schema changes come sooner, and with them
the lock waits that stretch transactions across the capture's kills and its online pages.
CDC_RANDOM_WORKLOAD_MAINTAIN_CHANCE runs cdc_maintain after applies, with the shortest retention, and
at the end mirrors built anew from what it left of the log equal their sources too;
CDC_RANDOM_WORKLOAD_REBUILD_CHANCE rebuilds one mirror (or, without maintenance, history) with --full-refresh after applies.

The sessions' transactions are in postgres_workload_sessions.py; what both workloads share is in
workload_seeds.py."""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from conftest import PROJECT_DIR
from harness.postgres_server import create_capture_user
from raw_history import raw_history
from workload_seeds import Maintenance, Rebuilds, history_tests, workload_cases, workload_project
from test_capture_faults import capture, postgres  # noqa: F401 - postgres is a fixture
from test_online_snapshots import execute
from postgres_workload_sessions import Session, resolve

ROUNDS = int(os.environ.get("CDC_RANDOM_WORKLOAD_ROUNDS", "2"))
SESSIONS = 3
KEYS = {"shop.lines": ["order_id", "line"], "shop.docs": ["id"], "shop.vals": ["id"]}
SETUP = """
create schema shop;
create table shop.lines (order_id int, line int, qty int, note text, primary key (order_id, line));
insert into shop.lines select g % 5 + 1, g / 5 + 1, g, 'n' || g from generate_series(0, 14) g;
create table shop.docs (id int primary key, n int, body text);
alter table shop.docs alter column body set storage external;
insert into shop.docs select g, g, (select string_agg(md5(g::text || s::text), '') from generate_series(1, 100) s)
from generate_series(1, 6) g;
create table shop.vals (id int primary key, amount numeric(12,3), at timestamptz, doc json);
insert into shop.vals select g, g * 1.125, timestamptz '2026-03-29 01:30:00.25+05:30' + g * interval '7 hours',
('{"k":  ' || g || '}')::json from generate_series(1, 6) g;
"""
# Schema changes, each once at a random moment: columns added with a default and without one, and a
# retype that rewrites the table with no row change in the log (json made jsonb, whose text the
# server normalizes), which the capture reads again online.
ALTERS = ["alter table shop.vals add column tag text default 'fresh'",
          "alter table shop.docs add column extra int not null default 5",
          "alter table shop.lines add column memo text",
          "alter table shop.vals alter column doc type jsonb"]
ADDED_COLUMNS = {statement.split()[5] for statement in ALTERS if " add column " in statement}  # tag, extra, memo
TYPES = {"integer": "int", "text": "string", "numeric": "decimal(12,3)", "timestamp with time zone": "timestamp",
         "json": "string", "jsonb": "string"}
# Histories of the tables ({model: (source table, deletes, other config)}), hard and soft deletes, one
# whose versions open only on changes of n (the TOAST body and extra then change in place), following the
# columns the workload adds (docs/history.md, "Columns the model adds"): their current versions are the
# source's rows.
HISTORIES = {"vals_versions": ("shop.vals", "hard", ""), "lines_versions": ("shop.lines", "soft", ""),
             "docs_versions": ("shop.docs", "soft", ""), "docs_by_n": ("shop.docs", "hard", ", track_columns=['n']")}
def follow(args: list[str], log) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "python_jobs.capture.postgres", *args, "--follow"], cwd=PROJECT_DIR,
                            stdout=subprocess.DEVNULL, stderr=log)


def write_models(project, server) -> list[str]:
    """A model per table with the source's columns now, as cdc-scaffold writes it; the models' names."""
    connection = server.connect()
    with connection.cursor() as cursor:
        for table in KEYS:
            cursor.execute("select column_name, data_type from information_schema.columns where table_schema = 'shop' "
                           "and table_name = %s order by ordinal_position", (table.split(".")[1],))
            columns = {name: TYPES[kind] for name, kind in cursor.fetchall()}
            keys = KEYS[table]
            body = f"{{{{ cdc_merge.cdc_columns({columns!r}) }}}}, {{{{ cdc_merge.cdc_metadata_columns() }}}}"
            project.write_model(table.split(".")[1], f"unique_key={keys!r}, source_table='{table}', "
                                f"on_schema_change='append_new_columns'", body)
            for name, (history_of, deletes, config) in HISTORIES.items():
                if history_of == table:
                    project.write_model(name, f"materialized='cdc_history', unique_key={keys!r}, "
                                        f"source_table='{table}', deletes='{deletes}'{config}", body)
    connection.close()
    (project.project_dir / "models" / "mirrors" / "_histories.yml").write_text(
        history_tests({name: table for name, (table, _, _) in HISTORIES.items()}))
    return [table.split(".")[1] for table in KEYS] + list(HISTORIES)


def land_and_run(project, server, maintenance: Maintenance | None = None, rebuilds: Rebuilds | None = None) -> None:
    models = write_models(project, server)
    landed = project.land(KEYS)
    assert "quarantined 0 lines" in landed.status(), landed.status()
    project.dbt("run", "--select", *models)
    if maintenance:
        maintenance.maybe(project, models)
    if rebuilds is not None:
        # Histories too, unless maintenance trims the log, from which a history is not built again (docs/history.md).
        rebuilds.maybe(project, [table.split(".")[1] for table in KEYS] + ([] if maintenance else list(HISTORIES)))


def source_rows(server, table: str) -> tuple[list[str], list[tuple]]:
    connection = server.connect()
    with connection.cursor() as cursor:
        cursor.execute(f"select * from {table} limit 0")
        columns = [column.name for column in cursor.description]
        cursor.execute(f"select {', '.join(c + '::text' if c == 'doc' else c for c in columns)} from {table} "
                       f"order by {', '.join(KEYS[table])}")
        rows = [tuple(value.astimezone(dt.timezone.utc).replace(tzinfo=None) if isinstance(value, dt.datetime) else value
                      for value in row) for row in cursor.fetchall()]
    connection.close()
    return columns, rows


def assert_mirrors_equal_sources(project, server, rebuilt: dict[str, str] | None = None) -> None:
    """The mirrors and the histories' current versions; with rebuilt ({model: mirror}), those models instead."""
    mirrors = [(table, table.split(".")[1], "") for table in KEYS] + [
        (table, name, "where is_current and not coalesce(is_deleted, false) ") for name, (table, _, _) in HISTORIES.items()]
    if rebuilt is not None:
        mirrors = [(f"shop.{mirror}", model, "") for model, mirror in rebuilt.items()]
    for table, model, current in mirrors:
        keys = KEYS[table]
        columns, expected = source_rows(server, table)
        mirror = project.query(f"select {', '.join(columns)} from {project.schema}.{model} {current}"
                               f"order by {', '.join(keys)}")
        actual = [tuple(row[column] for column in columns) for row in mirror]
        assert actual == expected, (f"{model} of {table} {columns}: only in the mirror {sorted(set(actual) - set(expected))[:10]}, "
                                    f"only in the source {sorted(set(expected) - set(actual))[:10]}\n"
                                    + raw_history(project, table, model, keys, columns, set(actual) ^ set(expected)))


def assert_added_columns_as_rebuilt(project, trimmed: bool = False) -> None:
    """Each history's versions hold the added columns' values a history rebuilt from the raw log holds.
    Only versions both have: where a range record lands in another chunk than its key's events, the two
    may differ in which versions a range closes (docs/history.md, "Limits"). trimmed: maintenance removed
    superseded events, so the rebuilt ones start where the log does now (allow_trimmed_log)."""
    for name in HISTORIES:
        model = project.project_dir / "models" / "mirrors" / f"{name}.sql"
        text = model.read_text()
        if trimmed:
            text = text.replace("materialized='cdc_history',", "materialized='cdc_history', allow_trimmed_log=true,", 1)
        (model.parent / f"{name}_rebuilt.sql").write_text(text)
    project.dbt("run", "--select", *[f"{name}_rebuilt" for name in HISTORIES])
    for name in HISTORIES:
        added = sorted(ADDED_COLUMNS & {column.lower() for column in project.query(
            f"select * from {project.schema}.{name} limit 1")[0]})
        if not added:
            continue
        kept, rebuilt = ({(row["_cdc_key"], row["_cdc_seq"]): tuple(row[column] for column in added) for row in project.query(
            f"select _cdc_key, _cdc_seq, {', '.join(added)} from {project.schema}.{relation}")}
            for relation in (name, f"{name}_rebuilt"))
        shared = kept.keys() & rebuilt.keys()
        differ = sorted(version for version in shared if kept[version] != rebuilt[version])
        assert shared and not differ, (f"{name} {added}: {len(differ)} of {len(shared)} versions differ from a rebuild, e.g. "
                                       + "; ".join(f"{version}: {kept[version]} != {rebuilt[version]}" for version in differ[:5]))


def read_ranges_again(state, chance: random.Random) -> None:
    """cdc-snapshot of one or two random key ranges or tables."""
    low, high = sorted([chance.randint(1, 8), chance.randint(1, 8)])
    ranges = [["--table", "shop.lines", "--from", f"{low},1", "--to", f"{high},4"], ["--table", "shop.docs"],
              ["--table", "shop.vals", "--from", str(low), "--to", str(high)]]
    for reread in chance.sample(ranges, chance.randint(1, 2)):
        subprocess.run([sys.executable, "-m", "python_jobs.capture.snapshot_requests", "--state", str(state),
                        *reread, "--wait-seconds", "0"], cwd=PROJECT_DIR, check=True)


@pytest.mark.parametrize("seed, engine", workload_cases())
def test_a_random_concurrent_workload_reaches_the_mirrors_through_kills_rereads_and_runs(postgres, request, spark, tmp_path,  # noqa: F811
                                                                                      seed, engine):
    chance = random.Random(seed)
    dbt_project = workload_project(request, spark, tmp_path, engine)
    execute(postgres, SETUP)
    dsn = create_capture_user(postgres, ["shop"])
    state = tmp_path / "capture-state.json"
    args = ["--dsn", dsn, "--tables", ",".join(KEYS), "--slot", "random", "--out", str(dbt_project.inbox),
            "--state", str(state), "--snapshot", "online", "--snapshot-page-rows", "4", "--snapshot-rows-per-second", "40",
            "--max-wait-seconds", "0.2", "--max-changes-per-file", "40"]
    log = open(tmp_path / "capture.log", "a")
    capturing, shared = follow(args, log), {"altered": list(ALTERS), "pending": []}
    maintenance, rebuilds = Maintenance(seed), Rebuilds(seed)
    land_and_run(dbt_project, postgres)  # the models in the tables' first columns: those added later are taken in place
    reread_round = chance.randrange(ROUNDS)
    for round_number in range(ROUNDS):
        sessions = [Session(postgres, random.Random(chance.random()), f"r{round_number}s{n}", shared)
                    for n in range(SESSIONS)]
        for session in sessions:
            session.start()
        while any(session.is_alive() for session in sessions):
            time.sleep(chance.uniform(0.2, 1.0))
            if chance.random() < 0.6:
                capturing.send_signal(signal.SIGKILL)
                capturing.wait(timeout=30)
                capturing = follow(args, log)
            if chance.random() < 0.1:
                land_and_run(dbt_project, postgres, maintenance, rebuilds)  # while the sessions write and the capture follows
            if (round_number == reread_round or chance.random() < 0.1) and state.exists():
                reread_round = None
                read_ranges_again(state, chance)
        assert [session.error for session in sessions] == [None] * SESSIONS
        if round_number == reread_round:  # its sessions ended before the capture had a state to ask
            deadline = time.monotonic() + 60
            while not state.exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            reread_round = None
            read_ranges_again(state, chance)
        resolver = postgres.connect()
        resolver.autocommit = True
        while shared["pending"]:
            resolve(resolver, shared["pending"], chance)
        resolver.close()
        if chance.random() < 0.7 or round_number == 0:
            land_and_run(dbt_project, postgres, maintenance, rebuilds)  # while the capture follows

    assert reread_round is None, "no key range read again"
    assert rebuilds.chance == 0 or rebuilds.runs > 0, "no mirror rebuilt"
    capturing.send_signal(signal.SIGKILL)
    capturing.wait(timeout=30)
    caught_up = capture("postgres", *args)
    assert caught_up.returncode == 0, caught_up.stderr
    assert json.loads(state.read_text())["snapshots"] == [], "an online read still under way"
    assert not list((tmp_path / "capture-state.json.requests").glob("*.json")), "a re-read request not taken"
    land_and_run(dbt_project, postgres)
    assert_mirrors_equal_sources(dbt_project, postgres)
    dbt_project.dbt("test", "--select", *HISTORIES)
    assert_added_columns_as_rebuilt(dbt_project, trimmed=maintenance.runs > 0)
    models = list(KEYS)
    dbt_project.dbt("run-operation", "cdc_verify", "--args",
                    json.dumps({"source": {"postgres": dsn}, "select": [m.split(".")[1] for m in models]}))
    reports = [line for line in dbt_project.dbt_log().splitlines() if " vs shop." in line][-len(models):]
    assert len(reports) == len(models) and all(": equal: " in line for line in reports), "\n".join(reports)
    if maintenance:  # a last maintenance, mirrors built anew from the log it leaves, and a run after it
        maintenance.now(dbt_project, write_models(dbt_project, postgres))
        rebuilt = maintenance.rebuilt(dbt_project, [table.split(".")[1] for table in models])
        land_and_run(dbt_project, postgres)
        assert_mirrors_equal_sources(dbt_project, postgres)
        assert_mirrors_equal_sources(dbt_project, postgres, rebuilt)
