"""Online snapshots on a real MariaDB (docs/online_snapshots.md): a table read in pages while a writer
changes it, a table with a composite key added to a running capture, key ranges read again to repair
mirrors into which drift was put, and kill -9 at random moments. Watermarks are rows of the signal
table; the capture user has the privileges the docs prescribe (REPLICATION SLAVE, REPLICATION CLIENT,
SELECT, and INSERT on the signal table). Each mirror is compared with the source by cdc_verify."""

from __future__ import annotations

import json
import os
import random
import threading
import time

import pytest

from harness.mariadb_server import create_mariadb_capture_user
from python_jobs.capture import mysql as capture_mysql
from python_jobs.capture.mysql_pages import SIGNAL_TABLE, SIGNAL_TABLE_DDL
from python_jobs.capture.snapshot_requests import write_request
from test_capture_faults import capture, mariadb  # noqa: F401 - mariadb is a fixture
from test_online_snapshots import ITEMS, LINES, TESTS


def execute(server, *statements: str) -> None:
    connection = server.connect(autocommit=True)
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)
    connection.close()


def setup_source(server) -> tuple[str, str]:
    """shop.items (2,000 rows), shop.order_lines (500 rows, a composite key with text), the signal
    table, and the capture user the docs prescribe; returns its user and password."""
    execute(server, "create database shop", "use shop",
            "create table shop.items (id int primary key, code varchar(20), qty int)",
            "insert into shop.items select seq, concat('c', seq), seq from seq_1_to_2000",
            "create table shop.order_lines (order_id int, line varchar(8), qty int, primary key (order_id, line))",
            "insert into shop.order_lines select seq div 10, concat('l', seq mod 10), seq from seq_1_to_500",
            "create database cdc_merge", SIGNAL_TABLE_DDL.format(table=SIGNAL_TABLE))
    user, password = create_mariadb_capture_user(server, ["shop"])
    execute(server, f"grant insert on {SIGNAL_TABLE} to {user}@'%'")
    return user, password


class Writer(threading.Thread):
    """Changes shop.items at random (key updates move a row to another page), in transactions of one
    to three statements, while the capture's state says a snapshot is being read (at most 30 s)."""

    def __init__(self, server, state) -> None:
        super().__init__(daemon=True)
        self.server, self.state, self.statements = server, state, 0

    def snapshot_read(self) -> bool:
        try:
            state = json.loads(self.state.read_text())
        except (OSError, ValueError):
            return False
        return bool(state.get("snapshot_done")) and not state.get("snapshots")

    def run(self) -> None:
        connection = self.server.connect()
        chance = random.Random(20261128)
        deadline = time.monotonic() + 30
        with connection.cursor() as cursor:
            while not self.snapshot_read() and time.monotonic() < deadline:
                for _ in range(chance.randint(1, 3)):
                    key, roll = chance.randint(1, 2600), chance.random()
                    if roll < 0.05:
                        cursor.execute("update ignore shop.items set id = %s where id = %s", (2600 - key, key))
                    elif roll < 0.4:
                        cursor.execute("update shop.items set qty = qty + 1 where id = %s", (key,))
                    elif roll < 0.6:
                        cursor.execute("delete from shop.items where id = %s", (key,))
                    else:
                        cursor.execute("insert into shop.items values (%s, 'new', 0) on duplicate key update qty = -1",
                                       (key,))
                    self.statements += 1
                    time.sleep(0.003)
                connection.commit()
        connection.close()


def apply_and_check(project, server, user: str, models: list[str]) -> None:
    """Land, apply, then the mirrors against the source (cdc_verify) and the raw log (dbt test)."""
    landed = project.land({"shop.items": ["id"], "shop.order_lines": ["order_id", "line"]})
    assert "quarantined 0 lines" in landed.status(), landed.status()
    project.dbt("run", "--select", *models)
    project.dbt("run-operation", "cdc_verify", "--args", json.dumps(
        {"source": {"mysql": f"{user}@127.0.0.1:{server.port}"}, "select": models, "sample": 5000}))
    reports = [line for line in project.dbt_log().splitlines() if " vs shop." in line][-len(models):]
    assert all(": equal: " in report for report in reports), reports
    project.dbt("test", "--select", *models)


