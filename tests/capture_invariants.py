"""The bank and shop workload (python_jobs/demo/transaction_source.py) as SQL transactions on a real
server, captured by its capture (cdc-capture-postgres, cdc-capture-mysql), landed in waves whose
file ends in the middle of the newest transaction, and applied by a consistency group: the read at
the cut keeps the invariants every wave, and the mirrors end equal to the source.
tests/test_capture_postgres.py and tests/test_capture_mysql.py run it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from python_jobs.demo.transaction_checks import MIRRORS, check_at_latest_cut, violations
from python_jobs.demo.transaction_source import KEYS, SCHEMA_OF, TransactionTopics
from test_consistent_cuts import OPENING, mirror_sql

COLUMNS_DDL = {
    "accounts": "(id bigint primary key, balance bigint)",
    "transfers": "(id bigint primary key, from_id bigint, to_id bigint, amount bigint)",
    "orders": "(id bigint primary key, line_count bigint, total bigint)",
    "order_lines": "(id bigint primary key, order_id bigint, amount bigint)",
}
ACCOUNTS = 6
WAVES = 3


def create_tables(connection, create_schema: str) -> None:
    """create_schema: 'create schema' on PostgreSQL, 'create database' on MariaDB."""
    with connection.cursor() as cursor:
        for schema in sorted(set(SCHEMA_OF.values())):
            cursor.execute(f"{create_schema} {schema}")
        for table, columns in COLUMNS_DDL.items():
            cursor.execute(f"create table {SCHEMA_OF[table]}.{table} {columns}")
    connection.commit()


def run_as_sql(connection) -> Callable[[list], None]:
    """Each transaction of the workload as one transaction on the server (DB-API, %s parameters)."""

    def run(changes: list) -> None:
        with connection.cursor() as cursor:
            for table, op, after, before in changes:
                name = f"{SCHEMA_OF[table]}.{table}"
                if op == "c":
                    cursor.execute(f"insert into {name} ({', '.join(after)}) values ({', '.join(['%s'] * len(after))})",
                                   list(after.values()))
                elif op == "u":
                    columns = [column for column in after if column != "id"]
                    cursor.execute(f"update {name} set {', '.join(f'{column} = %s' for column in columns)} where id = %s",
                                   [after[column] for column in columns] + [after["id"]])
                else:
                    cursor.execute(f"delete from {name} where id = %s", [before["id"]])
        connection.commit()

    return run


class SplitLanding:
    """The capture's files, moved out of its folder and landed in waves as one file each: a wave's
    file ends before the newest transaction's last event and its END record, which land with the
    next wave."""

    def __init__(self, captured: Path, inbox: Path) -> None:
        self.captured, self.inbox = captured, inbox
        self.pending: list[str] = []

    def wave(self, number: int, everything: bool = False) -> int:
        """Writes the wave's file; returns how many events of a transaction it leaves for the next."""
        files = sorted(self.captured.glob("*.json"), key=lambda path: (path.stat().st_mtime_ns, path.name))
        lines = self.pending + [line for path in files for line in path.read_text().splitlines() if line]
        for path in files:
            path.unlink()
        ends = [index for index, line in enumerate(lines) if json.loads(line).get("status") == "END"]
        cut = len(lines) if everything or not ends else ends[-1] - 1
        self.inbox.mkdir(parents=True, exist_ok=True)
        (self.inbox / f"w{number:02d}.json").write_text("".join(line + "\n" for line in lines[:cut]))
        self.pending = lines[cut:]
        return len(self.pending)


def source_state(topics: TransactionTopics) -> dict:
    return {"balances": topics.balances, "orders": topics.order_state()}


def mirror_state(project) -> dict:
    return {
        "balances": {row["id"]: row["balance"] for row in project.query(f"select id, balance from {project.schema}.accounts")},
        "orders": {row["id"]: (row["line_count"], row["total"])
                   for row in project.query(f"select id, line_count, total from {project.schema}.orders")},
    }


def assert_whole_transactions_through_capture(project, connection, create_schema: str, capture: Callable[[Path], None],
                                              captured: Path) -> None:
    """capture(out): one capture pass that writes its files to out (the folder `captured`)."""
    create_tables(connection, create_schema)
    topics = TransactionTopics(ACCOUNTS, OPENING, seed=36, on_transaction=run_as_sql(connection))
    for table in MIRRORS:
        project.write_model(table, f"consistency_group='bank', unique_key='id', source_table='{SCHEMA_OF[table]}.{table}'",
                            mirror_sql(table))
    landing = SplitLanding(captured, project.inbox)
    # The first pass snapshots the opened accounts; the waves' transactions come from the log.
    capture(captured)
    for wave in range(1, WAVES + 2):
        last = wave == WAVES + 1
        if not last:
            for _ in range(8):
                topics.transfer()
                topics.shop()
        capture(captured)
        left = landing.wave(wave, everything=last)
        project.land(KEYS)
        project.dbt("run", "--select", *MIRRORS)
        check = check_at_latest_cut(project.query, project.schema, "bank", OPENING, on_databend=False)
        assert check is not None and violations(check, topics.total) == 0, (wave, check)
        if last:
            assert mirror_state(project) == source_state(topics)
        else:
            # The newest transaction landed in part: the group's mirrors wait for it, whole.
            assert left >= 2 and mirror_state(project) != source_state(topics), (wave, left)
