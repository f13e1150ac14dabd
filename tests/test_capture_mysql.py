"""MariaDB binlog -> capture -> land -> dbt run, checked row by row against the source tables
of a real server under a seeded random workload.
Why over 300 lines: the workload, the server's set-up and the comparison serve all its tests."""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import shutil
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

import orjson
import pytest

from conftest import PROJECT_DIR
from test_consistent_cuts import assert_cut_is_the_newest_state
from capture_invariants import assert_whole_transactions_through_capture
from python_jobs.demo.transaction_source import KEYS as TRANSACTION_KEYS
from harness.mariadb_server import start_mariadb
from harness.throwaway_server import kill_after_first_file
from python_jobs.capture import mysql as capture_mysql
from python_jobs.capture.output import CaptureError, debezium_event
from python_jobs.capture.mysql import CaptureConfig
from python_jobs.capture.mysql_events import Column, RowChange, TableInfo, Transaction, change_events, json_value

KEYS = {"shop.accounts": ["id"], "shop.order_lines": ["order_id", "line_no"]}
ACCOUNTS_MODEL = (
    "unique_key='id', source_table='shop.accounts'",
    "{{ cdc_merge.cdc_column('id', 'bigint') }}, {{ cdc_merge.cdc_column('name', 'string') }}, "
    "{{ cdc_merge.cdc_column('balance', 'decimal(14,2)') }}, {{ cdc_merge.cdc_column('opened_at', 'timestamp') }}, "
    "{{ cdc_merge.cdc_column('local_at', 'timestamp_ntz') }}, {{ cdc_merge.cdc_column('active', 'int') }}, "
    "{{ cdc_merge.cdc_column('waited', 'string') }}, {{ cdc_merge.cdc_column('note', 'string') }}, "
    "{{ cdc_merge.cdc_metadata_columns() }}",
)
ORDER_LINES_MODEL = (
    "unique_key=['order_id', 'line_no'], source_table='shop.order_lines'",
    "{{ cdc_merge.cdc_column('order_id', 'int') }}, {{ cdc_merge.cdc_column('line_no', 'int') }}, "
    "{{ cdc_merge.cdc_column('qty', 'int') }}, {{ cdc_merge.cdc_column('price', 'decimal(10,3)') }}, "
    "{{ cdc_merge.cdc_metadata_columns() }}",
)
TEXTS = ["Zoë", "東京", "🚀 launch", "naïve café", "line\nbreak", "quote \" and \\ backslash", "", "plain"]
ZONES = ["+00:00", "+05:30", "-08:00", "+01:00"]


