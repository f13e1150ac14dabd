"""PostgreSQL logical decoding -> capture -> land -> dbt run, checked row by row against
the source tables of a real server under a seeded random workload.
Why over 300 lines: the workload, the server's set-up and the comparison serve all its tests."""

from __future__ import annotations

import datetime as dt
import json
import random
import shutil
import subprocess
import sys
import tempfile
from decimal import Decimal
from pathlib import Path

import orjson
import pytest

from conftest import PROJECT_DIR
from test_consistent_cuts import assert_cut_is_the_newest_state
from capture_invariants import assert_whole_transactions_through_capture
from python_jobs.demo.transaction_source import KEYS as TRANSACTION_KEYS
from harness.postgres_server import PG_BIN, start_postgres
from harness.throwaway_server import kill_after_first_file
from python_jobs.capture import postgres as capture_postgres
from python_jobs.capture.postgres import CaptureConfig
from python_jobs.capture.output import debezium_event
from python_jobs.capture.postgres_events import TableShape, Transaction, change_events
from python_jobs.formats.wal2json import json_value

KEYS = {"shop.accounts": ["id"], "shop.order_lines": ["order_id", "line_no"]}
ACCOUNTS_MODEL = (
    "unique_key='id', source_table='shop.accounts'",
    "{{ cdc_merge.cdc_column('id', 'bigint') }}, {{ cdc_merge.cdc_column('name', 'string') }}, "
    "{{ cdc_merge.cdc_column('balance', 'decimal(14,2)') }}, {{ cdc_merge.cdc_column('opened_at', 'timestamp') }}, "
    "{{ cdc_merge.cdc_column('active', 'boolean') }}, {{ cdc_merge.cdc_column('note', 'string') }}, "
    "{{ cdc_merge.cdc_metadata_columns() }}",
)
ORDER_LINES_MODEL = (
    "unique_key=['order_id', 'line_no'], source_table='shop.order_lines'",
    "{{ cdc_merge.cdc_column('order_id', 'int') }}, {{ cdc_merge.cdc_column('line_no', 'int') }}, "
    "{{ cdc_merge.cdc_column('qty', 'int') }}, {{ cdc_merge.cdc_column('price', 'decimal(10,3)') }}, "
    "{{ cdc_merge.cdc_metadata_columns() }}",
)
TEXTS = ["Zoë", "東京", "🚀 launch", "naïve café", "line\nbreak", "quote \" and \\ backslash", "", "plain"]


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
        if roll < 0.2:  # big enough to be stored out of line (TOAST), and not compressible
            return "".join(self.random.choice("abcdefghijklmnopqrstuvwxyzÆØÅ東京") for _ in range(4000))
        return " ".join(self.random.choice(TEXTS) for _ in range(self.random.randint(1, 3)))

    def account_values(self):
        offset = dt.timezone(dt.timedelta(minutes=self.random.choice([0, 330, -480, 60])))
        opened = dt.datetime(2020, 1, 1, tzinfo=offset) + dt.timedelta(seconds=self.random.randint(0, 10**8),
                                                                       microseconds=self.random.randint(0, 999999))
        return (
            self.random.choice(TEXTS),
            Decimal(self.random.randint(-10**12, 10**12)) / 100 if self.random.random() > 0.1 else None,
            opened if self.random.random() > 0.1 else None,
            self.random.choice([True, False, None]),
            self.text(),
        )

    def ids(self, cursor, table: str, columns: str) -> list[tuple]:
        cursor.execute(f"select {columns} from {table}")
        return cursor.fetchall()

    def statement(self, cursor) -> None:
        roll = self.random.random()
        accounts = self.ids(cursor, "shop.accounts", "id")
        lines = self.ids(cursor, "shop.order_lines", "order_id, line_no")
        if roll < 0.3 or not accounts:
            self.next_id += 1
            cursor.execute("insert into shop.accounts values (%s, %s, %s, %s, %s, %s)", (self.next_id, *self.account_values()))
        elif roll < 0.5:
            (account,) = self.random.choice(accounts)
            column = self.random.choice(["name", "balance", "opened_at", "active"])
            value = dict(zip(["name", "balance", "opened_at", "active", "note"], self.account_values()))[column]
            cursor.execute(f"update shop.accounts set {column} = %s where id = %s", (value, account))
        elif roll < 0.6:
            (account,) = self.random.choice(accounts)
            cursor.execute("delete from shop.accounts where id = %s", (account,))
        elif roll < 0.67:
            # With REPLICA IDENTITY DEFAULT a key change logs no unchanged TOAST value (a long note):
            # the capture reads it from the table.
            (account,) = self.random.choice(accounts)
            self.next_id += 1
            cursor.execute("update shop.accounts set id = %s where id = %s", (self.next_id, account))
        elif roll < 0.8 or not lines:
            order, line = self.random.randint(1, 40), self.random.randint(1, 6)
            cursor.execute(
                "insert into shop.order_lines values (%s, %s, %s, %s) on conflict (order_id, line_no) "
                "do update set qty = excluded.qty",
                (order, line, self.random.randint(-5, 500), Decimal(self.random.randint(0, 10**7)) / 1000),
            )
        elif roll < 0.9:
            order, line = self.random.choice(lines)
            cursor.execute("update shop.order_lines set price = %s where order_id = %s and line_no = %s",
                           (self.random.choice([None, Decimal("0.001"), Decimal("9999.999")]), order, line))
        elif roll < 0.95:
            order, line = self.random.choice(lines)
            cursor.execute("delete from shop.order_lines where order_id = %s and line_no = %s", (order, line))
        else:
            order, line = self.random.choice(lines)
            cursor.execute(
                "update shop.order_lines set line_no = line_no + 100 where order_id = %s and line_no = %s "
                "and not exists (select 1 from shop.order_lines where order_id = %s and line_no = %s)",
                (order, line, order, line + 100),
            )

    def run(self, transactions: int) -> None:
        for _ in range(transactions):
            with self.connection.cursor() as cursor:
                for _ in range(self.random.randint(1, 5)):
                    self.statement(cursor)
            if self.random.random() < 0.1:
                self.connection.rollback()
            else:
                self.connection.commit()


