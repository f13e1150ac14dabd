"""A simulated source database as Debezium topics with transaction metadata, for consistency groups
(docs/consistent_cuts.md). Two workloads share one commit order:

- a bank: accounts opened in one transaction, then transfers, each one transaction of a debit, a
  transfers row and a credit. The balances always sum to the opening total, and each balance is
  its opening plus what the transfers say it got;
- a shop: orders whose header carries its line count and total, each written in one transaction
  with its lines (some lines before the header); later an order gets one more line and its header
  the new count and total, or it is cancelled (its lines and its header deleted). Every order's
  lines match its header, and no line is without its order.

Invariants a reader checks (transaction_checks.py). Each table's events and the END records are
separate topics, as Debezium writes them, so landing files may split a transaction."""

from __future__ import annotations

import random
from typing import Callable, Optional

# One change of a transaction: (topic, Debezium op, row after, row before).
Change = tuple

ACCOUNTS_TABLE = "bank.accounts"
TRANSFERS_TABLE = "bank.transfers"
ORDERS_TABLE = "shop.orders"
ORDER_LINES_TABLE = "shop.order_lines"
KEYS = {ACCOUNTS_TABLE: ["id"], TRANSFERS_TABLE: ["id"], ORDERS_TABLE: ["id"], ORDER_LINES_TABLE: ["id"]}
# Topic (and mirror) names, each the table's name without its schema.
TOPICS = ("accounts", "transfers", "orders", "order_lines", "ends")
SCHEMA_OF = {"accounts": "bank", "transfers": "bank", "orders": "shop", "order_lines": "shop"}
# Source commit time of the first transaction.
START_MS = 1_700_000_000_000


