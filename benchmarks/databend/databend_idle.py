"""Idle mirrors on the Databend target: what a `dbt run` of N mirrors with nothing new costs.

    .venv/bin/python -m benchmarks.databend.databend_idle                  # 10, 50 and 200 mirrors
    .venv/bin/python -m benchmarks.databend.databend_idle --mirrors 10 --log ''   # a short run

Databend here is the local endpoint on the embedded engine (python_jobs/devtools/databend_local/, one
subprocess, statements one at a time, the Databend profile's one dbt thread). One project of the
largest N mirrors (`bench.items_<n>`, datagen's columns), each applied once from a few events
written to the raw table in SQL; then, for each N, `dbt run` of N of them with nothing new,
alternating in one process:

- facts: the idle check as it runs (cdc_databend/mirror_facts.py): the facts of all the
  invocation's mirrors read in a few queries, the runs rows written in one INSERT;
- queries: the idle check's statements of each mirror's own (idle.sql nothing_new_by_queries) and
  its own runs row, as the adapter capabilities idle_state and keeps_run_rows off give;
- no-op: N models whose materialization runs no SQL (dbt's own cost).

Figures: the median of --repeat runs; statements counted in the project's logs/dbt.log. Writes
what it prints to --log (default benchmarks/results/databend_idle.log).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import re
import statistics
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

import databend_driver

from benchmarks.common.datagen import BASE_EPOCH_S
from benchmarks.common.measure import format_table, tee_stdout
from benchmarks.common.project import NOOP_MATERIALIZATION, BenchProject
from benchmarks.common.results import RESULTS_DIR
from benchmarks.databend.databend_bench import json_sql, row_sql, seq_sql
from python_jobs.devtools.databend_local import serve

TARGET = ("--target", "databend_local")
EVENTS_PER_MIRROR = 5
STATEMENT = re.compile(r"On model\.\w+\.(\w+): (?!Close\b)")


def raw_events_sql(raw: str, mirrors: int) -> str:
    """EVENTS_PER_MIRROR inserts of each source table bench.items_<n>, one snapshot of the raw table."""
    row = row_sql("k", "0")
    return f"""insert into {raw} select concat('bench.items_', (k % {mirrors})::string), concat('["', k::string, '"]'), 'insert',
        {json_sql(row)}, null, {seq_sql('k + 1', 1)}, to_timestamp({BASE_EPOCH_S} + k), 'bench://idle/part-0', (k + 1)::int,
        '2026-01-02 00:00:00'::timestamp, null, null, null from (select number::bigint as k from numbers({mirrors * EVENTS_PER_MIRROR}))"""


@contextlib.contextmanager
def by_queries():
    """The idle check of each mirror's own statements (the adapter reads no facts once per invocation)."""
    from dbt.adapters.cdc_databend.impl import CdcDatabendAdapter

    original = CdcDatabendAdapter.cdc_connection_capabilities
    CdcDatabendAdapter.cdc_connection_capabilities = lambda self: dataclasses.replace(
        original(self), idle_state=False, keeps_run_rows=False)
    try:
        yield
    finally:
        CdcDatabendAdapter.cdc_connection_capabilities = original


