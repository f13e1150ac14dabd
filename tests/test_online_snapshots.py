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

from harness.postgres_server import create_capture_user
from python_jobs.capture import postgres as capture_postgres
from python_jobs.capture.output import read_state
from python_jobs.capture.snapshot_requests import write_request
from test_capture_faults import capture, postgres  # noqa: F401 - postgres is a fixture

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
    """Changes shop.items at random, over keys inside and beyond the table (some move a row to another
    key, so to another page), in transactions of one to three statements that take some milliseconds (so that many are open across a page's watermarks),
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
                    if roll < 0.05:  # a key update: the row moves to another page
                        cursor.execute("update shop.items set id = %s where id = %s and not exists "
                                       "(select from shop.items where id = %s)", (2600 - key, key, 2600 - key))
                    elif roll < 0.4:
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


def test_an_online_snapshot_killed_at_random_moments_resumes_within_a_page(postgres, dbt_project, tmp_path):
    """kill -9 of a following capture five times while it reads a table in pages and a writer changes
    it: each start goes on from the last page written, and the mirror equals the source."""
    execute(postgres, "create schema shop; create table shop.items (id int primary key, code text, qty int);"
                      "insert into shop.items select g, 'c' || g, g from generate_series(1, 2000) g")
    dsn = create_capture_user(postgres, ["shop"])
    dbt_project.write_model("items", "unique_key='id', source_table='shop.items'", ITEMS)
    state = tmp_path / "capture-state.json"
    args = ["--dsn", dsn, "--tables", "shop.items", "--slot", "killed", "--out", str(dbt_project.inbox),
            "--state", str(state), "--snapshot", "online", "--snapshot-page-rows", "100",
            "--snapshot-rows-per-second", "1000", "--max-wait-seconds", "0.2"]
    writer = Writer(postgres, state)
    writer.start()
    chance = random.Random(5)
    for _ in range(5):
        following = capture("postgres", *args, follow=True)
        time.sleep(chance.uniform(0.3, 1.2))
        following.kill()
        following.wait(timeout=30)
    finished = capture("postgres", *args)  # the snapshot's last pages, and the writer stops
    writer.join()
    caught_up = capture("postgres", *args)  # what the writer did after that
    assert finished.returncode == 0 and caught_up.returncode == 0, finished.stderr + caught_up.stderr
    assert json.loads(state.read_text())["snapshots"] == []

    reads = [json.loads(line)["after"]["id"] for path in dbt_project.inbox.glob("*pages*")
             for line in path.read_text().splitlines() if '"op":"r"' in line]
    # Read again after a kill: at most the page being read when it came, 100 rows a kill.
    assert len(reads) - len(set(reads)) <= 5 * 100, len(reads) - len(set(reads))
    apply_and_check(dbt_project, dsn, ["items"])


def test_a_snapshot_resumed_after_a_kill_pages_a_key_whose_names_sort_otherwise_in_the_keys_order(postgres, dbt_project,
                                                                                                     tmp_path):
    """The state file keeps the last key read with its columns sorted by name (line before order_id):
    the next page's range record is still of (order_id, line), so no row of an earlier page is in it."""
    execute(postgres, "create schema shop; create table shop.order_lines (order_id int, line text, qty int, "
                      "primary key (order_id, line)); insert into shop.order_lines select o, l, o "
                      "from generate_series(1, 3) o, unnest(array['a', 'b', 'c']) l")
    dsn = create_capture_user(postgres, ["shop"])
    dbt_project.write_model("order_lines", "unique_key=['order_id', 'line'], source_table='shop.order_lines'", LINES)
    state = tmp_path / "capture-state.json"
    args = ["--dsn", dsn, "--tables", "shop.order_lines", "--slot", "resumed", "--out", str(dbt_project.inbox),
            "--state", str(state), "--snapshot", "online", "--snapshot-page-rows", "4", "--snapshot-rows-per-second", "1"]
    following = capture("postgres", *args, follow=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and [entry["pages"] for entry in read_state(state).get("snapshots", [])] != [1]:
        time.sleep(0.05)
    following.kill()  # after the first page (4 rows: the next is due 4 s later)
    following.wait(timeout=30)
    assert [entry["after_image"] for entry in read_state(state)["snapshots"]] == [{"line": "a", "order_id": 2}]
    finished = capture("postgres", *args)
    assert finished.returncode == 0, finished.stderr
    apply_and_check(dbt_project, dsn, ["order_lines"])


def test_a_table_dropped_while_read_ends_its_snapshot_and_the_others_go_on(postgres, dbt_project, tmp_path, caplog):
    execute(postgres, "create schema shop; create table shop.items (id int primary key, code text, qty int);"
                      "insert into shop.items select g, 'c' || g, g from generate_series(1, 2000) g;"
                      "create table shop.order_lines (order_id int, line text, qty int, primary key (order_id, line));"
                      "insert into shop.order_lines select g / 10, 'l' || (g % 10), g from generate_series(1, 500) g")
    dsn = create_capture_user(postgres, ["shop"])
    config = capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.items", "shop.order_lines"), slot="dropped",
                                            out=dbt_project.inbox, state=tmp_path / "capture-state.json",
                                            snapshot_mode="online", page_rows=100, snapshot_rows_per_second=2000)

    def drop_when_half_read() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(list(dbt_project.inbox.glob("*pages-shop.items*"))) < 5:
            time.sleep(0.05)
        execute(postgres, "drop table shop.items")

    dropper = threading.Thread(target=drop_when_half_read, daemon=True)
    dropper.start()
    with caplog.at_level("WARNING", logger="cdc_merge.capture"):
        summary = capture_postgres.run(config)
    dropper.join()
    assert "online snapshot of shop.items ends: the table is gone" in caplog.text
    assert json.loads(config.state.read_text())["snapshots"] == []
    assert summary.snapshot_rows >= 500  # order_lines whole, items in part
    dbt_project.write_model("order_lines", "unique_key=['order_id', 'line'], source_table='shop.order_lines'", LINES)
    landed = dbt_project.land({"shop.items": ["id"], "shop.order_lines": ["order_id", "line"]})
    assert "quarantined 0 lines" in landed.status()
    dbt_project.dbt("run", "--select", "order_lines")
    assert dbt_project.query(f"select count(*) as n from {dbt_project.schema}.order_lines")[0]["n"] == 500


