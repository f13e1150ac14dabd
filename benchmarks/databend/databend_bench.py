"""The product's apply on the Databend target against a hand-written MERGE, measured in one run.
(Why over 300 lines: setup, the product's run and the hand-written baseline share one engine and clock.)

    .venv/bin/python -m benchmarks.databend.databend_bench                       # 100k:10k, 1M:10k, 1M:100k
    .venv/bin/python -m benchmarks.databend.databend_bench --scenarios 5000:1000 --log ''  # smoke run, seconds

Prints a table and writes what it prints to --log (default benchmarks/results/databend.log).

Databend here is the local endpoint on the embedded engine (python_jobs/devtools/databend_local/, one
subprocess, statements run one at a time), so the seconds are those of that engine on this
machine; compare methods of one run, not runs. For each target size (TARGET:BATCH, rows:events):

- setup: the product creates the raw tables (`dbt run-operation create_raw_tables`) and the empty
  mirror `bench_items` (`dbt run` on an empty raw log, target databend_local); then Databend SQL over
  numbers(N) fills the raw table with N snapshot events and the mirror with the N rows they give
  (rows as in common/datagen.py), sets the offset to that raw snapshot, and appends one batch of B events
  (datagen.batch_events' mix: 20% inserts, 10% deletes, 70% updates, +10% later duplicates).
- product: `dbt run --select bench_items` in-process (dbt parse and all); checks the offsets row
  (rows inserted/updated/deleted) and the row count. "of which SQL": the sum of its statements'
  times from the throwaway project's logs/dbt.log ("SQL status: ... in X seconds") in the run the
  product's figure comes from, so never more than that run; the slowest are printed after each
  scenario.
- baseline: one hand-written MERGE: row_number() dedup of the batch read with CHANGES (as the
  product reads it), values cast from the VARIANT, seq guard, delete/update/insert branches. It
  writes no tombstones (the product does).
- key scan: one scan of the mirror's key column.
Before each method the mirror, tombstones and offsets are flashed back to their setup snapshots.
Every result's fingerprint (count, hash of all columns) must equal the product's. Seconds are
the best of --repeat runs; ratio = seconds / product seconds; peak RSS is the engine process's
(reset before each method through /proc/PID/clear_refs).
"""

from __future__ import annotations

import argparse
import os
import re
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

import databend_driver

from benchmarks.common import datagen
from benchmarks.common.datagen import BASE_EPOCH_S, PRIME, SNAPSHOT_LSN, SOURCE_TABLE
from benchmarks.common.measure import format_table, tee_stdout
from benchmarks.common.project import BenchProject
from benchmarks.common.results import RESULTS_DIR
from python_jobs.devtools.databend_local import serve

MIRROR = "bench_items"
TARGET = ("--target", "databend_local")
WRITTEN = [name for name, _ in datagen.COLUMNS] + ["_cdc_key", "_cdc_seq", "_cdc_source_ts"]
STATUSES = "['placed', 'paid', 'shipped', 'cancelled']"


# --- common/datagen.py's rows and events as Databend SQL over numbers(n) ------------------------

def seq_sql(lsn: str, phase: int) -> str:
    return f"concat(lpad(({lsn})::string, 20, '0'), '.{'0' * 20}.{'0' * 10}.{phase}')"


def row_sql(k: str, v: str) -> dict[str, str]:
    """The source row of key k at version v (datagen._row); amount as exact text."""
    cents = f"(({k}) * 37 + ({v}) * 11) % 10000000"
    return {
        "id": k,
        "customer_id": f"(({k}) * 31 + ({v})) % 1000003",
        "status": f"get({STATUSES}, ((({k}) + ({v})) % 4 + 1)::uint64)",
        "amount": f"concat(({cents} div 100)::string, '.', lpad(({cents} % 100)::string, 2, '0'))",
        "updated_at": f"to_timestamp({BASE_EPOCH_S} + ({v}) * 60 + ({k}) % 86400)",
        "note": f"concat('item ', ({k})::string, ' v', ({v})::string, ' lorem ipsum dolor sit amet')",
    }


def json_sql(row: dict[str, str]) -> str:
    """The row as Debezium sends it: numbers bare, strings and ISO-8601 timestamps quoted."""
    parts = []
    for name, value in row.items():
        if name in ("status", "note"):
            value = f"'\"', {value}, '\"'"
        elif name == "updated_at":
            value = f"'\"', replace(({value})::string, ' ', 'T'), 'Z\"'"
        else:
            value = f"({value})::string"
        parts.append(f"'{',' if parts else '{'}\"{name}\":', {value}")
    return f"parse_json(concat({', '.join(parts)}, '}}'))"