def source_rows(connection) -> dict[str, list[tuple]]:
    with connection.cursor() as cursor:
        cursor.execute("select id, name, balance, opened_at, active, note from shop.accounts order by id")
        accounts = [
            (row[0], row[1], row[2], row[3].astimezone(dt.timezone.utc).replace(tzinfo=None) if row[3] else None, *row[4:])
            for row in cursor.fetchall()
        ]
        cursor.execute("select order_id, line_no, qty, price from shop.order_lines order by order_id, line_no")
        lines = [tuple(row) for row in cursor.fetchall()]
    connection.rollback()
    return {"accounts": accounts, "order_lines": lines}


def mirror_rows(dbt_project) -> dict[str, list[tuple]]:
    return {
        "accounts": [tuple(row) for row in dbt_project.spark.sql(
            f"select id, name, balance, opened_at, active, note from {dbt_project.schema}.accounts order by id").collect()],
        "order_lines": [tuple(row) for row in dbt_project.spark.sql(
            f"select order_id, line_no, qty, price from {dbt_project.schema}.order_lines order by order_id, line_no").collect()],
    }


@pytest.fixture
def postgres():
    # Not under pytest's tmp_path: the server runs as another user, who cannot enter it.
    directory = Path(tempfile.mkdtemp(prefix="cdc-merge-postgres-"))
    server = start_postgres(directory)
    yield server
    server.stop()
    shutil.rmtree(directory, ignore_errors=True)


def test_mirrors_equal_the_source_tables_through_rounds_and_a_killed_capture(postgres, dbt_project, tmp_path):
    connection = postgres.connect()
    create_tables(connection)
    workload = Workload(connection, seed=20261122)
    workload.run(80)  # rows that exist before capture starts: only the snapshot has them
    # One consistency group: the capture's END records let both mirrors apply whole transactions only.
    dbt_project.write_model("accounts", "consistency_group='shop', " + ACCOUNTS_MODEL[0], ACCOUNTS_MODEL[1])
    dbt_project.write_model("order_lines", "consistency_group='shop', " + ORDER_LINES_MODEL[0], ORDER_LINES_MODEL[1])
    config = CaptureConfig(
        dsn=postgres.dsn, tables=tuple(KEYS), slot="mirror_test", out=dbt_project.inbox,
        state=tmp_path / "capture-state.json", max_changes_per_file=50,
    )

    def capture_land_merge_and_compare() -> None:
        dbt_project.land(KEYS)
        dbt_project.dbt("run", "--select", "accounts", "order_lines")
        assert mirror_rows(dbt_project) == source_rows(connection)
        assert_cut_is_the_newest_state(dbt_project, "shop", ["accounts", "order_lines"])

    first = capture_postgres.run(config)
    assert first.snapshot_rows > 0
    workload.run(60)  # committed after the snapshot: only the stream has these
    capture_postgres.run(config)
    capture_land_merge_and_compare()

    workload.run(120)
    capture_postgres.run(config)
    capture_land_merge_and_compare()

    # Killed half way: one transaction per file, SIGKILL once the first file appears.
    workload.run(150)
    command = [
        sys.executable, "-m", "python_jobs.capture.postgres", "--dsn", postgres.dsn,
        "--tables", ",".join(KEYS), "--slot", "mirror_test", "--out", str(dbt_project.inbox),
        "--state", str(config.state), "--max-changes-per-file", "1",
    ]
    assert kill_after_first_file(command, dbt_project.inbox, cwd=PROJECT_DIR) >= 1
    resumed = capture_postgres.run(config)
    assert resumed.events > 0
    capture_land_merge_and_compare()

    workload.run(100)
    capture_postgres.run(config)
    capture_land_merge_and_compare()
    connection.close()