@pytest.fixture
def capture_password(monkeypatch):
    def use(password: str) -> None:
        monkeypatch.setenv("MYSQL_PWD", password)  # cdc_verify's and the capture's
    return use


def test_mariadb_tables_read_online_while_written_added_and_ranges_read_again_repair_the_mirrors(
        mariadb, dbt_project, tmp_path, capture_password):
    user, password = setup_source(mariadb)
    capture_password(password)
    config = capture_mysql.CaptureConfig(host="127.0.0.1", port=mariadb.port, user=user, password=password,
                                         tables=("shop.items",), out=dbt_project.inbox, state=tmp_path / "state.json",
                                         snapshot_mode="online", page_rows=300, snapshot_rows_per_second=800)
    for model, table, columns in (("items", "shop.items", ITEMS), ("order_lines", "shop.order_lines", LINES)):
        key = "'id'" if model == "items" else "['order_id', 'line']"
        dbt_project.write_model(model, f"unique_key={key}, source_table='{table}'", columns)
        (dbt_project.project_dir / "models" / "mirrors" / f"_{model}.yml").write_text(TESTS.format(model=model, table=table))

    # The first snapshot, in pages of 300 rows at 800 rows a second, while a writer changes the table.
    writer = Writer(mariadb, config.state)
    writer.start()
    first = capture_mysql.run(config)
    writer.join()
    assert first.snapshot_rows > 0 and writer.statements > 100, (first, writer.statements)
    capture_mysql.run(config)  # what the writer did after the last page
    apply_and_check(dbt_project, mariadb, user, ["items"])

    # A table added to --tables: read online, while the first streams.
    execute(mariadb, "update shop.items set qty = 7 where id <= 10")
    added = capture_mysql.CaptureConfig(**{**config.__dict__, "tables": ("shop.items", "shop.order_lines")})
    assert capture_mysql.run(added).snapshot_rows >= 500
    apply_and_check(dbt_project, mariadb, user, ["items", "order_lines"])

    # Drift put into the mirrors behind the pipeline's back: changed, missing and extra rows.
    schema = dbt_project.schema
    dbt_project.execute(f"update {schema}.items set qty = 999 where id = 1500")
    dbt_project.execute(f"delete from {schema}.items where id = 1501")
    dbt_project.execute(f"insert into {schema}.items (id, code, qty, _cdc_key, _cdc_seq, _cdc_source_ts) "
                        f"values (2999, 'extra', 1, '[\"2999\"]', '00000000000000000001', current_timestamp())")
    dbt_project.execute(f"update {schema}.order_lines set qty = 999 where order_id = 12 and line = 'l3'")
    dbt_project.execute(f"insert into {schema}.order_lines (order_id, line, qty, _cdc_key, _cdc_seq, _cdc_source_ts) "
                        f"values (15, 'zz', 1, '[\"15\",\"zz\"]', '00000000000000000001', current_timestamp())")
    with pytest.raises(AssertionError):
        apply_and_check(dbt_project, mariadb, user, ["items", "order_lines"])
    # Read keys 1400 to 3000 of one table and (10, l0) to (20, l9) of the other again: only those ranges.
    write_request(config.state, "shop.items", ["1400"], ["3000"])
    write_request(config.state, "shop.order_lines", ["10", "l0"], ["20", "l9"])
    again = capture_mysql.run(added)
    assert 0 < again.snapshot_rows <= 1601 + 110, again
    apply_and_check(dbt_project, mariadb, user, ["items", "order_lines"])
    assert "rows the source no longer has removed (online snapshot ranges)" in dbt_project.dbt_log()


