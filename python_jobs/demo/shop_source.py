"""The simulated source database of the demo: three shop tables (order_lines has a composite key),
an initial snapshot, then transactions of inserts, updates, deletes, re-inserts after delete and
primary-key changes, many in the same millisecond, recorded in true source order."""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field
from decimal import Decimal

KEYS = {
    "shop.customers": ("id",),
    "shop.orders": ("id",),
    "shop.order_lines": ("order_id", "line_no"),
}
# Postgres REPLICA IDENTITY per table: FULL sends whole before images, DEFAULT only keys.
REPLICA_IDENTITY_FULL = {"shop.customers": True, "shop.orders": False, "shop.order_lines": True}
NAMES = ["Ana", "Björn", "Chloé", "Dmitri", "Eun-ji", "Fatima", "Grzegorz", "Hiroshi", "Ingrid", "José", "Zoë 🚲"]
SKUS = ["SKU-" + code for code in ("A1", "B22", "C333", "D4", "E55", "F6")]


@dataclass(frozen=True)
class Event:
    """One change in true source order; index is that order."""

    index: int
    table: str
    key: tuple
    op: str
    before: dict | None
    after: dict | None
    position: tuple[int, int, int]
    ts_ms: int
    snapshot: bool


@dataclass
class ShopSource:
    """The simulated source database and its change log."""

    rng: random.Random
    connector: str = "postgresql"
    rows: dict[str, dict[tuple, dict]] = field(default_factory=lambda: {t: {} for t in KEYS})
    deleted: dict[str, list[tuple]] = field(default_factory=lambda: {t: [] for t in KEYS})
    events: list[Event] = field(default_factory=list)
    # Events recorded so far, the next one's index: a long-running reader takes events off the list.
    recorded: int = 0
    next_id: int = 1
    clock_ms: int = 1_767_225_600_000  # 2026-01-01T00:00:00Z
    log_position: int = 4_000_000

    def snapshot(self, rows_per_table: int) -> None:
        """Rows that exist before capture starts, read at one position, then streaming starts."""
        for _ in range(rows_per_table):
            self._insert_new("shop.customers", record=False)
            self._insert_new("shop.orders", record=False)
            self._insert_new("shop.order_lines", record=False)
        position = self._advance_position()
        for table in KEYS:
            for key, row in self.rows[table].items():
                self._record(table, key, "r", None, dict(row), position, snapshot=True)

    def transaction(self) -> None:
        """1-6 changes committed together: same commit time, increasing positions."""
        self.clock_ms += self.rng.choice([0, 0, 0, 1, 1, 7])
        for _ in range(self.rng.randint(1, 6)):
            table = self.rng.choice(list(KEYS))
            live = self.rows[table]
            choice = self.rng.random()
            if not live or choice < 0.30:
                self._insert_new(table)
            elif choice < 0.40 and self.deleted[table]:
                self._reinsert(table)
            elif choice < 0.75:
                self._update(table, self.rng.choice(list(live)))
            elif choice < 0.93:
                self._delete(table, self.rng.choice(list(live)))
            elif table == "shop.customers":
                self._change_key(table, self.rng.choice(list(live)))
            else:
                self._update(table, self.rng.choice(list(live)))

    def _insert_new(self, table: str, record: bool = True) -> None:
        if table == "shop.order_lines":
            order_id = self.rng.randint(1, max(1, self.next_id))
            key = (order_id, self.rng.randint(1, 4))
            if key in self.rows[table]:
                return self._update(table, key) if record else None
        else:
            key = (self.next_id,)
            self.next_id += 1
        row = self._new_row(table, key)
        self.rows[table][key] = row
        if record:
            self._record(table, key, "c", None, dict(row), self._advance_position())

    def _reinsert(self, table: str) -> None:
        key = self.deleted[table].pop(self.rng.randrange(len(self.deleted[table])))
        if key in self.rows[table]:
            return
        row = self._new_row(table, key)
        self.rows[table][key] = row
        self._record(table, key, "c", None, dict(row), self._advance_position())

    def _update(self, table: str, key: tuple) -> None:
        before = dict(self.rows[table][key])
        row = dict(before)
        if table == "shop.customers":
            row["tier"] = self.rng.choice(["bronze", "silver", "gold", None])
            row["email"] = self.rng.choice([row["email"], None, f"c{key[0]}@example.org"])
            row["updated_at"] = self._now()
        elif table == "shop.orders":
            row["status"] = self.rng.choice(["paid", "shipped", "cancelled"])
            row["amount"] = self._amount()
        else:
            row["quantity"] = self.rng.randint(1, 50)
            row["unit_price"] = Decimal(self.rng.randint(1, 99_999)) / 100
        self.rows[table][key] = row
        shown_before = before if REPLICA_IDENTITY_FULL[table] else None
        self._record(table, key, "u", shown_before, dict(row), self._advance_position())

    def _delete(self, table: str, key: tuple) -> None:
        before = self.rows[table].pop(key)
        if not REPLICA_IDENTITY_FULL[table]:
            before = {column: before[column] for column in KEYS[table]}
        self.deleted[table].append(key)
        self._record(table, key, "d", before, None, self._advance_position())

    def _change_key(self, table: str, key: tuple) -> None:
        """Debezium turns a primary-key update into a delete of the old key and a create of the new."""
        row = dict(self.rows[table][key])
        self._delete(table, key)
        new_key = (self.next_id,)
        self.next_id += 1
        row["id"] = new_key[0]
        self.rows[table][new_key] = row
        self._record(table, new_key, "c", None, dict(row), self._advance_position())

    def _new_row(self, table: str, key: tuple) -> dict:
        if table == "shop.customers":
            return {
                "id": key[0],
                "name": f"{self.rng.choice(NAMES)} {key[0]}",
                "email": self.rng.choice([f"c{key[0]}@example.com", None]),
                "tier": self.rng.choice(["bronze", "silver", "gold"]),
                "updated_at": self._now(),
            }
        if table == "shop.orders":
            return {
                "id": key[0],
                "customer_id": self.rng.randint(1, max(1, self.next_id)),
                "status": "placed",
                "amount": self._amount(),
                "ordered_at": self._now(),
            }
        return {
            "order_id": key[0],
            "line_no": key[1],
            "sku": self.rng.choice(SKUS),
            "quantity": self.rng.randint(1, 10),
            "unit_price": Decimal(self.rng.randint(1, 99_999)) / 100,
        }

    def _amount(self) -> Decimal:
        # Up to 16 integer digits: a double would lose the cents, so this proves exactness.
        return Decimal(self.rng.choice([self.rng.randint(0, 99_999), self.rng.randint(0, 10**17)])) / 100

    def _now(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self.clock_ms / 1000, dt.timezone.utc).replace(tzinfo=None)

    def _advance_position(self) -> tuple[int, int, int]:
        self.log_position += self.rng.randint(40, 400)
        if self.connector == "postgresql":
            return (self.log_position, 0, 0)
        return (3 + self.log_position // 50_000_000, self.log_position % 50_000_000, 0)

    def _record(self, table, key, op, before, after, position, snapshot=False) -> None:
        self.events.append(
            Event(self.recorded, table, key, op, before, after, position, self.clock_ms, snapshot)
        )
        self.recorded += 1
