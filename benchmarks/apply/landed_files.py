"""A landing's fixed cost as files accumulate: the input folder keeping every landed file (the
default) against `landed:` moving each one out once landed (docs/landing.md), in one process.

    .venv/bin/python -m benchmarks.apply.landed_files [--files 5000,10000,20000,30000]

A capture writing a file a second leaves 3,600 files an hour. At each count of files landed, for
each way: a landing with nothing new (best of 3) and a landing of one new file (median of 3), the
two ways alternating at each count. Writes benchmarks/results/landed_files.json and .log.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import yaml

from benchmarks.common import warm
from benchmarks.common.measure import tee_stdout
from benchmarks.common.project import demo_project
from benchmarks.common.results import RESULTS_DIR, run_header

RESULTS = RESULTS_DIR / "landed_files.json"
# One Debezium change of inventory.products (a table of the demo's landing config), its id replaced.
LINE = {"before": None, "after": {"id": 0, "name": "scooter", "description": "Small 2-wheel scooter", "weight": 3.14},
        "source": {"version": "1.1.1.Final", "connector": "mysql", "name": "dbserver1", "ts_ms": 0, "snapshot": "false",
                   "db": "inventory", "table": "products", "server_id": 0, "file": "mysql-bin.000003", "pos": 0, "row": 0},
        "op": "c", "ts_ms": 1589355606100}


class Way:
    """One landing config (kept or moved) with an input folder and checkpoint of its own."""

    def __init__(self, project, work: Path, name: str, moved: bool) -> None:
        from python_jobs.landing.config import load_config

        self.name, self.inbox, self.written = name, work / f"inbox_{name}", 0
        self.inbox.mkdir()
        document = yaml.safe_load((project.dir / "landing.yml").read_text())
        document.update({"input": str(self.inbox), "checkpoint": str(work / f"checkpoint_{name}")})
        if moved:
            document["landed"] = str(work / f"landed_{name}")
        path = work / f"landing_{name}.yml"
        path.write_text(yaml.safe_dump(document))
        self.config = load_config(path)

    def deliver(self, count: int) -> None:
        for _ in range(count):
            self.written += 1
            line = {**LINE, "after": {**LINE["after"], "id": self.written}, "source": {**LINE["source"], "pos": self.written}}
            (self.inbox / f"{self.name}-{self.written:07d}.json").write_text(json.dumps(line) + "\n")

    def land(self, spark) -> float:
        from python_jobs.landing import land

        started = time.monotonic()
        land.run(self.config, spark=spark)
        return time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", default="5000,10000,20000,30000", help="counts of files landed to measure at")
    args = parser.parse_args(argv)
    counts = [0, *(int(count) for count in args.files.split(","))]
    work = Path(tempfile.mkdtemp(prefix="cdc_merge_landed_files_"))
    with tee_stdout(RESULTS.with_suffix(".log")):
        figures = run_header()
        print(f"machine: {figures['machine']}", flush=True)
        spark = warm.session(work / "warehouse", driver_memory="2g")
        project = demo_project(work, "bm_landed", "br_landed")
        warm.invoke(project, "run-operation", "create_raw_tables")
        ways = [Way(project, work, "kept", moved=False), Way(project, work, "moved", moved=True)]
        rows = []
        for count in counts:
            row: dict = {"files_landed": count}
            for way in ways:
                while way.written < count:  # landed 1,000 files a landing, as max_files_per_batch lets it
                    way.deliver(min(1000, count - way.written))
                    way.land(spark)
                empty = min(way.land(spark) for _ in range(3))
                one_file = []
                for _ in range(3):
                    way.deliver(1)
                    one_file.append(way.land(spark))
                row[way.name] = {"nothing_new_seconds": round(empty, 3), "one_file_seconds": round(statistics.median(one_file), 3)}
            rows.append(row)
            print(f"    {count:6d} files landed: nothing new {row['kept']['nothing_new_seconds']:.2f} s kept, "
                  f"{row['moved']['nothing_new_seconds']:.2f} s moved; one new file {row['kept']['one_file_seconds']:.2f} s kept, "
                  f"{row['moved']['one_file_seconds']:.2f} s moved", flush=True)
        figures["rows"] = rows
    RESULTS.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