def test_a_mariadb_online_snapshot_killed_at_random_moments_resumes_within_a_page(mariadb, dbt_project, tmp_path,
                                                                                   capture_password):
    user, password = setup_source(mariadb)
    capture_password(password)
    dbt_project.write_model("items", "unique_key='id', source_table='shop.items'", ITEMS)
    state = tmp_path / "state.json"
    args = ["--port", str(mariadb.port), "--user", user, "--tables", "shop.items", "--out", str(dbt_project.inbox),
            "--state", str(state), "--snapshot", "online", "--snapshot-page-rows", "100",
            "--snapshot-rows-per-second", "1000", "--max-wait-seconds", "0.2"]
    writer = Writer(mariadb, state)
    writer.start()
    chance = random.Random(5)
    for _ in range(5):
        following = capture("mysql", *args, follow=True)
        time.sleep(chance.uniform(0.5, 1.5))
        following.kill()
        following.wait(timeout=30)
    finished = capture("mysql", *args)  # the snapshot's last pages, and the writer stops
    writer.join()
    caught_up = capture("mysql", *args)  # what the writer did after that
    assert finished.returncode == 0 and caught_up.returncode == 0, finished.stderr + caught_up.stderr
    assert json.loads(state.read_text())["snapshots"] == []

    reads = [json.loads(line)["after"]["id"] for path in dbt_project.inbox.glob("*pages*")
             for line in path.read_text().splitlines() if '"op":"r"' in line]
    assert len(reads) - len(set(reads)) <= 5 * 100, len(reads) - len(set(reads))
    apply_and_check(dbt_project, mariadb, user, ["items"])


def test_an_online_snapshot_without_a_writable_signal_table_says_what_to_create(mariadb, tmp_path, capture_password):
    execute(mariadb, "create database shop", "create table shop.items (id int primary key, qty int)")
    user, password = create_mariadb_capture_user(mariadb, ["shop"])
    capture_password(password)
    state = tmp_path / "state.json"
    failed = capture("mysql", "--port", str(mariadb.port), "--user", user, "--tables", "shop.items",
                     "--out", str(tmp_path / "out"), "--state", str(state), "--snapshot", "online")
    assert failed.returncode == 2, failed.stderr
    assert f"online snapshots write watermarks into {SIGNAL_TABLE}" in failed.stderr
    assert f"grant insert on {SIGNAL_TABLE} to {user}" in failed.stderr
    assert not state.exists() and not list((tmp_path / "out").glob("*.json"))
    assert os.environ["MYSQL_PWD"] not in failed.stderr