def snapshot_events_sql(raw: str, rows: int) -> str:
    row = row_sql("k", "0")
    return f"""insert into {raw} select '{SOURCE_TABLE}', concat('["', k::string, '"]'), 'read', {json_sql(row)},
        null, {seq_sql(str(SNAPSHOT_LSN), 0)}, {row['updated_at']}, concat('bench://snapshot/part-', (k div 100000)::string),
        (k % 100000 + 1)::int, '2026-01-02 00:00:00'::timestamp, null, null, null from (select number::bigint as k from numbers({rows}))"""


def mirror_rows_sql(mirror: str, rows: int) -> str:
    row = row_sql("k", "0")
    values = ", ".join(list(row.values()) + ["""concat('["', k::string, '"]')""", seq_sql(str(SNAPSHOT_LSN), 0), row["updated_at"]])
    return f"insert into {mirror} ({', '.join(WRITTEN)}) select {values} from (select number::bigint as k from numbers({rows}))"


def batch_events_sql(raw: str, rows: int, events: int, batch: int) -> str:
    """datagen.batch_events(): 90% primary events on distinct keys, 10% later updates of update keys."""
    primary = max(10, int(events * 0.9))
    assert primary < rows, "a batch needs a target larger than its primary events"
    j = f"if(i < {primary}, i, 10 * (((i - {primary}) * 7919) % {max(1, primary // 10)}) + 3 + (i - {primary}) % 7)"
    action = f"if(i >= {primary}, 'update', j % 10 < 2, 'insert', j % 10 = 2, 'delete', 'update')"
    version = f"if(i >= {primary}, 2, j % 10 < 2, 0, 1)"
    return f"""insert into {raw}
        select '{SOURCE_TABLE}', concat('["', k::string, '"]'), action,
            if(action != 'delete', {json_sql(row_sql('k', 'v'))}, null),
            if(action = 'delete', parse_json(concat('{{"id":', k::string, '}}')), null),
            {seq_sql(f'{batch} * 1000000000000 + i * 10', 1)}, to_timestamp({BASE_EPOCH_S} + 86400 * {batch} + i div 1000),
            concat('bench://batch-{batch}/part-', (i div 100000)::string), (i % 100000 + 1)::int, '2026-01-02 00:00:00'::timestamp, null, null, null
        from (select *, {action} as action, {version} as v
              from (select *, if(j % 10 < 2, {rows} + j, (j * {PRIME}) % {rows}) as k
                    from (select i, {j} as j from (select number::bigint as i from numbers({events})))))"""


def handwritten_merge_sql(mirror: str, raw: str, after: str, through: str) -> str:
    types = dict(datagen.COLUMNS)
    values = ",\n            ".join(
        f"r['{name}']::string::{types[name]} as {name}" if types[name].startswith("decimal") else f"r['{name}']::{types[name]} as {name}"
        for name in types)
    return f"""merge into {mirror} as t
    using (
        select {values},
            key as _cdc_key, action, seq as _cdc_seq, source_ts as _cdc_source_ts
        from (
            select *, coalesce(raw_data, before_data) as r,
                row_number() over (partition by key order by seq desc) as rn
            from {raw} changes (information => append_only) at (snapshot => '{after}') end (snapshot => '{through}')
            where table_name = '{SOURCE_TABLE}'
        ) as events
        where rn = 1
    ) as s
        on t._cdc_key = s._cdc_key
    when matched and s._cdc_seq > t._cdc_seq and s.action = 'delete' then delete
    when matched and s._cdc_seq > t._cdc_seq then update set {', '.join(f'{c} = s.{c}' for c in WRITTEN if c != '_cdc_key')}
    when not matched and s.action != 'delete' then insert ({', '.join(WRITTEN)}) values ({', '.join('s.' + c for c in WRITTEN)})"""


# --- the run --------------------------------------------------------------------------------------