class Workload:
    """Seeded random changes: inserts, updates, deletes, key changes, NULLs, rolled-back transactions."""

    def __init__(self, connection, seed: int) -> None:
        self.connection = connection
        self.random = random.Random(seed)
        self.next_id = 1

    def text(self):
        roll = self.random.random()
        if roll < 0.15:
            return None
        if roll < 0.2:
            return "".join(self.random.choice("abcdefghijklmnopqrstuvwxyzÆØÅ東京") for _ in range(3000))
        return " ".join(self.random.choice(TEXTS) for _ in range(self.random.randint(1, 3)))

    def account_values(self):
        moment = dt.datetime(2001, 1, 1) + dt.timedelta(seconds=self.random.randint(0, 10**9),
                                                        microseconds=self.random.randint(0, 999999))
        waited = dt.timedelta(seconds=self.random.randint(-3 * 10**6, 3 * 10**6), microseconds=self.random.randint(0, 99) * 10**4)
        return (
            self.random.choice(TEXTS),
            Decimal(self.random.randint(-10**12, 10**12)) / 100 if self.random.random() > 0.1 else None,
            moment if self.random.random() > 0.1 else None,
            moment - dt.timedelta(days=self.random.randint(0, 5000)) if self.random.random() > 0.1 else None,
            self.random.choice([1, 0, None]),
            waited if self.random.random() > 0.1 else None,
            self.text(),
        )

    def rows(self, cursor, table: str, columns: str) -> list[tuple]:
        cursor.execute(f"select {columns} from {table}")
        return list(cursor.fetchall())

    def statement(self, cursor) -> None:
        # TIMESTAMP values are read and written in the session's zone: vary it.
        cursor.execute(f"set time_zone = '{self.random.choice(ZONES)}'")
        roll = self.random.random()
        accounts = self.rows(cursor, "shop.accounts", "id")
        lines = self.rows(cursor, "shop.order_lines", "order_id, line_no")
        columns = ["name", "balance", "opened_at", "local_at", "active", "waited", "note"]
        if roll < 0.3 or not accounts:
            self.next_id += 1
            cursor.execute("insert into shop.accounts values (%s, %s, %s, %s, %s, %s, %s, %s)",
                           (self.next_id, *self.account_values()))
        elif roll < 0.5:
            (account,) = self.random.choice(accounts)
            values = dict(zip(columns, self.account_values()))
            chosen = self.random.sample(columns, self.random.randint(1, 3))
            assignments = ", ".join(f"{column} = %s" for column in chosen)
            cursor.execute(f"update shop.accounts set {assignments} where id = %s", (*[values[c] for c in chosen], account))
        elif roll < 0.6:
            (account,) = self.random.choice(accounts)
            cursor.execute("delete from shop.accounts where id = %s", (account,))
        elif roll < 0.67:
            (account,) = self.random.choice(accounts)
            self.next_id += 1
            cursor.execute("update shop.accounts set id = %s where id = %s", (self.next_id, account))
        elif roll < 0.8 or not lines:
            order, line = self.random.randint(1, 40), self.random.randint(1, 6)
            cursor.execute(
                "insert into shop.order_lines values (%s, %s, %s, %s) on duplicate key update qty = values(qty)",
                (order, line, self.random.randint(-5, 500), Decimal(self.random.randint(0, 10**7)) / 1000),
            )
        elif roll < 0.88:
            order, line = self.random.choice(lines)
            cursor.execute("update shop.order_lines set price = %s where order_id = %s and line_no = %s",
                           (self.random.choice([None, Decimal("0.001"), Decimal("9999.999")]), order, line))
        elif roll < 0.92:
            # One statement, many rows: one binlog rows event, told apart by source.row.
            order = self.random.randint(1, 40)
            cursor.execute("update shop.order_lines set qty = qty + 1 where order_id = %s", (order,))
        elif roll < 0.96:
            order, line = self.random.choice(lines)
            cursor.execute("delete from shop.order_lines where order_id = %s and line_no = %s", (order, line))
        else:
            order, line = self.random.choice(lines)
            cursor.execute(
                "update shop.order_lines set line_no = line_no + 100 where order_id = %s and line_no = %s "
                "and not exists (select 1 from (select * from shop.order_lines) o where o.order_id = %s and o.line_no = %s)",
                (order, line, order, line + 100),
            )

    def run(self, transactions: int) -> None:
        for _ in range(transactions):
            with self.connection.cursor() as cursor:
                cursor.execute("begin")
                for _ in range(self.random.randint(1, 5)):
                    self.statement(cursor)
            if self.random.random() < 0.1:
                self.connection.rollback()
            else:
                self.connection.commit()


def create_tables(connection) -> None:
    with connection.cursor() as cursor:
        cursor.execute("create database shop character set utf8mb4")
        cursor.execute(
            "create table shop.accounts (id bigint primary key, name varchar(200), balance decimal(14,2),"
            " opened_at timestamp(6) null, local_at datetime(6), active tinyint(1), waited time(2), note text)"
        )
        cursor.execute(
            "create table shop.order_lines (order_id int, line_no int, qty int, price decimal(10,3),"
            " primary key (order_id, line_no))"
        )
    connection.commit()