def create_tables(connection) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "create schema shop;"
            "create table shop.accounts (id bigint primary key, name text, balance numeric(14,2),"
            " opened_at timestamptz, active boolean, note text);"
            "create table shop.order_lines (order_id int, line_no int, qty int, price numeric(10,3),"
            " primary key (order_id, line_no));"
        )
    connection.commit()


def test_pg_recvlogical_wal2json_files_land_as_they_are(postgres, dbt_project):
    connection = postgres.connect()
    create_tables(connection)
    with connection.cursor() as cursor:
        # FULL: the old tuple carries the TOAST values an update did not change.
        cursor.execute("alter table shop.accounts replica identity full")
    connection.commit()
    with connection.cursor() as cursor:
        cursor.execute("select pg_create_logical_replication_slot('recv', 'wal2json')")
    connection.commit()
    Workload(connection, seed=7).run(150)
    with connection.cursor() as cursor:
        cursor.execute("select pg_current_wal_lsn()::text")
        (end,) = cursor.fetchone()
    connection.commit()
    subprocess.run(
        [str(PG_BIN / "pg_recvlogical"), "-d", postgres.dsn, "--slot", "recv", "--start", "--no-loop",
         "-E", end, "-f", str(dbt_project.inbox / "recv.json"), "-o", "format-version=2", "-o", "include-lsn=true",
         "-o", "include-pk=true", "-o", "include-timestamp=true", "-o", "include-xids=true"],
        check=True, timeout=60,
    )
    dbt_project.write_model("accounts", *ACCOUNTS_MODEL)
    dbt_project.write_model("order_lines", *ORDER_LINES_MODEL)

    summary = dbt_project.land(KEYS, format="wal2json")
    dbt_project.dbt("run", "--select", "accounts", "order_lines")

    assert summary.counts["event"] > 150 and summary.counts["rejected"] == 0
    assert mirror_rows(dbt_project) == source_rows(connection)
    connection.close()


def test_values_are_written_as_debezium_writes_them():
    assert json_value("numeric(14,2)", "12345678901234.50") == "12345678901234.50"
    assert json_value("bigint", "9223372036854775807") == 9223372036854775807
    assert json_value("timestamp with time zone", "2024-01-02 03:04:05.5+05:30") == "2024-01-01T21:34:05.500000Z"
    assert json_value("timestamp with time zone", "infinity") == "infinity"
    assert json_value("timestamp without time zone", "2024-01-02 03:04:05") == "2024-01-02T03:04:05"
    assert json_value("double precision", "NaN") == "NaN"
    assert json_value("jsonb", '{"a": [1, "é"]}') == '{"a": [1, "é"]}'  # the text wal2json sends
    assert json_value("text", None) is None


def test_a_primary_key_update_is_a_delete_then_an_insert_and_unsent_toast_is_marked():
    change = {
        "action": "U", "lsn": "0/10", "schema": "shop", "table": "accounts",
        "columns": [{"name": "id", "type": "bigint", "value": "2"}, {"name": "name", "type": "text", "value": "b"}],
        "identity": [{"name": "id", "type": "bigint", "value": "1"}],
        "pk": [{"name": "id", "type": "bigint"}],
    }
    transaction = Transaction(xid=7, commit_ts_ms=1000, commit_lsn=32, changes=[change])
    shapes = {"shop.accounts": TableShape(frozenset({"id", "name", "note"}), toastable=frozenset({"name", "note"}))}

    *events, end = change_events(transaction, "db", shapes, processed_ms=2000)

    assert end == {"status": "END", "id": "7:32", "ts_ms": 1000, "event_count": 2,
                   "data_collections": [{"data_collection": "shop.accounts", "event_count": 2}]}
    assert [(e["op"], e["before"], e["after"]) for e in events] == [
        ("d", {"id": 1}, None),
        ("c", None, {"id": 2, "name": "b", "note": "__debezium_unavailable_value"}),
    ]
    assert {json.dumps(e["source"]["lsn"]) for e in events} == {"16"}
    assert [e["transaction"] for e in events] == [
        {"id": "7:32", "total_order": 1, "data_collection_order": 1},
        {"id": "7:32", "total_order": 2, "data_collection_order": 2},
    ]


