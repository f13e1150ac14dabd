"""cdc-verify: each mirror of a dbt project compared with its live source table.

    cdc-verify                                   # every mirror, against the project's var cdc_merge_source
    cdc-verify --select shop_orders --sample 1000 --target databend
    cdc-verify --postgres "host=db dbname=shop user=cdc"     # another source than the var's

It runs `dbt run-operation cdc_merge.cdc_verify` (macros/verify.sql) in this process: the row
counts, and a random sample of rows from each side compared value by value. Exit status 0 when
every mirror equals its source, 1 when one differs (the report says where), 2 when it cannot check.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from python_jobs.verify.check import REPORT_FILE


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="cdc-verify", description=__doc__.split("\n\n")[0])
    parser.add_argument("--project-dir", default=".", help="the dbt project (default: this folder)")
    parser.add_argument("--profiles-dir", help="where profiles.yml is (default: dbt's: the project, then ~/.dbt)")
    parser.add_argument("--target", help="the profile's target (default: the profile's)")
    parser.add_argument("--select", nargs="+", metavar="MODEL", help="mirror models to check (default: all)")
    parser.add_argument("--sample", type=int, default=100, help="rows sampled from each side of each mirror")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--postgres", metavar="DSN", help="the source database (default: var cdc_merge_source)")
    source.add_argument("--mysql", metavar="USER@HOST:PORT", help="the source server (password from MYSQL_PWD)")
    args = parser.parse_args(argv)
    if args.sample < 1:
        parser.error("--sample must be positive")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    from dbt.cli.main import dbtRunner

    args = parse_args(argv)
    operation_args: dict = {"sample": args.sample}
    if args.select:
        operation_args["select"] = args.select
    if args.postgres or args.mysql:
        operation_args["source"] = {"postgres": args.postgres} if args.postgres else {"mysql": args.mysql}
    command = ["run-operation", "cdc_merge.cdc_verify", "--args", json.dumps(operation_args), "--project-dir", args.project_dir]
    for option, value in (("--profiles-dir", args.profiles_dir), ("--target", args.target)):
        if value:
            command += [option, value]
    report = Path(args.project_dir, "target", REPORT_FILE)
    report.unlink(missing_ok=True)
    result = dbtRunner().invoke(command)
    if result.success:
        return 0
    # A mirror that differs fails the operation after its report is written; anything else kept it from checking.
    try:
        return 1 if json.loads(report.read_text())["differing"] else 2
    except (OSError, ValueError, KeyError):
        return 2


if __name__ == "__main__":
    sys.exit(main())
