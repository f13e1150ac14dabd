"""Appends from two processes at once to one table of the embedded catalog: every commit a process
saw succeed must be in the table's history (FileLockManager.java; RELIABILITY.md, Concurrency).

    .venv/bin/python -m reliability.catalog_commits [--appends 1500]   # about 2.5 minutes on 2 cores

Each process has a SparkSession of its own and appends one data file per commit through Iceberg's
API as fast as it can; both start together. Figures (printed, and written to
reliability/results/catalog_commits.json): commits each process saw succeed, commits in the
table's history, files in the table, commits lost.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from python_jobs.landing import io

PROJECT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results" / "catalog_commits.json"
TABLE = "lake.catalog_commits.appended"
APPENDER = """
import sys, time
from pathlib import Path
from python_jobs.landing import io
warehouse, name, appends, folder = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
spark = io.spark_session("commit_appender_" + name, warehouse)
jvm = spark._jvm
table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, "%s")
(folder / ("ready-" + name)).touch()
while not (folder / "go").exists():
    time.sleep(0.01)
committed = 0
for number in range(appends):
    data_file = (jvm.org.apache.iceberg.DataFiles.builder(table.spec()).withPath(f"{warehouse}/none/{name}-{number}.parquet")
                 .withFileSizeInBytes(1).withRecordCount(1).withFormat("parquet").build())
    table.newFastAppend().appendFile(data_file).commit()  # raises when it cannot commit
    committed += 1
print("committed", committed, flush=True)
""" % TABLE


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Appends from two processes at once to one embedded-catalog table.")
    parser.add_argument("--appends", type=int, default=1500, help="commits per process (default 1500)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="cdc_merge_catalog_commits_"))
    warehouse = work / "warehouse"
    spark = io.spark_session("catalog_commits", str(warehouse))
    spark.sql("create namespace if not exists lake.catalog_commits")
    # Enough retries that each append commits however often the other process wins.
    spark.sql(f"create table {TABLE} (id int) using iceberg tblproperties ('commit.retry.num-retries' = '1000', "
              "'commit.retry.min-wait-ms' = '1', 'commit.retry.max-wait-ms' = '20')")
    names = ("a", "b")
    started = time.monotonic()
    appenders = [subprocess.Popen([sys.executable, "-c", APPENDER, str(warehouse), name, str(args.appends), str(work)],
                                  cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for name in names]
    try:
        while not all((work / f"ready-{name}").exists() for name in names):
            if any(appender.poll() is not None for appender in appenders):
                raise SystemExit("an appender ended before it started: " + "".join(a.communicate()[1][-2000:] for a in appenders))
            time.sleep(0.1)
        (work / "go").touch()
        outputs = [appender.communicate() for appender in appenders]
    finally:
        for appender in appenders:
            appender.kill()
    seen = [int(out.split()[-1]) if appender.returncode == 0 and out.strip() else 0 for appender, (out, _) in zip(appenders, outputs)]
    history = spark.sql(f"select count(*) as commits from {TABLE}.history").first()["commits"]
    files = spark.sql(f"select count(*) as files from {TABLE}.files").first()["files"]
    result = {
        "command": " ".join([".venv/bin/python -m reliability.catalog_commits", *(sys.argv[1:] if argv is None else argv)]),
        "processes": len(names), "commits_seen_to_succeed": sum(seen), "commits_in_history": history,
        "files_in_table": files, "commits_lost": sum(seen) - history, "seconds": round(time.monotonic() - started),
        "appender_errors": [err[-500:] for appender, (_, err) in zip(appenders, outputs) if appender.returncode != 0],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print("catalog commits: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in result.items() if k != "command"))
    return 1 if result["commits_lost"] or result["appender_errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
