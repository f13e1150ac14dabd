"""Small batches of updates to a PostgreSQL table with a TOAST column, landed and applied in one warm
process as cdc-run does: the same updates with their TOAST value sent, and with Debezium's
placeholder for a value an update left unchanged (`__debezium_unavailable_value`), alternating.
Each key is updated many times a batch; the range's dedup in the driver fills each key's newest
event with the values its older events sent (LocalRawRanges.java), so a batch with placeholders
is one round and one commit like any other, its updates taking a column no event sent from the
stored rows the commit deletes (write.sql, stored_values_sql).

    .venv/bin/python -m benchmarks.apply.toast_batches            # 1,000 rows; 50 keys updated 20 times a batch
    .venv/bin/python -m benchmarks.apply.toast_batches --rows 100000 --rounds 7

Every figure is the median of --rounds batches of its kind, after a warm-up batch of each; after
every batch the mirror is compared with the rows the updates leave. Writes
benchmarks/results/toast_batches.json and .log.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import time
from pathlib import Path

from benchmarks.common import warm
from benchmarks.common.measure import tee_stdout
from benchmarks.common.project import BenchProject
from benchmarks.common.results import RESULTS_DIR, run_header

UNSENT = "__debezium_unavailable_value"
COLUMNS = "        {{ cdc_merge.cdc_columns({'id': 'bigint', 'title': 'string', 'body': 'string'}) }}"
SOURCE = {"connector": "postgresql", "schema": "bench", "table": "items", "snapshot": "false"}


def arguments(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000, help="rows of the table (default 1,000)")
    parser.add_argument("--keys", type=int, default=50, help="keys updated in each batch (default 50)")
    parser.add_argument("--updates", type=int, default=20, help="updates of each of those keys a batch (default 20)")
    parser.add_argument("--rounds", type=int, default=5, help="batches of each kind measured (default 5)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/cdc_merge_toast_batches"))
    parser.add_argument("--results", type=Path, default=RESULTS_DIR / "toast_batches.json")
    return parser.parse_args(argv)


class ToastBatches:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.chance = random.Random(args.seed)
        shutil.rmtree(args.work_dir, ignore_errors=True)
        self.spark = warm.session(args.work_dir / "warehouse")
        self.inbox = args.work_dir / "inbox"
        self.project = BenchProject(args.work_dir / "project", "bm_toast", "br_toast", self.inbox, source_tables=0)
        self.project.write_mirror("docs", columns=COLUMNS)
        self.rows: dict[int, tuple[str, str]] = {}
        self.lsn = 1_000
        self.files = 0

    def line(self, op: str, row: dict) -> str:
        self.lsn += 10
        return json.dumps({"before": None, "after": row, "op": op,
                           "source": {**SOURCE, "lsn": self.lsn, "ts_ms": 1_767_225_600_000 + self.lsn}})

    def land_and_apply(self, lines: list[str]) -> float:
        self.files += 1
        (self.inbox / f"part-{self.files:05d}.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
        seconds = warm.invoke(self.project, "run").seconds
        stored = {row.id: (row.title, row.body) for row in self.spark.table(f"{self.project.schema}.docs").collect()}
        if stored != self.rows:
            differing = sorted(key for key in set(stored) | set(self.rows) if stored.get(key) != self.rows.get(key))
            raise AssertionError(f"the mirror differs from the table at {len(differing)} keys, e.g. {differing[:5]}")
        return seconds

    def setup(self) -> float:
        warm.invoke(self.project, "run-operation", "create_raw_tables")
        self.rows = {key: ("t0", f"body of {key} " * 20) for key in range(self.args.rows)}
        return self.land_and_apply([self.line("c", {"id": key, "title": title, "body": body})
                                    for key, (title, body) in self.rows.items()])

    def batch(self, number: int, placeholders: bool) -> float:
        """--keys keys updated --updates times each (their titles), the body sent or left unsent."""
        lines = []
        for key in self.chance.sample(range(self.args.rows), self.args.keys):
            for update in range(self.args.updates):
                title = f"t{number}.{update}"
                lines.append(self.line("u", {"id": key, "title": title, "body": UNSENT if placeholders else self.rows[key][1]}))
                self.rows[key] = (title, self.rows[key][1])
        self.chance.shuffle(lines)  # arrival order is not source order: the landing keeps the positions
        return self.land_and_apply(lines)


def main(argv=None) -> int:
    args = arguments(argv)
    with tee_stdout(args.results.with_suffix(".log")):
        bench = ToastBatches(args)
        results = {**run_header(), "rows": args.rows, "keys": args.keys, "updates_per_key": args.updates}
        print(f"toast batches: {results['machine']}", flush=True)
        print(f"    {args.rows:,} rows landed and applied in {bench.setup():.2f} s", flush=True)
        figures: dict[str, list[float]] = {"sent": [], "placeholders": []}
        for number in range(2 * (args.rounds + 1)):
            kind = "placeholders" if number % 2 else "sent"
            seconds = bench.batch(number, kind == "placeholders")
            if number >= 2:
                figures[kind].append(round(seconds, 3))
            print(f"    batch {number + 1} ({kind}{', warm-up' if number < 2 else ''}): "
                  f"{args.keys * args.updates:,} updates landed and applied in {seconds:.2f} s", flush=True)
        sent, unsent = warm.median(figures["sent"]), warm.median(figures["placeholders"])
        results.update(batch_seconds=figures, sent_median_seconds=sent, placeholders_median_seconds=unsent)
        print(f"medians: TOAST value sent {sent:.2f} s, placeholders {unsent:.2f} s ({unsent / sent:.2f}x); "
              f"the mirror equal to the table after every batch", flush=True)
    args.results.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
