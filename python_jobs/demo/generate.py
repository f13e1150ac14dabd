"""Seeded generator of realistic Debezium JSON for a small shop database.

It simulates the source (shop_source.py): three tables (order_lines has a composite key), an initial
snapshot, then transactions of inserts, updates, deletes, re-inserts after delete and
primary-key changes, many in the same millisecond. Events are cut into files and
delivered in waves; some arrive a wave late and some twice, as from a lagging or
replayed Kafka partition; PostgreSQL updates may send an unchanged text column as Debezium's
TOAST placeholder. Because it knows the true source order, it is also the
oracle: replay() gives the table state any mirror must equal.

    cdc-generate-demo --out data/generated --events 20000 --waves 3 --seed 7
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable, Iterable

from python_jobs.demo.shop_source import KEYS, Event, ShopSource

_RAW_NUMBER = re.compile(r'"\\u0000(-?[0-9.]+)"')
# Debezium's value for a PostgreSQL TOAST column an update left unchanged.
UNAVAILABLE = "__debezium_unavailable_value"
# The columns an update never changes that may be TOASTed (text), per table.
TOASTABLE = {"shop.customers": ("name",), "shop.order_lines": ("sku",)}


def debezium_line(event: Event, connector: str, with_schema: bool, unsent: tuple[str, ...] = ()) -> str:
    """The event as Debezium's JSON converter writes it (decimal.format=numeric); unsent: the after
    image's columns written as Debezium's TOAST placeholder."""
    database, table = event.table.split(".")
    source: dict[str, Any] = {
        "version": "2.7.3.Final",
        "connector": connector,
        "name": "demo",
        "ts_ms": event.ts_ms,
        "snapshot": "true" if event.snapshot else "false",
        "db": "shopdb" if connector == "postgresql" else database,
        "table": table,
    }
    if connector == "postgresql":
        source.update({"schema": database, "txId": 1000 + event.index, "lsn": event.position[0]})
    else:
        source.update({"file": f"mysql-bin.{event.position[0]:06d}", "pos": event.position[1], "row": event.position[2]})
    after = _json_row(event.after)
    if after is not None:
        after.update({column: UNAVAILABLE for column in unsent})
    envelope = {
        "before": _json_row(event.before),
        "after": after,
        "source": source,
        "op": event.op,
        "ts_ms": event.ts_ms + 250,
        "transaction": None,
    }
    if with_schema:
        envelope = {"schema": {"type": "struct", "optional": False, "name": f"demo.{event.table}.Envelope"}, "payload": envelope}
    return _RAW_NUMBER.sub(r"\1", json.dumps(envelope, ensure_ascii=False, separators=(",", ":")))


def _json_row(row: dict | None) -> dict | None:
    if row is None:
        return None
    shown = {}
    for column, value in row.items():
        if isinstance(value, Decimal):
            shown[column] = "\u0000" + format(value, "f")  # becomes a bare JSON number
        elif isinstance(value, dt.datetime):
            shown[column] = value.isoformat(timespec="milliseconds") + "Z"
        else:
            shown[column] = value
    return shown


@dataclass(frozen=True)
class Wave:
    """Events delivered together, cut into files, plus a few garbage lines."""

    number: int
    files: list[list[str]]
    delivered: list[Event]


def deliveries(source: ShopSource, waves: int, rng: random.Random, late_fraction: float, duplicate_fraction: float) -> list[list[Event]]:
    """Split the log into waves; some events slip to the next wave, some are delivered twice."""
    events = source.events
    bounds = [round(len(events) * (w + 1) / waves) for w in range(waves)]
    result: list[list[Event]] = []
    held_back: list[Event] = []
    start = 0
    for number, end in enumerate(bounds):
        wave = held_back
        held_back = []
        for event in events[start:end]:
            if number < waves - 1 and rng.random() < late_fraction:
                held_back.append(event)
            else:
                wave.append(event)
        delivered_before = [e for w in result for e in w]
        if delivered_before:
            wave += rng.sample(delivered_before, int(len(delivered_before) * duplicate_fraction))
        result.append(wave)
        start = end
    return result


def unsent_columns(event: Event, connector: str, seed: int, toast_fraction: float) -> tuple[str, ...]:
    """The columns of a PostgreSQL update that Debezium sends as the TOAST placeholder: each column
    of TOASTABLE the update left unchanged, in toast_fraction of updates; the same for every
    delivery of the event (a redelivery repeats its bytes)."""
    if connector != "postgresql" or event.op != "u" or event.before is None or toast_fraction <= 0:
        return ()
    if random.Random(seed * 1_000_003 + event.index).random() >= toast_fraction:
        return ()
    return tuple(column for column in TOASTABLE.get(event.table, ()) if event.before[column] == event.after[column])


def build_waves(seed: int, events: int, waves: int, connector: str = "postgresql", snapshot_rows: int = 50,
                late_fraction: float = 0.02, duplicate_fraction: float = 0.01, garbage_lines: int = 3,
                clock_start_ms: int | None = None, toast_fraction: float = 0.0) -> tuple[ShopSource, list[Wave]]:
    """toast_fraction: of PostgreSQL updates, those whose unchanged TOASTABLE columns are sent as the
    placeholder (unsent_columns)."""
    rng = random.Random(seed)
    source = ShopSource(rng, connector)
    if clock_start_ms is not None:
        source.clock_ms = clock_start_ms
    source.snapshot(snapshot_rows)
    while len(source.events) < events:
        source.transaction()
    result = []
    for number, delivered in enumerate(deliveries(source, waves, rng, late_fraction, duplicate_fraction), start=1):
        lines = []
        for event in delivered:
            lines.append(debezium_line(event, connector, with_schema=rng.random() < 0.1,
                                       unsent=unsent_columns(event, connector, seed, toast_fraction)))
            if event.op == "d" and rng.random() < 0.5:
                lines.append("null")  # Kafka tombstone after a delete
        for _ in range(garbage_lines):
            spot = rng.randrange(len(lines))
            lines.insert(spot, lines[spot][: rng.randint(1, 60)])  # a truncated write
        files, position = [], 0
        while position < len(lines):
            size = rng.randint(50, 600)
            files.append(lines[position : position + size])
            position += size
        result.append(Wave(number, files, delivered))
    return source, result


def replay(delivered: Iterable[Event], unsent: Callable[[Event], tuple[str, ...]] = lambda event: ()) -> dict[str, dict[tuple, dict]]:
    """Table state after applying the delivered events in true source order. unsent: the columns an
    event did not send (unsent_columns), which keep the value the key's newest older delivered event
    sent (None when none did): what a mirror can know before a late event arrives."""
    state: dict[str, dict[tuple, dict]] = {table: {} for table in KEYS}
    for event in sorted({e.index: e for e in delivered}.values(), key=lambda e: e.index):
        if event.op == "d":
            state[event.table].pop(event.key, None)
            continue
        stored = state[event.table].get(event.key, {})
        state[event.table][event.key] = {**event.after, **{column: stored.get(column) for column in unsent(event)}}
    return state


def write_wave(wave: Wave, folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for number, lines in enumerate(wave.files, start=1):
        path = folder / f"wave-{wave.number:03d}-part-{number:04d}.json"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write seeded Debezium JSON files for the demo shop tables.")
    parser.add_argument("--out", required=True, type=Path, help="folder; wave N goes to <out>/wave-N/")
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--waves", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--connector", choices=["postgresql", "mysql"], default="postgresql")
    args = parser.parse_args(argv)
    _, waves = build_waves(args.seed, args.events, args.waves, args.connector)
    for wave in waves:
        paths = write_wave(wave, args.out / f"wave-{wave.number}")
        print(f"wave {wave.number}: {len(wave.delivered)} events in {len(paths)} files under {args.out}/wave-{wave.number}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
