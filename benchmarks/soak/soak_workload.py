"""The soak's workload (benchmarks/soak/soak.py): simulated shop databases shop0, shop1, ... (the
demo's ShopSource, python_jobs/demo/generate.py) whose events are renamed per database, applied
to a plain-Python oracle as they are made, and written as Debezium files stamped with source
commit times spread over the previous cycle."""

from __future__ import annotations

import dataclasses
import random
import time
from pathlib import Path

TABLES = ("customers", "orders", "order_lines")


class Sources:
    """ceil(tables / 3) simulated shop databases shop0, shop1, ...; the first `tables` of their tables."""

    def __init__(self, tables: int, seed: int):
        from python_jobs.demo.shop_source import ShopSource

        self.databases = [ShopSource(random.Random(seed + number)) for number in range(-(-tables // 3))]
        self.tables = [f"shop{number}.{table}" for number in range(len(self.databases)) for table in TABLES][:tables]
        self.state: dict[str, dict[tuple, dict]] = {table: {} for table in self.tables}
        for database in self.databases:
            database.snapshot(50)

    def next_events(self, count: int) -> list:
        """The next `count` events of all databases (renamed to shop<k>.*), oldest first per database,
        applied to the oracle's state; events of tables beyond --tables are not delivered. Delivered
        events leave the databases' lists: the soak's own memory stays flat over its cycles."""
        out = []
        share = -(-count // len(self.databases))
        for number, database in enumerate(self.databases):
            while len(database.events) < share:
                database.transaction()
            for event in database.events:
                table = event.table.replace("shop.", f"shop{number}.", 1)
                if table in self.state:
                    out.append(dataclasses.replace(event, table=table))
            database.events.clear()
        for event in out:
            if event.op == "d":
                self.state[event.table].pop(event.key, None)
            else:
                self.state[event.table][event.key] = event.after
        return out


def write_cycle_files(events: list, folder: Path, cycle: int, window_seconds: float) -> dict[str, list[float]]:
    """Debezium files of the cycle's events, stamped with source commit times spread over the last
    window_seconds (oldest first); returns each table's commit times (epoch seconds)."""
    from python_jobs.demo.generate import debezium_line

    now = time.time()
    stamped, times = [], {}
    for position, event in enumerate(events):
        moment = now - window_seconds * (1 - position / max(1, len(events)))
        stamped.append(dataclasses.replace(event, ts_ms=int(moment * 1000)))
        times.setdefault(event.table, []).append(moment)
    folder.mkdir(parents=True, exist_ok=True)
    lines = [debezium_line(event, "postgresql", with_schema=False) for event in stamped]
    (folder / f"cycle-{cycle:05d}.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return times