class Bench:
    def __init__(self, url: str, work: Path, repeat: int):
        address = urlparse(url)
        os.environ["CDC_MERGE_DATABEND_HOST"], os.environ["CDC_MERGE_DATABEND_PORT"] = address.hostname, str(address.port)
        dsn = f"databend://root:@{address.hostname}:{address.port}/?sslmode=disable&format_null_as_str=0"
        self.conn = databend_driver.BlockingDatabendClient(dsn).get_conn()
        self.work, self.repeat, self.rows_out, self.setups = work, repeat, [], 0
        self.engine = next(pid for pid in _children() if b"python_jobs.devtools.databend_local" in Path(f"/proc/{pid}/cmdline").read_bytes())

    def sql(self, sql: str) -> list[tuple]:
        return [tuple(row.values()) for row in self.conn.query_iter(sql)]

    def snapshot(self, table: str) -> str:
        schema, name = table.split(".")
        snapshots = f"fuse_snapshot('{schema}', '{name}')"
        return self.sql(f"select snapshot_id from {snapshots} where snapshot_id not in "
                        f"(select previous_snapshot_id from {snapshots} where previous_snapshot_id is not null)")[0][0]

    def fingerprint(self, table: str) -> tuple:
        row = ", ".join(f"coalesce({c}::string, '~')" for c in WRITTEN)
        return self.sql(f"select count(*), sum(city64withseed(concat_ws('|', {row}), 0) % 1000000007) from {table}")[0]

    def setup(self, rows: int) -> dict:
        n = self.setups = self.setups + 1
        project = BenchProject(self.work / f"project_{n}", f"bm_{n}", f"br_{n}", self.work / f"inbox_{n}")
        project.write_mirror(MIRROR)
        t0 = time.perf_counter()
        project.dbt("run-operation", "create_raw_tables", *TARGET)
        project.dbt("run", "--select", MIRROR, *TARGET)  # mirror, tombstones, offsets from an empty raw log
        log = (project.dir / "logs" / "dbt.log").read_text()
        target_name = re.search(r"where target_table = '([^']+)'", log).group(1)
        raw, mirror = f"br_{n}.raw_events", f"bm_{n}.{MIRROR}"
        tombstones, offsets = f"{mirror}__cdc_tombstones", f"bm_{n}.cdc_merge_offsets"
        self.sql(snapshot_events_sql(raw, rows))
        s0 = self.snapshot(raw)
        self.sql(mirror_rows_sql(mirror, rows))
        # A tombstone of a key that never exists, so the table has a snapshot to flash back to.
        self.sql(f"""insert into {tombstones} values ('["-1"]', '0', '2000-01-01 00:00:00')""")
        self.sql(f"""insert into {offsets} values ('{target_name}', 1, '{raw}', '{SOURCE_TABLE}', '{s0}', {rows}, {rows},
                     0, 0, 0, '2026-01-01 00:00:00', now(), 'bench-setup')""")
        state = {table: self.snapshot(table) for table in (mirror, tombstones, offsets)}
        print(f"== {rows:,} rows: setup {time.perf_counter() - t0:.1f} s", flush=True)
        return dict(project=project, rows=rows, raw=raw, mirror=mirror, offsets=offsets, s0=s0, state=state, batch=0)

    def restore(self, env: dict) -> None:
        for table, snapshot in env["state"].items():
            self.sql(f"alter table {table} flashback to (snapshot => '{snapshot}')")

    def peak_mb(self, reset: bool = False) -> float:
        if reset:  # "5" resets the peak RSS (VmHWM) to the current RSS
            Path(f"/proc/{self.engine}/clear_refs").write_text("5")
        return _vm_hwm_kb(self.engine) / 1024

    def timed(self, env: dict, action, restore: bool = True) -> tuple[float, float]:
        """Seconds and engine peak RSS (MB) of one run of action, from the setup state if restore."""
        if restore:
            self.restore(env)
        self.peak_mb(reset=True)
        t0 = time.perf_counter()
        action()
        return time.perf_counter() - t0, self.peak_mb()

    def scenario(self, env: dict, events: int) -> None:
        rows, raw, mirror, project = env["rows"], env["raw"], env["mirror"], env["project"]
        env["batch"] += 1
        if self.snapshot(raw) != env["s0"]:
            self.sql(f"alter table {raw} flashback to (snapshot => '{env['s0']}')")
        t0 = time.perf_counter()
        self.sql(batch_events_sql(raw, rows, events, env["batch"]))
        s1 = self.snapshot(raw)
        label = f"{events:,} -> {rows:,}"
        print(f"== {label}: batch appended in {time.perf_counter() - t0:.1f} s", flush=True)
        expected = datagen.expected_batch_counts(events)
        log_path = project.dir / "logs" / "dbt.log"
        methods = {  # name: (action, restore the setup state first)
            "product": (lambda: project.dbt("run", "--select", MIRROR, *TARGET), True),
            "hand-written MERGE": (lambda: self.sql(handwritten_merge_sql(mirror, raw, env["s0"], s1)), True),
            # the mirror as the hand-written MERGE left it
            "key-column scan": (lambda: self.sql(f"select sum(city64withseed(_cdc_key, 0) % 1000000007) from {mirror}"), False),
        }
        runs = {name: [] for name in ["product", "  of which SQL", *list(methods)[1:]]}  # (seconds, peak MB, fingerprint)
        for _ in range(self.repeat):  # interleaved, to see the noise
            for name, (action, restore) in methods.items():
                log_start = log_path.stat().st_size
                seconds, peak = self.timed(env, action, restore)
                runs[name].append((seconds, peak, self.fingerprint(mirror) if restore else None))
                if name == "product":
                    applied = self.sql(f"select rows_inserted, rows_updated, rows_deleted from {env['offsets']} "
                                       "order by offset_ordinal desc limit 1")[0]
                    if applied != (expected["inserted"], expected["updated"], expected["deleted"]):
                        raise AssertionError(f"product applied {applied}, expected {expected}")
                    statements = statement_times(log_path, log_start)
                    runs["  of which SQL"].append((sum(s for s, _ in statements), peak, None))
        want = (rows + expected["inserted"] - expected["deleted"], runs["product"][0][2][1])
        product = min(seconds for seconds, _, _ in runs["product"])
        fastest = [seconds for seconds, _, _ in runs["product"]].index(product)
        for name, results in runs.items():
            seconds = [r[0] for r in results]
            prints = [r[2] for r in results if r[2] is not None]
            ok = "-" if not prints else "ok" if all(tuple(fp) == want for fp in prints) else "DIFFERENT"
            # The product's SQL is that of its fastest run (a part of the figure above it); the rest their best.
            shown = seconds[fastest] if name == "  of which SQL" else min(seconds)
            versus = f"{shown / product:.0%} of it" if name == "  of which SQL" else f"{shown / product:,.2f}x"
            self.rows_out.append((label, name, shown, versus, max(r[1] for r in results), ok, seconds))
            print(f"   {name.strip()}: {' / '.join(f'{s:.2f}' for s in seconds)} s {ok}", flush=True)
        print(f"   product statements (last run): {len(statements)}; slowest:")
        for seconds, sql in sorted(statements, reverse=True)[:6]:
            print(f"     {seconds:7.3f}  {sql[:110]}")


