"""cdc-verify: each mirror of a dbt project compared with its live source table.

    cdc-verify                                   # every row of every mirror, against the var cdc_merge_source
    cdc-verify --select shop_orders --target databend
    cdc-verify --sample 1000                     # counts and 1,000 sampled rows a mirror: quicker
    cdc-verify --wait-seconds 120                # a mirror far behind its source: wait longer for it to catch up
    cdc-verify --state data/capture-state.json             # while changes flow: what the capture wrote must have landed
    cdc-verify --repair --state data/capture-state.json    # and read the differing key ranges again
    cdc-verify --postgres "host=db dbname=shop user=cdc"     # another source than the var's

It runs `dbt run-operation cdc_merge.cdc_verify` (macros/verify.sql) in this process: the key space
of each mirror in segments, the row count and checksum of each computed by the source database and
by the mirror's engine, segments that differ split down to ranges compared row by row
(python_jobs/verify/ranges.py), with the source held at one log position and the mirror read once
it has applied past it, the keys changed since left out (in_flight.py). Each check is a row of cdc_merge_verify beside the mirror. Exit
status 0 when every mirror equals its source, 1 when one differs (the report says where), 2 when it
cannot check. With --repair the differing ranges are asked of the capture (cdc-snapshot), which reads
them again online; check again after the next run has applied them.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from pathlib import Path
from typing import Sequence

from python_jobs.capture.snapshot_requests import await_request, outcome_line, write_request
from python_jobs.verify.check import REPORT_FILE, write_report


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="cdc-verify", description=__doc__.split("\n\n")[0])
    parser.add_argument("--project-dir", default=".", help="the dbt project (default: this folder)")
    parser.add_argument("--profiles-dir", help="where profiles.yml is (default: dbt's: the project, then ~/.dbt)")
    parser.add_argument("--target", help="the profile's target (default: the profile's)")
    parser.add_argument("--select", nargs="+", metavar="MODEL", help="mirror models to check (default: all)")
    parser.add_argument("--sample", type=int, help="compare the counts and this many sampled rows of each side instead "
                        "of every row")
    parser.add_argument("--segments", type=int, default=64, help="key ranges a mirror is first split into")
    parser.add_argument("--leaf-rows", type=int, default=2000, help="a differing range of at most this many rows is "
                        "compared row by row")
    parser.add_argument("--wait-seconds", type=float, default=60.0,
                        help="how long to wait for a mirror to apply past the source's position the check reads it "
                             "at (python_jobs/verify/in_flight.py) before comparing what it has")
    parser.add_argument("--repair", action="store_true", help="ask the capture to read the differing key ranges again")
    parser.add_argument("--state", type=Path, help="the capture's state file (its --state): needed by --repair; "
                        "with it a mirror counts as caught up only once what the capture has written has landed")
    parser.add_argument("--repair-wait-seconds", type=float, default=10.0, help="with --repair: how long to wait for "
                        "the capture to take or refuse the requests (each is reported: taken, refused, or waiting)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--postgres", metavar="DSN", help="the source database (default: var cdc_merge_source)")
    source.add_argument("--mysql", metavar="USER@HOST:PORT", help="the source server (password from MYSQL_PWD)")
    args = parser.parse_args(argv)
    if args.sample is not None and args.sample < 1:
        parser.error("--sample must be positive")
    if args.segments < 1 or args.leaf_rows < 1 or args.wait_seconds < 0:
        parser.error("--segments and --leaf-rows must be positive, --wait-seconds not negative")
    if args.repair and args.state is None:
        parser.error("--repair needs --state: the state file of the capture that reads the mirrors' tables")
    if args.state is not None and not args.state.is_file():
        parser.error(f"--state {args.state}: no such file; give the state file of the capture that reads the mirrors' tables")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    from dbt.cli.main import dbtRunner

    args = parse_args(argv)
    operation_args: dict = {"sample": args.sample, "segments": args.segments, "leaf_rows": args.leaf_rows,
                            "wait_seconds": args.wait_seconds, "fail_on_difference": False}
    if args.select:
        operation_args["select"] = args.select
    if args.state is not None:
        operation_args["capture_state"] = str(args.state.resolve())
    if args.postgres or args.mysql:
        operation_args["source"] = {"postgres": args.postgres} if args.postgres else {"mysql": args.mysql}
    command = ["run-operation", "cdc_merge.cdc_verify", "--args", json.dumps(operation_args), *project_options(args)]
    report = Path(args.project_dir, os.environ.get("DBT_TARGET_PATH", "target"), REPORT_FILE)
    report.unlink(missing_ok=True)
    result = dbtRunner().invoke(command)
    if not result.success:
        return 2  # something kept it from checking: dbt's log says what
    # The operation reports a mirror that differs without failing (fail_on_difference): its report says which.
    try:
        written = json.loads(report.read_text())
    except (OSError, ValueError):
        print(f"cdc-verify: the operation wrote no report at {report}", file=sys.stderr)
        return 2
    if not written.get("differing"):
        return 0
    print(f"cdc-verify: {written.get('summary') or 'a mirror differs from its source'}", file=sys.stderr)
    if args.repair:
        if not delete_repeated_keys(args, written.get("checks") or []):
            return 2
        asked = request_repairs(args.state, written.get("checks") or [], args.repair_wait_seconds)
        note_repairs_asked(report, written, asked)
    return 1


def project_options(args: argparse.Namespace) -> list[str]:
    options = ["--project-dir", args.project_dir]
    for option, value in (("--profiles-dir", args.profiles_dir), ("--target", args.target)):
        if value:
            options += [option, value]
    return options


def delete_repeated_keys(args: argparse.Namespace, checks: list) -> bool:
    """Before their keys are read again: the rows of keys a mirror holds more than once (written into it
    by hand), on which each of its runs fails, deleted with the mirror locked against its runs
    (macros/verify_repair.sql). False if that failed: then nothing is asked of the capture. A mirror
    behind its source too: no capture writes a key twice, so it is no change on its way, and the
    mirror's runs fail on it until it is gone (it would never catch up)."""
    from dbt.cli.main import dbtRunner

    repeated = {check["mirror"]: list(check["repeated"]) for check in checks if check.get("repeated")}
    if not repeated:
        return True
    command = ["run-operation", "cdc_merge.cdc_delete_repeated_keys", "--args", json.dumps({"mirrors": repeated}),
               *project_options(args)]
    if dbtRunner().invoke(command).success:
        return True
    print("cdc-verify: the rows of keys held more than once were not deleted (dbt's log says why); nothing was asked of "
          "the capture", file=sys.stderr)
    return False