def test_keys_whose_text_is_not_in_their_order_read_in_pages_reach_the_mirror_whole(mariadb, dbt_project, tmp_path):
    """A page's key range is the range of the keys' written values, which the mirrors compare: a
    TIME key's text is not in time order, a BIT key's text is its bytes, and the server orders a
    time-based UUID by its time, INET4/INET6 and a wide decimal by value."""
    from python_jobs import scaffold

    execute(mariadb, "create database shop",
            "create table shop.clock (k time primary key, n int)",
            "insert into shop.clock values ('-12:00:00', 1), ('-01:00:00', 2), ('00:00:00', 3), ('05:00:00', 4), "
            "('23:00:00', 5), ('100:00:00', 6), ('500:00:00', 7)",
            "create table shop.flags (k bit(10) primary key, n int)",
            "insert into shop.flags values (b'1', 1), (b'10', 2), (b'11111111', 3), (b'100000000', 4), "
            "(b'1111111111', 5), (b'0', 6), (b'1000001', 7)",
            "create table shop.ids (k uuid primary key, n int)",
            "insert into shop.ids values ('00000001-0000-1000-8000-000000000000', 1), "
            "('ffffffff-0000-1000-8000-000000000000', 2), ('00000000-ffff-1000-8000-000000000000', 3), "
            "('10000000-0000-1001-8000-000000000000', 4), ('20000000-0000-1000-8000-000000000001', 5), "
            "('0a000000-0000-1000-8000-000000000000', 6), ('00000000-0000-2000-8000-000000000000', 7)",
            "create table shop.hosts (k inet4 primary key, n int)",
            "insert into shop.hosts values ('9.0.0.1', 1), ('10.0.0.1', 2), ('100.0.0.1', 3), ('2.0.0.1', 4), "
            "('20.0.0.1', 5), ('192.168.0.1', 6), ('1.0.0.1', 7)",
            "create table shop.wide (k decimal(40,0) primary key, n int)",
            "insert into shop.wide values (9, 1), (10, 2), (100, 3), (-5, 4), (2, 5), (1000000000000000000000000000000001, 6), "
            "(-10, 7)",
            "create database cdc_merge", SIGNAL_TABLE_DDL.format(table=SIGNAL_TABLE))
    user, password = create_mariadb_capture_user(mariadb, ["shop"])
    execute(mariadb, f"grant insert on {SIGNAL_TABLE} to {user}@'%'")
    names = ["shop.clock", "shop.flags", "shop.ids", "shop.hosts", "shop.wide"]
    config = capture_mysql.CaptureConfig(host="127.0.0.1", port=mariadb.port, user=user, password=password,
                                         tables=tuple(names), out=dbt_project.inbox, state=tmp_path / "state.json",
                                         snapshot_mode="online", page_rows=2)
    capture_mysql.run(config)
    capture_mysql.run(config)  # the pages the first run left
    assert not json.loads(config.state.read_text()).get("snapshots")
    tables = scaffold.mysql_tables("127.0.0.1", mariadb.port, user, password, names)
    for table in tables:
        (dbt_project.project_dir / "models" / "mirrors" / f"{table.model_name}.sql").write_text(scaffold.model_sql(table))
    assert dbt_project.land({table.qualified: list(table.primary_key) for table in tables}).counts["rejected"] == 0
    dbt_project.dbt("run", "--select", *(table.model_name for table in tables))
    mirrored = {table.qualified: sorted(row["n"] for row in dbt_project.query(
        f"select n from {dbt_project.schema}.{table.model_name}")) for table in tables}
    assert mirrored == {name: [1, 2, 3, 4, 5, 6, 7] for name in names}


def test_a_truncate_inside_a_pages_window_keeps_none_of_its_rows(mariadb, dbt_project, tmp_path, monkeypatch):
    """The page's rows were read before the truncate committed, inside its watermarks: written at the
    high watermark, after the truncate, they came back."""
    from python_jobs.capture import mysql_pages

    user, password = setup_source(mariadb)
    dbt_project.write_model("items", "unique_key='id', source_table='shop.items'", ITEMS)
    read_page, pages_read = mysql_pages.read_page, []

    def truncated_after_the_second_page(*args, **kwargs):
        page = read_page(*args, **kwargs)
        pages_read.append(page)
        if len(pages_read) == 2:  # after the page's rows were read, before its high watermark
            execute(mariadb, "truncate table shop.items", "insert into shop.items values (5000, 'after', 1)")
        return page

    monkeypatch.setattr(mysql_pages, "read_page", truncated_after_the_second_page)
    config = capture_mysql.CaptureConfig(host="127.0.0.1", port=mariadb.port, user=user, password=password,
                                         tables=("shop.items",), out=dbt_project.inbox, state=tmp_path / "state.json",
                                         snapshot_mode="online", page_rows=500)
    capture_mysql.run(config)
    assert len(pages_read[1].rows) == 500
    dbt_project.land({"shop.items": ["id"]})
    dbt_project.dbt("run", "--select", "items")
    assert [row["id"] for row in dbt_project.query(f"select id from {dbt_project.schema}.items")] == [5000]
