"""A simulated bank as Debezium topics with transaction metadata, for consistency groups
(docs/consistent_cuts.md): accounts opened in one transaction, then transfers, each one
transaction of a debit, a transfers row and a credit. The balances always sum to the opening
total, and each balance is its opening plus what the transfers say it got: invariants a reader
checks. Each table's events and the END records are separate topics, as Debezium writes them,
so landing files may split a transaction."""

from __future__ import annotations

import random

ACCOUNTS_TABLE = "bank.accounts"
TRANSFERS_TABLE = "bank.transfers"
KEYS = {ACCOUNTS_TABLE: ["id"], TRANSFERS_TABLE: ["id"]}
TOPICS = ("accounts", "transfers", "ends")
# Source commit time of the first transaction.
START_MS = 1_700_000_000_000


class BankTopics:
    """The three topics' events, in source order: PostgreSQL LSNs and transaction ids."""

    def __init__(self, accounts: int, opening: int, seed: int, ms_per_transaction: int = 100) -> None:
        self.rng = random.Random(seed)
        self.opening = opening
        self.ms_per_transaction = ms_per_transaction
        self.lsn = 1000
        self.balances = {account: opening for account in range(1, accounts + 1)}
        self.topics: dict[str, list[dict]] = {topic: [] for topic in TOPICS}
        self.transfer_rows: list[dict] = []
        self._transaction([("accounts", "c", {"id": account, "balance": opening}) for account in self.balances])

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
            ("accounts", "u", {"id": source, "balance": self.balances[source]}),
            ("transfers", "c", row),
            ("accounts", "u", {"id": target, "balance": self.balances[target]}),
        ])

    def _transaction(self, changes: list[tuple[str, str, dict]]) -> None:
        commit_ms = START_MS + len(self.topics["ends"]) * self.ms_per_transaction
        tx_id = f"{len(self.topics['ends']) + 500}:{self.lsn + 10 * len(changes)}"
        counts: dict[str, int] = {}
        for order, (table, op, after) in enumerate(changes, start=1):
            self.lsn += 10
            counts[f"bank.{table}"] = counts.get(f"bank.{table}", 0) + 1
            self.topics[table].append({
                "before": None, "after": after, "op": op, "ts_ms": commit_ms,
                "source": {"connector": "postgresql", "schema": "bank", "table": table, "lsn": self.lsn,
                           "ts_ms": commit_ms, "snapshot": "false"},
                "transaction": {"id": tx_id, "total_order": order, "data_collection_order": counts[f"bank.{table}"]},
            })
        self.topics["ends"].append({
            "status": "END", "id": tx_id, "ts_ms": commit_ms, "event_count": len(changes),
            "data_collections": [{"data_collection": table, "event_count": count} for table, count in counts.items()],
        })


class SplitDelivery:
    """What each wave delivers of the topics: the accounts topic's file ends after a debit, before
    its credit; the transfers topic lags one wave; the END records are all there. The last wave
    (everything=True) delivers what is left."""

    def __init__(self, topics: BankTopics) -> None:
        self.topics = topics
        self.landed = {topic: 0 for topic in TOPICS}
        self.transfers_per_wave: list[int] = []

    def wave(self, transfers: int, everything: bool = False) -> dict[str, list[dict]]:
        for _ in range(transfers):
            self.topics.transfer()
        lagging = self.transfers_per_wave[-1] if self.transfers_per_wave else 0
        self.transfers_per_wave.append(transfers)
        through = {
            "accounts": len(self.topics.topics["accounts"]) - (0 if everything else 1),
            "transfers": len(self.topics.topics["transfers"]) if everything else self.landed["transfers"] + lagging,
            "ends": len(self.topics.topics["ends"]),
        }
        delivered = {topic: self.topics.topics[topic][self.landed[topic]:upto] for topic, upto in through.items()}
        self.landed.update(through)
        return delivered