def note_repairs_asked(report: Path, written: dict, asked: set[str]) -> None:
    """The time the re-reads of a check's ranges were asked, in the report beside the check (as UTC,
    written like its checked_at): the status page says the difference may be repaired since."""
    if not asked:
        return
    now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None).isoformat(sep=" ")
    for check in written.get("checks") or ():
        if check.get("source_table") in asked:
            check["repair_asked_at"] = now
    write_report(str(report), written)


def request_repairs(state: Path, checks: list, wait_seconds: float = 0.0) -> set[str]:
    """Each differing key range of each mirror, asked of the capture (cdc-snapshot's request): from the
    range's first bound (read again, though the range starts after it) through its last; a sampled
    check's differing keys, and the keys a mirror held more than once, each from and through itself. A mirror that differs with no range to read
    (its counts only), or that was behind its source (its differences may be in flight: only the keys it
    held more than once are read again), is said so, with what to do instead. Then, within wait_seconds in all, what the
    capture did with each request: taken, refused (and why), or not yet taken. Returns the source
    tables whose ranges were asked."""
    written, asked = [], set()
    for check in checks:
        behind = not check.get("clean", True) and check.get("behind")
        nothing_keyed = not (check.get("differing_ranges") or check.get("repeated"))
        if behind:
            held = " (but the keys it held more than once, read again below)" if check.get("repeated") else ""
            print(f"cdc-verify: {check['source_table']}: not read again{held}: its mirror had not applied past the "
                  f"source's position {check.get('source_position')} when the check ended, so what differs may be changes "
                  "on their way; run cdc-verify --repair again once it has caught up (a longer --wait-seconds waits for it)",
                  file=sys.stderr)
        elif not check.get("clean", True) and nothing_keyed and check.get("unkeyed"):
            print(f"cdc-verify: {check['source_table']}: nothing to read again: what differs is the mirror's "
                  f"{check['unkeyed']} rows without a _cdc_key, which no capture writes; delete them or rebuild the mirror, "
                  "as the report says", file=sys.stderr)
        elif not check.get("clean", True) and nothing_keyed:
            print(f"cdc-verify: {check['source_table']}: no differing key was found to read again (the counts differ): "
                  f"read the whole table again with cdc-snapshot --state {state} --table {check['source_table']}",
                  file=sys.stderr)
        # A key held more than once, its rows deleted (delete_repeated_keys): read again, whatever the ranges say.
        ranges = [*(() if behind else check.get("differing_ranges") or ()),
                  *((json.loads(key),) * 2 for key in check.get("repeated") or ())]
        for after, through in ranges:
            keys = f"keys {','.join(after) if after else 'start'} to {','.join(through) if through else 'end'}"
            # A table's mirror and history differing in the same keys: its range is read once.
            if (check["source_table"], keys) not in asked:
                asked.add((check["source_table"], keys))
                written.append((check["source_table"], keys, write_request(state, check["source_table"], after, through)))
    deadline = time.monotonic() + wait_seconds
    for table, keys, path in written:
        outcome = await_request(path, deadline - time.monotonic())
        print(f"cdc-verify: {outcome_line(table, keys, path, outcome, wait_seconds)}", file=sys.stderr)
    return {table for table, _, _ in written}


if __name__ == "__main__":
    sys.exit(main())