class Bench:
    def __init__(self, url: str, work: Path, largest: int):
        address = urlparse(url)
        os.environ["CDC_MERGE_DATABEND_HOST"], os.environ["CDC_MERGE_DATABEND_PORT"] = address.hostname, str(address.port)
        self.conn = databend_driver.BlockingDatabendClient(
            f"databend://root:@{address.hostname}:{address.port}/?sslmode=disable&format_null_as_str=0").get_conn()
        self.project = BenchProject(work / "project", "idle_m", "idle_r", work / "inbox", source_tables=largest)
        self.largest = largest

    def setup(self) -> None:
        project, n = self.project, self.largest
        started = time.perf_counter()
        for number in range(n):
            project.write_mirror(f"bench_items_{number}", source_table=f"bench.items_{number}")
        noop = project.dir / "models" / "noop"
        noop.mkdir()
        for number in range(n):
            (noop / f"noop_{number}.sql").write_text("{{ config(materialized='bench_noop') }}\n\nselect 1 as id\n")
        (project.dir / "macros" / "bench_noop.sql").write_text(NOOP_MATERIALIZATION)
        project.dbt("run-operation", "create_raw_tables", *TARGET)
        self.conn.exec(raw_events_sql(f"{project.raw_schema}.raw_events", n))
        project.dbt("run", "--select", "path:models/mirrors", *TARGET)
        project.dbt("run", "--select", "path:models/noop", *TARGET)
        print(f"== setup: {n} mirrors applied once ({EVENTS_PER_MIRROR} events each), {n} no-op models: "
              f"{time.perf_counter() - started:.1f} s", flush=True)

    def timed(self, *select: str) -> tuple[float, int]:
        log = self.project.dir / "logs" / "dbt.log"
        log.unlink(missing_ok=True)  # the run's own log: dbt rotates a long one
        _, seconds = self.project.dbt("run", "--select", *select, *TARGET)
        text = log.read_text()
        if select[0].startswith("bench_items") and text.count(": nothing new (offset") != len(select):
            raise RuntimeError(f"not every mirror of the run was idle: {text[-2000:]}")
        return seconds, len(STATEMENT.findall(text))

    def measure(self, mirrors: int, repeat: int) -> list:
        select = [f"bench_items_{number}" for number in range(mirrors)]
        noop = [f"noop_{number}" for number in range(mirrors)]
        runs: dict[str, list[tuple[float, int]]] = {"facts": [], "queries": [], "noop": []}
        for _ in range(repeat):
            runs["facts"].append(self.timed(*select))
            with by_queries():
                runs["queries"].append(self.timed(*select))
            runs["noop"].append(self.timed(*noop))
        median = {name: statistics.median(seconds for seconds, _ in measured) for name, measured in runs.items()}
        statements = {name: measured[-1][1] for name, measured in runs.items()}
        print(f"   {mirrors} mirrors: facts {median['facts']:.2f} s ({statements['facts']} statements), queries "
              f"{median['queries']:.2f} s ({statements['queries']}), no-op {median['noop']:.2f} s", flush=True)
        return [mirrors, f"{median['facts']:.2f}", statements["facts"], f"{median['queries']:.2f}", statements["queries"],
                f"{median['noop']:.2f}", f"{median['facts'] - median['noop']:.2f}", f"{median['queries'] / median['facts']:.1f}x"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirrors", default="10,50,200", help="N,... idle mirrors per run (default 10,50,200)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each path; the median is reported")
    parser.add_argument("--work-dir", type=Path, help="engine data and the dbt project; default: a temp dir")
    parser.add_argument("--log", default=str(RESULTS_DIR / "databend_idle.log"), help="copy of what it prints ('' for none)")
    args = parser.parse_args()
    sizes = sorted(int(n) for n in args.mirrors.split(","))
    with tee_stdout(Path(args.log) if args.log else None), tempfile.TemporaryDirectory(prefix="databend_idle_") as tmp:
        work = args.work_dir or Path(tmp)
        with serve(work / "databend") as url:
            bench = Bench(url, work, sizes[-1])
            bench.setup()
            rows = [bench.measure(n, args.repeat) for n in sizes]
        from importlib.metadata import version

        print(f"\nDatabend {version('databend')} embedded, local endpoint, one dbt thread; median of {args.repeat}; "
              "statements: those dbt logged for the run's models\n")
        print(format_table(["idle mirrors", "facts (s)", "statements", "queries (s)", "statements", "no-op (s)",
                            "facts beyond dbt (s)", "queries / facts"], rows, {1, 2, 3, 4, 5, 6, 7}))


if __name__ == "__main__":
    main()