def source_rows(connection) -> dict[str, list[tuple]]:
    with connection.cursor() as cursor:
        cursor.execute("set time_zone = '+00:00'")
        cursor.execute("select id, name, balance, opened_at, local_at, active, waited, note from shop.accounts order by id")
        accounts = [(*row[:6], _time_text(row[6]), row[7]) for row in cursor.fetchall()]
        cursor.execute("select order_id, line_no, qty, price from shop.order_lines order by order_id, line_no")
        lines = [tuple(row) for row in cursor.fetchall()]
    connection.commit()
    return {"accounts": accounts, "order_lines": lines}


def _time_text(value):
    return None if value is None else json_value(Column("waited", "time", "time(2)"), value)


def mirror_rows(dbt_project) -> dict[str, list[tuple]]:
    schema = dbt_project.schema
    return {
        "accounts": [tuple(row) for row in dbt_project.spark.sql(
            f"select id, name, balance, opened_at, local_at, active, waited, note from {schema}.accounts order by id"
        ).collect()],
        "order_lines": [tuple(row) for row in dbt_project.spark.sql(
            f"select order_id, line_no, qty, price from {schema}.order_lines order by order_id, line_no").collect()],
    }


@pytest.fixture
def mariadb():
    # Not under pytest's tmp_path: the server runs as another user, who cannot enter it.
    directory = Path(tempfile.mkdtemp(prefix="cdc-merge-mariadb-"))
    server = start_mariadb(directory)
    yield server
    server.stop()
    shutil.rmtree(directory, ignore_errors=True)


def test_mirrors_equal_the_source_tables_through_rounds_and_a_killed_capture(mariadb, dbt_project, tmp_path):
    connection = mariadb.connect()
    create_tables(connection)
    workload = Workload(connection, seed=20261123)
    workload.run(80)  # rows that exist before capture starts: only the snapshot has them
    # One consistency group: the capture's END records let both mirrors apply whole transactions only.
    dbt_project.write_model("accounts", "consistency_group='shop', " + ACCOUNTS_MODEL[0], ACCOUNTS_MODEL[1])
    dbt_project.write_model("order_lines", "consistency_group='shop', " + ORDER_LINES_MODEL[0], ORDER_LINES_MODEL[1])
    config = CaptureConfig(
        host="127.0.0.1", port=mariadb.port, user="root", password="", tables=tuple(KEYS),
        out=dbt_project.inbox, state=tmp_path / "capture-state.json", max_changes_per_file=50,
    )

    def capture_land_merge_and_compare() -> None:
        summary = dbt_project.land(KEYS)
        assert summary.counts["rejected"] == 0
        dbt_project.dbt("run", "--select", "accounts", "order_lines")
        assert mirror_rows(dbt_project) == source_rows(connection)
        assert_cut_is_the_newest_state(dbt_project, "shop", ["accounts", "order_lines"])

    first = capture_mysql.run(config)
    assert first.snapshot_rows > 0
    workload.run(60)  # committed after the snapshot: only the stream has these
    capture_mysql.run(config)
    capture_land_merge_and_compare()

    workload.run(120)
    with connection.cursor() as cursor:
        cursor.execute("flush binary logs")  # the stream goes on in the next binlog file
    workload.run(30)
    capture_mysql.run(config)
    capture_land_merge_and_compare()

    # Killed half way: one transaction per file, SIGKILL once the first file appears.
    workload.run(150)
    command = [
        sys.executable, "-m", "python_jobs.capture.mysql", "--host", "127.0.0.1", "--port", str(mariadb.port),
        "--user", "root", "--tables", ",".join(KEYS), "--out", str(dbt_project.inbox),
        "--state", str(config.state), "--max-changes-per-file", "1",
    ]
    assert kill_after_first_file(command, dbt_project.inbox, cwd=PROJECT_DIR, env={**os.environ, "MYSQL_PWD": ""}) >= 1
    resumed = capture_mysql.run(config)
    assert resumed.events > 0
    capture_land_merge_and_compare()

    workload.run(100)
    capture_mysql.run(config)
    capture_land_merge_and_compare()
    connection.close()


