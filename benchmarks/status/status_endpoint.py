"""What the status endpoint costs (python_jobs/status/; docs/observability.md):

    .venv/bin/python -m benchmarks.status.status_endpoint [--cycles 12] [--events 300]

- scrape: /metrics and the status page of a registry holding 200 mirrors and an hour of 5-second
  cycles, each fetched over HTTP 200 times: median and p95 milliseconds (goal: a scrape within 50 ms).
- cycle: the demo's four mirrors, landing included, a few hundred Debezium events per cycle, in one
  warm process as cdc-run runs it (benchmarks/common/warm.py); cycles alternate between the endpoint off
  (nothing recorded) and on (the registry recording, /metrics scraped every second and the page every
  5 s meanwhile): the median cycle of each, in the same run (goal: within noise).

Writes benchmarks/results/status_endpoint.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import threading
import time
import urllib.request
from pathlib import Path

from benchmarks.common import warm
from benchmarks.common.project import demo_project
from benchmarks.common.results import RESULTS_DIR
from python_jobs.status.registry import REGISTRY, Registry
from python_jobs.status.server import StatusServer

# PySpark hands timestamps to Python in the process's local zone; the tables hold UTC.
os.environ["TZ"] = "UTC"
time.tzset()

RESULTS = RESULTS_DIR / "status_endpoint.json"


def fetch_ms(url: str) -> float:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=10) as answer:
        answer.read()
    return (time.perf_counter() - started) * 1000


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * share))], 2)


def scrape(mirrors: int = 200) -> dict:
    registry = Registry()
    registry.enabled = True
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
    for number in range(mirrors):
        registry.observe_run_row(f"mirror.table_{number:03d}", {
            "source_table": f"shop.table_{number:03d}", "finished_at": stamp, "newest_source_ts": stamp, "run_seconds": 0.4,
            "events_read": 30, "inserted": 10, "updated": 15, "deleted": 5, "skipped": 0})
    for _ in range(720):
        registry.observe_cycle(True, 5.0)
    server = StatusServer(registry.snapshot, "127.0.0.1", 0)
    server.start()
    try:
        fetch_ms(f"{server.address}/metrics")
        metrics = [fetch_ms(f"{server.address}/metrics") for _ in range(200)]
        page = [fetch_ms(f"{server.address}/") for _ in range(200)]
    finally:
        server.stop()
    return {"mirrors": mirrors, "metrics_ms": {"median": percentile(metrics, 0.5), "p95": percentile(metrics, 0.95)},
            "page_ms": {"median": percentile(page, 0.5), "p95": percentile(page, 0.95)}}


class Scraper(threading.Thread):
    """A Prometheus-like scraper while the endpoint is on: /metrics every second, the page every 5 s."""

    def __init__(self, address: str) -> None:
        super().__init__(daemon=True)
        self.address, self.stop, self.scrapes = address, threading.Event(), 0

    def run(self) -> None:
        while not self.stop.wait(1.0):
            fetch_ms(f"{self.address}/metrics")
            self.scrapes += 1
            if self.scrapes % 5 == 0:
                fetch_ms(f"{self.address}/")


def cycles(work: Path, count: int, events: int) -> dict:
    from python_jobs.demo.generate import build_waves, write_wave

    warm.session(work / "warehouse")
    project = demo_project(work, "bm_status", "br_status")
    warm.invoke(project, "run-operation", "create_raw_tables")
    _, waves = build_waves(7, events=events * (count + 2), waves=count + 2, snapshot_rows=50)
    server = StatusServer(REGISTRY.snapshot, "127.0.0.1", 0)
    server.start()
    seconds: dict[str, list[float]] = {"off": [], "on": []}
    scrapes = 0
    try:
        for number, wave in enumerate(waves):
            mode = "on" if number % 2 else "off"
            REGISTRY.enabled = mode == "on"
            scraper = Scraper(server.address)
            if mode == "on":
                scraper.start()
            write_wave(wave, project.dir.parent / "inbox_demo")
            outcome = warm.invoke(project, "run")
            if mode == "on":
                scraper.stop.set()
                scraper.join()
                scrapes += scraper.scrapes
            if number >= 2:  # the first two create the mirrors and warm the session
                seconds[mode].append(outcome.seconds)
            print(f"    cycle {number + 1} (endpoint {mode}): {outcome.seconds:.2f} s", flush=True)
    finally:
        server.stop()
    off, on = statistics.median(seconds["off"]), statistics.median(seconds["on"])
    spread = statistics.pstdev(seconds["off"]) if len(seconds["off"]) > 1 else 0.0
    return {"events_per_cycle": events, "cycles_each": len(seconds["off"]), "median_off_seconds": round(off, 3),
            "median_on_seconds": round(on, 3), "on_over_off": round(on / off, 3), "off_stdev_seconds": round(spread, 3),
            "scrapes_during_on_cycles": scrapes, "cycle_seconds": {mode: [round(s, 3) for s in values] for mode, values in seconds.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=12)
    parser.add_argument("--events", type=int, default=300)
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/cdc-merge-status-bench"))
    args = parser.parse_args()
    shutil.rmtree(args.work_dir, ignore_errors=True)
    args.work_dir.mkdir(parents=True)
    print("== scrape: 200 mirrors", flush=True)
    scraped = scrape()
    print(json.dumps(scraped), flush=True)
    print(f"== cycles: the demo's mirrors, endpoint off and on alternately ({args.cycles} cycles)", flush=True)
    cycled = cycles(args.work_dir, args.cycles, args.events)
    result = {"machine": f"{os.cpu_count()} cores", "scrape": scraped, "cycle": cycled}
    print(json.dumps(result, indent=2))
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
