"""What reading a Databend mirror through its view at the cut costs, against reading it at the cut's
snapshot as consistent() does, on the embedded Databend engine.

    .venv/bin/python -m benchmarks.consistent_cuts.cut_views               # 2,000,000 rows
    .venv/bin/python -m benchmarks.consistent_cuts.cut_views --rows 200000

A table of --rows rows with a second snapshot that changed a tenth of them, a cuts table whose
latest cut is the second, and a view of the shape macros/materializations/cdc_merge/cut_views.sql
writes: both snapshots as branches, each kept only when the latest cut is its own. Times one
aggregate over every column (median of --repeat) both ways, and checks they agree.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    import databend

    context = databend.SessionContext()

    def rows(sql: str) -> list:
        return context.sql(sql).to_pandas().values.tolist()

    def newest_snapshot() -> str:
        return rows("select snapshot_id from fuse_snapshot('default', 'mirror') order by timestamp desc limit 1")[0][0]

    rows("create table cdc_merge_cuts (consistency_group string, cut_ordinal bigint)")
    rows("create table mirror (id bigint, balance bigint, note string)")
    rows(f"insert into mirror select number, number % 1000, concat('row ', to_string(number)) from numbers({args.rows})")
    previous = newest_snapshot()
    rows("update mirror set balance = balance + 1 where id % 10 = 0")
    latest = newest_snapshot()
    rows("insert into cdc_merge_cuts values ('bank', 1), ('bank', 2)")
    branches = [
        f"select * from mirror at (snapshot => '{snapshot}') where {ordinal} in "
        "(select max(cut_ordinal) from cdc_merge_cuts where consistency_group = 'bank')"
        for ordinal, snapshot in ((1, previous), (2, latest))
    ]
    rows("create view mirror_at_cut as " + " union all ".join(branches))

    def timed(relation: str) -> tuple[float, list]:
        seconds, answer = [], None
        for _ in range(args.repeat):
            started = time.perf_counter()
            answer = rows(f"select count(*), sum(balance), max(note) from {relation}")
            seconds.append(time.perf_counter() - started)
        return statistics.median(seconds), answer

    at_snapshot, expected = timed(f"mirror at (snapshot => '{latest}')")
    through_view, answer = timed("mirror_at_cut")
    assert answer == expected, (answer, expected)
    print(f"{args.rows:,} rows on {os.cpu_count()} cores, median of {args.repeat}: at the cut's snapshot "
          f"{at_snapshot:.3f} s, through the view at the cut {through_view:.3f} s ({through_view / at_snapshot:.1f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