def test_a_server_without_full_row_metadata_is_refused_before_anything_is_written(mariadb, tmp_path):
    connection = mariadb.connect(autocommit=True)
    create_tables(connection)
    with connection.cursor() as cursor:
        cursor.execute("set global binlog_row_metadata = 'MINIMAL'")
    config = CaptureConfig(host="127.0.0.1", port=mariadb.port, user="root", password="",
                           tables=("shop.accounts",), out=tmp_path / "out", state=tmp_path / "state.json")

    with pytest.raises(CaptureError, match=r"binlog_row_metadata=MINIMAL \(needs FULL\)"):
        capture_mysql.run(config)
    assert not (tmp_path / "out").exists() and not (tmp_path / "state.json").exists()


def captured_accounts(mariadb, tmp_path) -> tuple:
    """shop.accounts made and captured once: (an autocommit connection, the capture's config)."""
    connection = mariadb.connect(autocommit=True)
    create_tables(connection)
    config = CaptureConfig(host="127.0.0.1", port=mariadb.port, user="root", password="",
                           tables=("shop.accounts",), out=tmp_path / "out", state=tmp_path / "state.json")
    capture_mysql.run(config)
    return connection, config


def test_a_purged_binlog_fails_with_what_to_do(mariadb, tmp_path):
    connection, config = captured_accounts(mariadb, tmp_path)
    state_file = json.loads((tmp_path / "state.json").read_text())["file"]
    with connection.cursor() as cursor:
        cursor.execute("flush binary logs")
        cursor.execute("show master status")
        (current, _, *_) = cursor.fetchone()
        # The server ends the capture's binlog dump thread a moment after the capture disconnects;
        # until then PURGE keeps the file it reads (and a busy machine made that moment long).
        deadline = time.monotonic() + 30
        while True:
            cursor.execute(f"purge binary logs to '{current}'")
            cursor.execute("show binary logs")
            if state_file not in {row[0] for row in cursor.fetchall()} or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        cursor.execute("show binary logs")
        assert state_file not in {row[0] for row in cursor.fetchall()}, f"{state_file} was not purged"

    with pytest.raises(CaptureError, match=r"is purged.*--resnapshot"):
        capture_mysql.run(config)


def test_a_resnapshot_after_the_binlog_was_reset_is_refused_and_nothing_changed(mariadb, tmp_path):
    # RESET MASTER starts the binlog over at its first file: every change after it ranks below the
    # mirrors' rows, which neither a truncate nor a range record would then replace.
    connection, config = captured_accounts(mariadb, tmp_path)
    with connection.cursor() as cursor:
        cursor.execute("flush binary logs")
        cursor.execute("insert into shop.accounts (id, name, balance) values (900, 'late', 1)")
    capture_mysql.run(config)
    state = json.loads(config.state.read_text())
    files, state_text = sorted(config.out.iterdir()), config.state.read_text()
    with connection.cursor() as cursor:
        cursor.execute("reset master")

    with pytest.raises(CaptureError, match=rf"log is now at .*\.000001:\d+, before {state['file']}:{state['pos']}.*started over"):
        capture_mysql.run(CaptureConfig(**{**config.__dict__, "resnapshot": True}))
    assert sorted(config.out.iterdir()) == files and config.state.read_text() == state_text


