"""cdc-status: the pipeline at a glance in a terminal, from its tables alone (for a pipeline whose
service is not running, e.g. a scheduled `dbt run`), and the captures' status files.

    cdc-status                                          # the last hour of every mirror
    cdc-status --hours 24 --target databend
    cdc-status --capture-state data/capture-state.json  # and that capture's last status

It runs `dbt run-operation cdc_merge.cdc_status` (macros/status.sql) in this process. Exit status 0
when every mirror and history of the project had a successful run in the time and its newest check
(cdc-verify) found no difference, 1 otherwise, 2 when it cannot read the tables. A running cdc-run shows the same, live, at its
--status-port (docs/operating.md, "What to watch").
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from python_jobs.status import tables
from python_jobs.status.status_files import read_capture_status
from python_jobs.status.text import render_text


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="cdc-status", description=__doc__.split("\n\n")[0])
    parser.add_argument("--project-dir", default=".", help="the dbt project (default: this folder)")
    parser.add_argument("--profiles-dir", help="where profiles.yml is (default: dbt's: the project, then ~/.dbt)")
    parser.add_argument("--target", help="the profile's target (default: the profile's)")
    parser.add_argument("--hours", type=float, default=1.0, help="how far back the runs are read (default 1)")
    parser.add_argument("--capture-state", action="append", default=[], type=Path, metavar="STATE",
                        help="a capture's --state file: its status file beside it is shown too (repeatable)")
    args = parser.parse_args(argv)
    if args.hours <= 0:
        parser.error("--hours must be positive")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    from dbt.cli.main import dbtRunner

    args = parse_args(argv)
    command = ["--quiet", "run-operation", "cdc_merge.cdc_status", "--args", json.dumps({"hours": args.hours}),
               "--project-dir", args.project_dir]
    for option, value in (("--profiles-dir", args.profiles_dir), ("--target", args.target)):
        if value:
            command += [option, value]
    tables.LAST.clear()
    result = dbtRunner().invoke(command)
    if not result.success or not tables.LAST:
        print(f"cdc-status: could not read the tables: {result.exception or 'see dbt output above'}", file=sys.stderr)
        return 2
    status = tables.LAST[0]
    status.captures = [read_capture_status(str(state), Path(args.project_dir, state)) for state in args.capture_state]
    print("\n".join(render_text(status, args.hours)))
    stale = (not status.mirrors or any(not check.clean for check in status.verify)
             or any(mirror.no_run_in_time for mirror in status.mirrors))
    return 1 if stale or any(capture.warnings for capture in status.captures) else 0


if __name__ == "__main__":
    sys.exit(main())
