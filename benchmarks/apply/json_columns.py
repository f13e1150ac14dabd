"""What reading a model's number and boolean fields again as text costs (macros/cdc_columns.sql,
spark_json_value): 1M row images of six columns (bigint, string, decimal, boolean, int, timestamp)
selected as cdc_columns renders them on Spark, alternating with the expressions it rendered before
(one from_json of the row, no unread-row field, no second read). Every image here reads whole, so the
figure is the cost on the common rows; the results of both are checked equal.

    .venv/bin/python -m benchmarks.apply.json_columns [--rounds 7] [--rows 1000000]

Writes benchmarks/results/json_columns.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from benchmarks.common.results import RESULTS_DIR, run_header

RESULTS = RESULTS_DIR / "json_columns.json"
TYPES = {"id": "bigint", "name": "string", "amount": "decimal(10,2)", "flag": "boolean", "n": "int", "ts": "timestamp"}
READ_AGAIN = {"bigint", "int", "boolean"}  # of TYPES, those spark_types_read_again() names
OPTIONS = "map('mode', 'PERMISSIVE', 'timeZone', 'UTC')"
OPTIONS_UNREAD = "map('mode', 'PERMISSIVE', 'timeZone', 'UTC', 'columnNameOfCorruptRecord', '_cdc_unread')"


def columns_before() -> list[str]:
    schema = ", ".join(f"{name} {data_type}" for name, data_type in TYPES.items())
    return [f"from_json(_cdc_row, '{schema}', {OPTIONS}).{name} as {name}" for name in TYPES]


def columns_now() -> list[str]:
    schema = ", ".join(f"{name} {data_type}" for name, data_type in TYPES.items())
    parsed = f"from_json(_cdc_row, '{schema}, _cdc_unread string', {OPTIONS_UNREAD})"
    selected = []
    for name, data_type in TYPES.items():
        value = f"{parsed}.{name}"
        if data_type not in READ_AGAIN:
            selected.append(f"{value} as {name}")
            continue
        text = f"from_json(_cdc_row, '{name} string', {OPTIONS_UNREAD}).{name}"
        cast = (f"try_cast({text} as boolean)" if data_type == "boolean" else
                f"coalesce(try_cast({text} as {data_type}), case {text} when 'true' then cast(1 as {data_type}) "
                f"when 'false' then cast(0 as {data_type}) end)")
        selected.append(f"coalesce({value}, if({parsed}._cdc_unread is null, null, {cast})) as {name}")
    return selected


def query(columns: list[str]) -> str:
    names = ", ".join(column.rsplit(" as ", 1)[1] for column in columns)
    return f"select sum(hash({names})) from (select {', '.join(columns)} from images)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    header = run_header()
    from python_jobs.landing.io import spark_session

    spark = spark_session("json-columns")
    spark.sql(f"""select to_json(named_struct('id', id, 'name', concat('n', id), 'amount', cast(id % 1000 / 100 as decimal(10,2)),
        'flag', id % 2 = 0, 'n', cast(id % 100 as int), 'ts', timestamp'2026-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id)))
        as _cdc_row from range({args.rows})""").localCheckpoint(eager=True).createOrReplaceTempView("images")
    variants = {"before": query(columns_before()), "now": query(columns_now())}
    answers = {name: spark.sql(sql).collect() for name, sql in variants.items()}  # warm, and the same answer
    assert answers["before"] == answers["now"], answers
    seconds: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, sql in variants.items():
            started = time.perf_counter()
            spark.sql(sql).collect()
            seconds[name].append(round(time.perf_counter() - started, 3))
    medians = {name: round(statistics.median(times), 3) for name, times in seconds.items()}
    result = {**header, "rows": args.rows, "median_seconds": medians,
              "now_over_before": round(medians["now"] / medians["before"], 3), "seconds": seconds}
    print(json.dumps(result, indent=2))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
