"""The PostgreSQL random workload's sessions (tests/test_postgres_random_workload.py): each a connection
whose transactions insert, update (key columns too), delete and lock rows of three tables over a few
keys, under savepoints, ending in a commit, a rollback or a prepared transaction resolved later by any
session; now and then a TRUNCATE, or a column added mid-transaction. CDC_RANDOM_WORKLOAD_ALTER_CHANCE
(0.06) is a transaction's chance of one of the schema changes."""

from __future__ import annotations

import json
import os
import random
import threading
import time
from decimal import Decimal

import psycopg2

ALTER_CHANCE = float(os.environ.get("CDC_RANDOM_WORKLOAD_ALTER_CHANCE", "0.06"))
TRANSACTIONS = 20
BODY = "(select string_agg(md5(%s || s::text), '') from generate_series(1, 100) s)"


def statement(chance: random.Random) -> tuple[str, tuple]:
    """One random change (or row lock) on one of the three tables, over a few keys so sessions meet."""
    order, line, other = chance.randint(1, 6), chance.randint(1, 4), chance.randint(1, 8)
    word = chance.choice(["a", "b b", "", "ü", None])
    stamp = f"2026-{chance.randint(1, 12):02}-{chance.randint(1, 28):02} {chance.randint(0, 23):02}:30:00.{chance.randint(0, 999999):06}{chance.choice(['+00', '-07', '+05:30'])}"
    doc = json.dumps({"k": chance.randint(-5, 5), "s": word}, indent=chance.choice([None, 1]))
    amount = Decimal(chance.randint(-10**9, 10**9)) / 1000
    return chance.choice([
        ("select from shop.lines where order_id = %s for update", (order,)),
        ("select from shop.docs where id = %s for update", (other,)),
        ("insert into shop.lines values (%s, %s, %s, %s) on conflict do nothing", (order, line, other, word)),
        ("insert into shop.lines values (%s, %s, %s, %s) on conflict (order_id, line) do update set qty = excluded.qty",
         (order, line, -other, word)),
        ("update shop.lines set qty = qty + 1, note = %s where order_id = %s", (word, order)),
        ("update shop.lines set line = %s where order_id = %s and line = %s", (other, order, line)),
        ("update shop.lines set order_id = %s where order_id = %s", (other, order)),
        ("update shop.lines set memo = %s where order_id = %s and line = %s", (word, order, line)),
        ("delete from shop.lines where order_id = %s and line = %s", (order, line)),
        ("delete from shop.lines where order_id = %s", (order,)),
        ("insert into shop.lines select %s, g, g, %s from generate_series(1, %s) g on conflict do nothing", (order, word, line)),
        ("insert into shop.docs (id, n, body) values (%s, %s, " + BODY + ") on conflict do nothing",
         (other, line, str(other))),
        ("update shop.docs set n = n + 1 where id = %s", (other,)),
        ("update shop.docs set body = " + BODY + " where id = %s", (word or "x", other)),
        ("update shop.docs set id = %s where id = %s", (order, other)),
        ("update shop.docs set extra = extra + %s where id = %s", (line, other)),
        ("delete from shop.docs where id = %s", (other,)),
        ("insert into shop.vals (id, amount, at, doc) values (%s, %s, %s, %s) on conflict do nothing",
         (other, amount, stamp, doc)),
        ("update shop.vals set amount = %s, at = %s, doc = %s where id = %s", (amount, stamp, doc, other)),
        ("update shop.vals set at = at + interval '1 hour 0.5 seconds', tag = %s where id = %s", (word, other)),
        ("update shop.vals set id = %s where id = %s", (order, other)),
        ("delete from shop.vals where id = %s", (other,)),
        ("insert into shop.vals (id, amount, at, doc) values (%s, %s, %s, %s) on conflict (id) do update set "
         "amount = excluded.amount", (order, -amount, stamp, doc)),
    ])


class Session(threading.Thread):
    """One connection's transactions: 1-4 statements each, each under a savepoint (a key clash or a
    deadlock undoes that statement only), some under one rolled back on purpose; then commit,
    rollback, or a prepared transaction committed or rolled back some milliseconds later."""

    def __init__(self, server, chance: random.Random, name: str, shared: dict) -> None:
        super().__init__(daemon=True)
        self.server, self.chance, self.name, self.shared, self.error = server, chance, name, shared, None

    def run(self) -> None:
        try:
            self.transactions()
        except BaseException as error:  # noqa: BLE001 - reported by the test
            self.error = error

    def transactions(self) -> None:
        chance, connection, resolver = self.chance, self.server.connect(), self.server.connect()
        resolver.autocommit = True
        with connection.cursor() as cursor:
            cursor.execute("set lock_timeout = '1s'")
        connection.commit()
        for number in range(TRANSACTIONS):
            ending, added = chance.choices(["commit", "rollback", "prepare"], [6, 2, 2])[0], None
            if self.shared["pending"] and chance.random() < 0.4:  # another session's prepared transaction
                resolve(resolver, self.shared["pending"], chance)
            try:
                with connection.cursor() as cursor:
                    if chance.random() < 0.01:
                        cursor.execute(chance.choice(["truncate shop.lines", "truncate shop.vals", "truncate shop.docs"]))
                    statements, alter = chance.randint(1, 4), chance.random() < ALTER_CHANCE and ending != "rollback"
                    for done in range(statements):
                        if alter and done == statements // 2 and self.shared["altered"]:  # a column added mid-transaction
                            added = self.shared["altered"].pop(0)
                            cursor.execute(added)
                        undo = chance.random() < 0.15
                        cursor.execute("savepoint s")
                        try:
                            cursor.execute(*statement(chance))
                            if undo:
                                cursor.execute(*statement(chance))
                            cursor.execute("rollback to savepoint s" if undo else "release savepoint s")
                        except psycopg2.Error:
                            cursor.execute("rollback to savepoint s")
                        time.sleep(chance.uniform(0, 0.01))
                    if ending == "prepare":
                        cursor.execute("prepare transaction %s", (f"{self.name}-{number}",))
                connection.rollback() if ending == "rollback" else connection.commit()
                if ending == "prepare":
                    self.shared["pending"].append(f"{self.name}-{number}")
                    if chance.random() < 0.5:
                        time.sleep(chance.uniform(0, 0.02))
                        resolve(resolver, self.shared["pending"], chance)
            except psycopg2.Error:  # the ALTER or TRUNCATE waited too long for its lock: added again later
                connection.rollback()
                self.shared["altered"].extend([added] if added else [])
        connection.close()
        resolver.close()


def resolve(connection, pending: list, chance: random.Random) -> None:
    """COMMIT PREPARED or ROLLBACK PREPARED of the oldest pending prepared transaction, from any session."""
    try:
        name = pending.pop(0)
    except IndexError:
        return
    with connection.cursor() as cursor:
        cursor.execute(("commit" if chance.random() < 0.6 else "rollback") + " prepared %s", (name,))
