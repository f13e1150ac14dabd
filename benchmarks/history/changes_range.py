"""What a one-hour cdc_changes() range costs against a full scan of a larger raw log (docs/history.md).

Builds a raw table of HOURS hourly landing commits of EVENTS_PER_HOUR events of one source table
(updates of KEYS keys, Debezium-like JSON, source_ts within the hour), then times, warm, best of 3:
    full log      every event of the table, one per (key, seq): what a range without a filter reads
    one hour      the same over a one-hour source_ts range (post and change images need no more)
    one hour+pre  plus the previous event of each of the range's keys (pre images rebuilt from the log)

    .venv/bin/python -m benchmarks.history.changes_range [--hours 48] [--events-per-hour 20000]
"""

from __future__ import annotations

import argparse
import tempfile
import time

from python_jobs.landing import io

FULL = """
select count(*) as n from (
    select key, seq, row_number() over (partition by key, seq order by landed_file desc, landed_line desc) as copy
    from {raw} where table_name = 'shop.orders'
) where copy = 1
"""
RANGE = """
select count(*) as n from (
    select key, seq, row_number() over (partition by key, seq order by landed_file desc, landed_line desc) as copy
    from {raw}
    where table_name = 'shop.orders' and source_ts >= cast('{start}' as timestamp) and source_ts < cast('{end}' as timestamp)
) where copy = 1
"""
RANGE_WITH_PRE = """
with range_events as (
    select key, seq from {raw}
    where table_name = 'shop.orders' and source_ts >= cast('{start}' as timestamp) and source_ts < cast('{end}' as timestamp)
),
previous as (
    select key, seq, lag(raw_data) over (partition by key order by seq) as previous_image
    from {raw} where table_name = 'shop.orders' and key in (select key from range_events)
)
select count(*) as n, count(previous_image) as with_pre
from range_events join previous using (key, seq)
"""


def build(spark, raw: str, hours: int, per_hour: int, keys: int) -> None:
    spark.sql(f"""create table {raw} (table_name string, key string, action string, raw_data string, before_data string,
                  seq string, source_ts timestamp, landed_file string, landed_line int, landed_at timestamp)
                  using iceberg partitioned by (table_name) tblproperties ('format-version' = '2')""")
    for hour in range(hours):
        first = hour * per_hour
        spark.sql(f"""insert into {raw}
            select 'shop.orders', concat('["', id % {keys}, '"]'), 'update',
                concat('{{"id": ', id % {keys}, ', "status": "s', id % 7, '", "amount": ', id % 100000, '.25}}'), null,
                lpad(cast(id as string), 20, '0'), timestamp'2026-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id * 3600.0 / {per_hour}),
                concat('hour-', {hour}, '.json'), cast(id - {first} as int), current_timestamp()
            from range({first}, {first + per_hour})""")


def best_of(spark, sql: str, runs: int = 3) -> tuple[float, list]:
    times, rows = [], None
    for _ in range(runs):
        started = time.perf_counter()
        rows = spark.sql(sql).collect()
        times.append(time.perf_counter() - started)
    return min(times), rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=int, default=48)
    parser.add_argument("--events-per-hour", type=int, default=20_000)
    parser.add_argument("--keys", type=int, default=50_000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as warehouse:
        spark = io.spark_session("changes_range", warehouse)
        raw = "bench.raw_events"
        spark.sql("create namespace if not exists bench")
        build(spark, raw, args.hours, args.events_per_hour, args.keys)
        hour = args.hours // 2
        bounds = {"raw": raw, "start": f"2026-01-{1 + hour // 24:02d} {hour % 24:02d}:00:00",
                  "end": f"2026-01-{1 + (hour + 1) // 24:02d} {(hour + 1) % 24:02d}:00:00"}
        total = args.hours * args.events_per_hour
        for name, sql in (("full log", FULL), ("one hour", RANGE), ("one hour+pre", RANGE_WITH_PRE)):
            seconds, rows = best_of(spark, sql.format(**bounds))
            print(f"{name:14s} {seconds:6.2f} s  {rows[0].asDict()}  (raw log: {total} events in {args.hours} commits)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