def test_values_are_written_as_debezium_writes_them():
    assert json_value(Column("a", "decimal", "decimal(14,2)"), Decimal("12345678901234.50")) == "12345678901234.50"
    assert json_value(Column("a", "timestamp", "timestamp(6)"), dt.datetime(2024, 1, 2, 3, 4, 5, 500000)) == (
        "2024-01-02T03:04:05.500000Z")
    assert json_value(Column("a", "datetime", "datetime"), dt.datetime(2024, 1, 2, 3, 4, 5)) == "2024-01-02T03:04:05.000000"
    assert json_value(Column("a", "time", "time(2)"), -dt.timedelta(hours=838, seconds=0.5)) == "-838:00:00.500000"
    assert json_value(Column("a", "set", "set('b','a','it''s')"), {"a", "b", "it's"}) == "b,a,it's"
    assert json_value(Column("a", "bit", "bit(5)"), b"\x15") == json_value(Column("a", "bit", "bit(5)"), "10101") == 21
    assert json_value(Column("a", "blob", "blob"), b"\x00\xff") == "AP8="
    assert json_value(Column("a", "json", "json"), '{"b": 1, "a": "é"}') == '{"a":"é","b":1}'


def test_a_primary_key_update_is_a_delete_then_an_insert_at_its_binlog_position():
    table = TableInfo("shop", "accounts", (Column("id", "bigint", "bigint"), Column("name", "varchar", "varchar(9)")), ("id",))
    change = RowChange(table, "u", {"id": 1, "name": "a"}, {"id": 2, "name": "b"}, "binlog.000007", 4242, 3)
    transaction = Transaction(gtid="0-1-9", begin_file="binlog.000007", begin_position=4000, commit_ts_ms=1000,
                              changes=[change])

    *events, end = change_events(transaction, processed_ms=2000)

    assert (end["status"], end["id"], end["event_count"]) == ("END", "0-1-9", 2)
    assert [(e["op"], e["before"], e["after"]) for e in events] == [
        ("d", {"id": 1, "name": "a"}, None),
        ("c", None, {"id": 2, "name": "b"}),
    ]
    assert {json.dumps([e["source"]["file"], e["source"]["pos"], e["source"]["row"]]) for e in events} == {
        '["binlog.000007", 4242, 3]'}
    assert [e["transaction"]["id"] for e in events] == ["0-1-9", "0-1-9"]


def test_change_events_are_written_as_the_debezium_envelope_writes_them():
    """change_events builds each event itself (once per change): byte for byte output.debezium_event's."""
    accounts = TableInfo("shop", "accounts", (Column("id", "bigint", "bigint"), Column("at", "timestamp", "timestamp")), ("id",))
    lines = TableInfo("shop", "lines", (Column("id", "bigint", "bigint"),), ("id",))
    changes = [RowChange(accounts, "c", None, {"id": 1, "at": dt.datetime(2024, 1, 2, 3, 4, 5)}, "binlog.000007", 4242, 0),
               RowChange(lines, "d", {"id": 4}, None, "binlog.000007", 4300, 0),
               RowChange(accounts, "u", {"id": 1, "at": None}, {"id": 1, "at": None}, "binlog.000007", 4400, 0)]
    transaction = Transaction(begin_file="binlog.000007", begin_position=4000, commit_ts_ms=1000, changes=changes)

    *events, _ = change_events(transaction, processed_ms=2000)

    expected = [debezium_event(op=event["op"], before=event["before"], after=event["after"],
                               source={key: value for key, value in event["source"].items() if key != "version"},
                               transaction_id="binlog.000007:4000", processed_ms=2000, total_order=number,
                               data_collection_order=in_table)
                for event, number, in_table in zip(events, (1, 2, 3), (1, 1, 2))]
    assert [orjson.dumps(event) for event in events] == [orjson.dumps(event) for event in expected]
    assert events[0]["after"] == {"id": 1, "at": "2024-01-02T03:04:05.000000Z"}


def test_a_group_read_at_its_cut_sees_whole_transactions_the_capture_wrote(mariadb, dbt_project, tmp_path):
    connection = mariadb.connect()
    config = CaptureConfig(host="127.0.0.1", port=mariadb.port, user="root", password="", tables=tuple(TRANSACTION_KEYS),
                           out=tmp_path / "captured", state=tmp_path / "capture-state.json")
    assert_whole_transactions_through_capture(dbt_project, connection, "create database",
                                              lambda out: capture_mysql.run(config), config.out)
    connection.close()