def mirror_and_source_rows(project, server, model: str, table: str, names: str) -> tuple[list, list]:
    mirrored = sorted(tuple(str(value) for value in row.values())
                      for row in project.query(f"select {names} from {project.schema}.{model}"))
    # Each value's text output, as the capture writes it (a cast to text loses char(n)'s padding).
    texts = ", ".join(f"format('%s', {name})" for name in names.split(", "))
    connection = server.connect()
    with connection.cursor() as cursor:
        cursor.execute(f"select {texts} from {table}")
        source = sorted(cursor.fetchall())
    connection.close()
    return mirrored, source


@pytest.mark.parametrize("key_type, keys", [
    # Mirrored as their text (docs/type_mapping.md), which orders 100 before 20 and 'sad' before 'ok'.
    ("numeric", "select g from generate_series(1, 150) g"),
    ("shop.mood", "select (enum_range(null::shop.mood))[g] from generate_series(1, 4) g"),
    ("money", "select g * 0.7 from generate_series(1, 30) g"),
    # Compared by the source lower-cased (citext) or without their padding (char(n)): 'a' < 'B', 'a' < E'a\t'.
    ("citext", "select unnest(array['a', 'B', 'c', 'D', 'e', 'F'])"),
    ("char(3)", "select unnest(array['a', E'a\\t', 'a!', 'b', E'b\\n', 'c'])"),
])
def test_keys_the_mirror_orders_by_their_text_are_paged_in_that_order(postgres, dbt_project, tmp_path, key_type, keys):
    """A page's key range is the range the mirror's range record deletes in: pages in the source's
    own order lost rows of a mirror that compares the key as text."""
    execute(postgres, "create extension citext; create schema shop;"
                      "create type shop.mood as enum ('sad', 'ok', 'happy', 'elated');"
                      f"create table shop.items (id {key_type} primary key, qty int);"
                      f"insert into shop.items select k, 1 from ({keys}) as keys (k)")
    dsn = create_capture_user(postgres, ["shop"])
    dbt_project.write_model("items", "unique_key='id', source_table='shop.items'",
                            "{{ cdc_merge.cdc_columns({'id': 'string', 'qty': 'int'}) }}, {{ cdc_merge.cdc_metadata_columns() }}")
    config = capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.items",), slot="ordered", out=dbt_project.inbox,
                                            state=tmp_path / "capture-state.json", snapshot_mode="online", page_rows=3)
    capture_postgres.run(config)
    dbt_project.land({"shop.items": ["id"]})
    dbt_project.dbt("run", "--select", "items")
    mirrored, source = mirror_and_source_rows(dbt_project, postgres, "items", "shop.items", "id, qty")
    assert mirrored == source
    # A key range read again: the range of their text, in the source as in the mirror.
    write_request(config.state, "shop.items", [source[0][0]], [source[len(source) // 2][0]])
    assert capture_postgres.run(config).snapshot_rows > 0
    dbt_project.land({"shop.items": ["id"]})
    dbt_project.dbt("run", "--select", "items")
    assert mirror_and_source_rows(dbt_project, postgres, "items", "shop.items", "id, qty") == (source, source)


def test_a_truncate_inside_a_pages_window_keeps_none_of_its_rows(postgres, dbt_project, tmp_path, monkeypatch):
    """The page's rows were read before the truncate committed, inside its watermarks: written at the
    high watermark, after the truncate, they came back."""
    from python_jobs.capture import postgres_pages

    execute(postgres, "create schema shop; create table shop.items (id int primary key, code text, qty int);"
                      "insert into shop.items select g, 'c' || g, g from generate_series(1, 20) g")
    dsn = create_capture_user(postgres, ["shop"])
    dbt_project.write_model("items", "unique_key='id', source_table='shop.items'", ITEMS)
    read_page, pages_read = postgres_pages.read_page, []

    def truncated_after_the_second_page(*args, **kwargs):
        page = read_page(*args, **kwargs)
        pages_read.append(page)
        if len(pages_read) == 2:  # after the page's rows were read, before its high watermark
            execute(postgres, "truncate shop.items; insert into shop.items values (1000, 'after', 1)")
        return page

    monkeypatch.setattr(postgres_pages, "read_page", truncated_after_the_second_page)
    config = capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.items",), slot="truncated", out=dbt_project.inbox,
                                            state=tmp_path / "capture-state.json", snapshot_mode="online", page_rows=5)
    capture_postgres.run(config)
    assert len(pages_read[1].rows) == 5
    dbt_project.land({"shop.items": ["id"]})
    dbt_project.dbt("run", "--select", "items")
    assert [row["id"] for row in dbt_project.query(f"select id from {dbt_project.schema}.items")] == [1000]