def test_data_collection_order_counts_the_events_of_each_table_in_the_transaction():
    def insert(table, lsn, key):
        return {"action": "I", "lsn": lsn, "schema": "shop", "table": table,
                "columns": [{"name": "id", "type": "bigint", "value": str(key)}], "pk": [{"name": "id", "type": "bigint"}]}

    changes = [insert("orders", "0/10", 1), insert("order_lines", "0/11", 1), insert("order_lines", "0/12", 2), insert("orders", "0/13", 2)]
    transaction = Transaction(xid=9, commit_ts_ms=1000, commit_lsn=64, changes=changes)
    *events, end = change_events(transaction, "db", {"shop.orders": TableShape(frozenset({"id"})),
                                                     "shop.order_lines": TableShape(frozenset({"id"}))}, processed_ms=2000)

    assert [(e["source"]["table"], e["transaction"]["total_order"], e["transaction"]["data_collection_order"]) for e in events] == [
        ("orders", 1, 1), ("order_lines", 2, 1), ("order_lines", 3, 2), ("orders", 4, 2),
    ]
    assert (end["event_count"], end["data_collections"]) == (
        4, [{"data_collection": "shop.orders", "event_count": 2}, {"data_collection": "shop.order_lines", "event_count": 2}])


def test_change_events_are_written_as_the_debezium_envelope_writes_them():
    """change_events builds each event itself (once per change): byte for byte output.debezium_event's."""
    changes = [
        {"action": "I", "lsn": "0/10", "schema": "shop", "table": "orders", "pk": [{"name": "id", "type": "bigint"}],
         "columns": [{"name": "id", "type": "bigint", "value": 1}, {"name": "at", "type": "timestamp with time zone",
                                                                   "value": "2026-01-02 03:04:05.5+00"}]},
        {"action": "D", "lsn": "0/11", "schema": "shop", "table": "lines", "pk": [{"name": "id", "type": "bigint"}],
         "identity": [{"name": "id", "type": "bigint", "value": 4}]},
        {"action": "U", "lsn": "0/12", "schema": "shop", "table": "orders", "pk": [{"name": "id", "type": "bigint"}],
         "columns": [{"name": "id", "type": "bigint", "value": 1}, {"name": "at", "type": "timestamp with time zone", "value": None}]},
    ]
    transaction = Transaction(xid=9, commit_ts_ms=1000, commit_lsn=64, changes=changes)

    *events, _ = change_events(transaction, "db", {"shop.orders": TableShape(frozenset({"id", "at"})),
                                                   "shop.lines": TableShape(frozenset({"id"}))}, processed_ms=2000)

    expected = [debezium_event(op=event["op"], before=event["before"], after=event["after"], source=event["source"],
                               transaction_id="9:64", processed_ms=2000, total_order=number, data_collection_order=in_table)
                for event, number, in_table in zip(events, (1, 2, 3), (1, 1, 2))]
    assert [orjson.dumps(event) for event in events] == [orjson.dumps(event) for event in expected]
    assert [event["after"] for event in events] == [{"id": 1, "at": "2026-01-02T03:04:05.500000Z"}, None, {"id": 1, "at": None}]


def test_a_group_read_at_its_cut_sees_whole_transactions_the_capture_wrote(postgres, dbt_project, tmp_path):
    connection = postgres.connect()
    config = CaptureConfig(dsn=postgres.dsn, tables=tuple(TRANSACTION_KEYS), slot="cuts_test", out=tmp_path / "captured",
                           state=tmp_path / "capture-state.json")
    assert_whole_transactions_through_capture(dbt_project, connection, "create schema",
                                              lambda out: capture_postgres.run(config), config.out)
    connection.close()


def test_an_update_naming_a_dropped_column_asks_for_its_table_again_where_it_leaves_out_a_toast_column():
    """Decoded once a column is dropped (or renamed), an update names a column the catalog no longer has:
    a left-out large value cannot be marked unchanged, so the capture is told to read the table again."""
    def update(table: str, names: list[str]) -> dict:
        return {"action": "U", "lsn": "0/10", "schema": "shop", "table": table, "pk": [{"name": "id", "type": "bigint"}],
                "columns": [{"name": name, "type": "text", "value": "1"} for name in names]}

    shapes = {f"shop.{table}": TableShape(frozenset({"id", "title", "body"}), toastable=frozenset({"title", "body"}))
              for table in ("a", "b", "c")}
    changes = [update("a", ["id", "title", "extra"]), update("b", ["id", "title", "body", "extra"]), update("c", ["id", "title"])]
    unmarked: set[str] = set()
    *events, _ = change_events(Transaction(xid=1, commit_ts_ms=1000, commit_lsn=32, changes=changes), "db", shapes,
                               processed_ms=2000, unmarked_toast=unmarked)
    assert unmarked == {"shop.a"}  # b sent every column; c's shape is the catalog's, its body marked
    assert [sorted(event["after"]) for event in events] == [["extra", "id", "title"], ["body", "extra", "id", "title"],
                                                           ["body", "id", "title"]]
    assert events[2]["after"]["body"] == "__debezium_unavailable_value"