class TransactionTopics:
    """The topics' events, in source order: PostgreSQL LSNs and transaction ids."""

    def __init__(self, accounts: int, opening: int, seed: int, ms_per_transaction: int = 100,
                 on_transaction: Optional[Callable[[list], None]] = None) -> None:
        """on_transaction: called with each transaction's changes as it commits, e.g. to run them as
        SQL on a real server whose capture then writes the topics (tests/capture_invariants.py)."""
        self.rng = random.Random(seed)
        self.on_transaction = on_transaction
        self.opening = opening
        self.ms_per_transaction = ms_per_transaction
        self.lsn = 1000
        self.balances = {account: opening for account in range(1, accounts + 1)}
        self.topics: dict[str, list[dict]] = {topic: [] for topic in TOPICS}
        self.transfer_rows: list[dict] = []
        # Open orders: id -> their lines' rows; the header is derived from them.
        self.orders: dict[int, list[dict]] = {}
        self.next_order = self.next_line = 1
        self._transaction([("accounts", "c", {"id": account, "balance": opening}, None) for account in self.balances])

    @property
    def total(self) -> int:
        return self.opening * len(self.balances)

    def transfer(self) -> None:
        source, target = self.rng.sample(sorted(self.balances), 2)
        amount = self.rng.randint(1, 50)
        self.balances[source] -= amount
        self.balances[target] += amount
        row = {"id": len(self.transfer_rows) + 1, "from_id": source, "to_id": target, "amount": amount}
        self.transfer_rows.append(row)
        self._transaction([
            ("accounts", "u", {"id": source, "balance": self.balances[source]}, None),
            ("transfers", "c", row, None),
            ("accounts", "u", {"id": target, "balance": self.balances[target]}, None),
        ])

    def shop(self) -> None:
        """One shop transaction: a new order mostly, else one more line for an open order, or a cancel."""
        roll = self.rng.random()
        if not self.orders or roll < 0.6:
            self._new_order()
        elif roll < 0.85:
            self._add_line(self.rng.choice(sorted(self.orders)))
        else:
            self._cancel(self.rng.choice(sorted(self.orders)))

    def _line(self, order_id: int) -> dict:
        line = {"id": self.next_line, "order_id": order_id, "amount": self.rng.randint(1, 99)}
        self.next_line += 1
        return line

    def _header(self, order_id: int) -> dict:
        lines = self.orders[order_id]
        return {"id": order_id, "line_count": len(lines), "total": sum(line["amount"] for line in lines)}

    def _new_order(self) -> None:
        order_id = self.next_order
        self.next_order += 1
        lines = [self._line(order_id) for _ in range(self.rng.randint(1, 4))]
        self.orders[order_id] = lines
        changes = [("order_lines", "c", line, None) for line in lines]
        # The header first or last: either way a reader must not see one without the other.
        header = ("orders", "c", self._header(order_id), None)
        self._transaction([header] + changes if self.rng.random() < 0.5 else changes + [header])

    def _add_line(self, order_id: int) -> None:
        before = self._header(order_id)
        line = self._line(order_id)
        self.orders[order_id].append(line)
        self._transaction([("order_lines", "c", line, None), ("orders", "u", self._header(order_id), before)])

    def _cancel(self, order_id: int) -> None:
        header = self._header(order_id)
        lines = self.orders.pop(order_id)
        self._transaction([("order_lines", "d", None, line) for line in lines] + [("orders", "d", None, header)])

    def _transaction(self, changes: list[Change]) -> None:
        if self.on_transaction is not None:
            self.on_transaction(changes)
        commit_ms = START_MS + len(self.topics["ends"]) * self.ms_per_transaction
        tx_id = f"{len(self.topics['ends']) + 500}:{self.lsn + 10 * len(changes)}"
        counts: dict[str, int] = {}
        for order, (table, op, after, before) in enumerate(changes, start=1):
            self.lsn += 10
            collection = f"{SCHEMA_OF[table]}.{table}"
            counts[collection] = counts.get(collection, 0) + 1
            self.topics[table].append({
                "before": before, "after": after, "op": op, "ts_ms": commit_ms,
                "source": {"connector": "postgresql", "schema": SCHEMA_OF[table], "table": table, "lsn": self.lsn,
                           "ts_ms": commit_ms, "snapshot": "false"},
                "transaction": {"id": tx_id, "total_order": order, "data_collection_order": counts[collection]},
            })
        self.topics["ends"].append({
            "status": "END", "id": tx_id, "ts_ms": commit_ms, "event_count": len(changes),
            "data_collections": [{"data_collection": table, "event_count": count} for table, count in counts.items()],
        })

    def order_state(self) -> dict:
        """The shop's state now: {order id: (line count, total)}."""
        return {order_id: (header["line_count"], header["total"])
                for order_id, header in ((order_id, self._header(order_id)) for order_id in self.orders)}


class SplitDelivery:
    """What each wave delivers of the topics: the accounts topic's file ends after a debit, before
    its credit, and the order lines' file before an order's last line; the transfers topic lags one
    wave; the END records are all there. The last wave (everything=True) delivers what is left."""

    def __init__(self, topics: TransactionTopics) -> None:
        self.topics = topics
        self.landed = {topic: 0 for topic in TOPICS}
        self.transfers_per_wave: list[int] = []

    def wave(self, transfers: int, orders: int = 0, everything: bool = False) -> dict[str, list[dict]]:
        # Interleaved in one commit order.
        kinds = ["transfer"] * transfers + ["shop"] * orders
        self.topics.rng.shuffle(kinds)
        for kind in kinds:
            self.topics.transfer() if kind == "transfer" else self.topics.shop()
        lagging = self.transfers_per_wave[-1] if self.transfers_per_wave else 0
        self.transfers_per_wave.append(transfers)
        events = {topic: len(self.topics.topics[topic]) for topic in TOPICS}
        cut_short = 0 if everything else 1
        through = {
            "accounts": events["accounts"] - cut_short,
            "transfers": events["transfers"] if everything else self.landed["transfers"] + lagging,
            "orders": events["orders"],
            "order_lines": max(self.landed["order_lines"], events["order_lines"] - cut_short),
            "ends": events["ends"],
        }
        delivered = {topic: self.topics.topics[topic][self.landed[topic]:upto] for topic, upto in through.items()}
        self.landed.update(through)
        return delivered