def statement_times(log_path: Path, start: int) -> list[tuple[float, str]]:
    """(seconds, SQL) of each statement dbt logged after offset start ('SQL status: ... in X seconds')."""
    with open(log_path, encoding="utf-8") as log:
        log.seek(start)
        text = log.read()
    found = re.findall(r"On model\.[\w.]+: (.*?)\n[^\n]*?SQL status: [^\n]*? in ([\d.]+) seconds", text, re.S)
    return [(float(s), " ".join(re.sub(r"/\*.*?\*/", "", sql.split("\x1b")[0]).split())) for sql, s in found]


def _children() -> list[int]:
    pids = []
    for task in Path("/proc/self/task").iterdir():
        pids += [int(p) for p in (task / "children").read_text().split()]
    return pids


def _vm_hwm_kb(pid: str | int = "self") -> int:
    return int(re.search(r"VmHWM:\s+(\d+)", Path(f"/proc/{pid}/status").read_text()).group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenarios", default="100000:10000,1000000:10000,1000000:100000", help="TARGET_ROWS:BATCH_EVENTS,...")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each method (best is reported)")
    parser.add_argument("--work-dir", type=Path, help="engine data and dbt project copies (logs/dbt.log); default: a temp dir")
    parser.add_argument("--log", default=str(RESULTS_DIR / "databend.log"), help="copy of what it prints ('' for none)")
    args = parser.parse_args()
    with tee_stdout(Path(args.log) if args.log else None):
        run(args)


def run(args: argparse.Namespace) -> None:
    scenarios = [tuple(map(int, s.split(":"))) for s in args.scenarios.split(",")]
    with tempfile.TemporaryDirectory(prefix="databend_bench_") as tmp:
        work = args.work_dir or Path(tmp)
        with serve(work / "databend") as url:
            bench, env = Bench(url, work, args.repeat), None
            for rows, events in scenarios:
                if env is None or env["rows"] != rows:
                    env = bench.setup(rows)
                bench.scenario(env, events)
        print(f"\nDatabend {_engine_version()} embedded, local endpoint; best of {args.repeat}; "
              f"vs product = seconds / product seconds; the product's SQL: its share of the product's fastest run\n")
        print(format_table(["events -> rows", "method", "seconds", "vs product", "engine peak RSS", "result", "all runs (s)"],
                           [[label, method, f"{seconds:,.2f}", versus, f"{peak:,.0f} MB", ok, ", ".join(f"{s:.2f}" for s in runs)]
                            for label, method, seconds, versus, peak, ok, runs in bench.rows_out], {2, 3, 4}))
        print(f"\nthis process (dbt in-process) peak RSS: {_vm_hwm_kb() / 1024:.0f} MB")


def _engine_version() -> str:
    from importlib.metadata import version

    return version("databend")


if __name__ == "__main__":
    main()
