"""The invariants of the bank and the shop (transaction_source.py), checked as a report reads the
mirrors: at the consistency group's latest cut (every mirror pinned to its cut snapshot, in one
query), and on the mirrors' newest state. CutReader does both in a loop beside the runs; the test
(tests/test_consistent_cuts.py) and the benchmark (benchmarks/consistent_cuts/consistent_cuts.py) use it."""

from __future__ import annotations

import threading
import time
from typing import Callable, Dict, List

Query = Callable[[str], List[Dict]]

MIRRORS = ("accounts", "transfers", "orders", "order_lines")

# The invariants from one read of each mirror in one query: {accounts} and the others name each
# mirror as read. broken_orders: headers whose lines do not match them, and lines without a header.
CHECK_SQL = """
with

accounts as (

    select * from {accounts}

),

transfers as (

    select * from {transfers}

),

orders as (

    select * from {orders}

),

order_lines as (

    select * from {order_lines}

),

lines_per_order as (

    select order_id, count(*) as line_count, sum(amount) as total
    from order_lines
    group by order_id

),

moved as (

    select account_id, sum(amount) as net
    from (
        select to_id as account_id, amount from transfers
        union all
        select from_id as account_id, -amount as amount from transfers
    ) as legs
    group by account_id

),

final as (

    select
        (select sum(balance) from accounts) as total,
        (select count(*) from transfers) as transfers,
        (
            select count(*)
            from accounts
            left join moved on accounts.id = moved.account_id
            where accounts.balance <> {opening} + coalesce(moved.net, 0)
        ) as unbalanced_accounts,
        (
            select count(*)
            from orders
            left join lines_per_order on orders.id = lines_per_order.order_id
            where orders.line_count <> coalesce(lines_per_order.line_count, 0)
                or orders.total <> coalesce(lines_per_order.total, 0)
        ) + (
            select count(*)
            from lines_per_order
            left join orders on lines_per_order.order_id = orders.id
            where orders.id is null
        ) as broken_orders

)

select * from final
"""


def newest_state(query: Query, schema: str, prefix: str, opening: int) -> dict:
    """The invariants on the newest state of the mirrors ({prefix}accounts and the others), each read
    by a query of its own, as a report that reads one table after another does."""
    accounts = {row["id"]: row["balance"] for row in query(f"select id, balance from {schema}.{prefix}accounts")}
    net: dict = {}
    for row in query(f"select from_id, to_id, amount from {schema}.{prefix}transfers"):
        net[row["from_id"]] = net.get(row["from_id"], 0) - row["amount"]
        net[row["to_id"]] = net.get(row["to_id"], 0) + row["amount"]
    unbalanced = sum(balance != opening + net.get(account, 0) for account, balance in accounts.items())
    headers = {row["id"]: (row["line_count"], row["total"])
               for row in query(f"select id, line_count, total from {schema}.{prefix}orders")}
    lines: dict = {}
    for row in query(f"select order_id, amount from {schema}.{prefix}order_lines"):
        count, total = lines.get(row["order_id"], (0, 0))
        lines[row["order_id"]] = (count + 1, total + row["amount"])
    broken = sum(lines.get(order, (0, 0)) != header for order, header in headers.items())
    broken += sum(order not in headers for order in lines)
    return {"total": sum(accounts.values()), "unbalanced_accounts": unbalanced, "broken_orders": broken}


def violations(check: dict, total: int) -> int:
    """How many invariants a check's figures break (0 when the read saw whole transactions)."""
    return (check["total"] != total) + (check["unbalanced_accounts"] > 0) + (check["broken_orders"] > 0)


def at_snapshot(relation: str, snapshot: str, on_databend: bool) -> str:
    return f"{relation} at (snapshot => '{snapshot}')" if on_databend else f"{relation} version as of {snapshot}"


def check_at_latest_cut(query: Query, schema: str, group: str, opening: int, on_databend: bool) -> dict | None:
    """The invariants' figures at the group's latest cut: the cut looked up in one query, every
    mirror read at it in one more; None before the group has a cut of every mirror."""
    cuts = f"{schema}.cdc_merge_cuts"
    cut = {row["target_table"]: row["mirror_snapshot"] for row in query(
        f"select target_table, mirror_snapshot from {cuts} where consistency_group = '{group}' "
        f"and cut_ordinal = (select max(cut_ordinal) from {cuts} where consistency_group = '{group}')")}
    if len(cut) != len(MIRRORS):
        return None
    pinned = {name: at_snapshot(f"{schema}.{name}", cut[f"{schema}.{name}"], on_databend) for name in MIRRORS}
    return query(CHECK_SQL.format(opening=opening, **pinned))[0]


class CutReader(threading.Thread):
    """Reads beside the runs until stopped: the group's latest cut in one query, then every mirror at
    it in one query (reads, violations); and the group's mirrors as they are (plain_reads,
    plain_violations); on Databend also the views at the cut, all four in one query (view_reads,
    view_violations). Every error is kept in errors. pause_seconds between reads leaves the runs
    beside it the cores (a reader in the runs' own JVM slows them 2-3x on 2 cores)."""

    def __init__(self, query: Query, schema: str, group: str, opening: int, total: int, on_databend: bool,
                 pause_seconds: float = 0.0) -> None:
        super().__init__(daemon=True)
        self.query, self.schema, self.group, self.opening, self.total = query, schema, group, opening, total
        self.on_databend, self.pause_seconds = on_databend, pause_seconds
        self.stopped = threading.Event()
        self.reads = self.violations = self.plain_reads = self.plain_violations = 0
        self.view_reads = self.view_violations = 0
        self.errors: list = []

    def run(self) -> None:
        while not self.stopped.is_set():
            try:
                check = check_at_latest_cut(self.query, self.schema, self.group, self.opening, self.on_databend)
                if check is not None:
                    self.reads += 1
                    self.violations += violations(check, self.total) > 0
                self.plain_reads += 1
                self.plain_violations += violations(newest_state(self.query, self.schema, "", self.opening), self.total) > 0
                if self.on_databend:
                    self.view_reads += 1
                    self.view_violations += violations(self.query(CHECK_SQL.format(
                        opening=self.opening, **{name: f"{self.schema}.{name}_at_cut" for name in MIRRORS}))[0], self.total) > 0
                self.stopped.wait(self.pause_seconds)
            except Exception as error:  # noqa: BLE001 - every error is a failure, reported by the caller
                self.errors.append(repr(error)[:300])
                time.sleep(0.2)

    def stop(self) -> dict:
        self.stopped.set()
        self.join(timeout=60)
        return {"reads_at_cut": self.reads, "violations_at_cut": self.violations, "plain_reads": self.plain_reads,
                "plain_violations": self.plain_violations, "view_reads": self.view_reads,
                "view_violations": self.view_violations, "errors": self.errors}
