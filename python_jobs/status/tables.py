"""A StatusSnapshot from the pipeline's tables alone (cdc-status, for a pipeline whose service is not
running): the rows of cdc_merge_runs of the last hours and the newest cdc_merge_verify check of each
mirror, as macros/status.sql reads them."""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any, Mapping, Sequence

from python_jobs.status.model import LandingStatus, MirrorStatus, Sample, StatusSnapshot, VerifyStatus, utc_epoch
from python_jobs.status.registry import relation_name

# The snapshot the last cdc_status operation built in this process, for cdc-status to print.
LAST: list[StatusSnapshot] = []


def _number(value: Any) -> float:
    try:
        return float(value) if value is not None and str(value) != "" else 0.0
    except ValueError:
        return 0.0


def snapshot_from_tables(runs: Sequence[Mapping[str, Any]], checks: Sequence[Mapping[str, Any]],
                         models: Sequence[str] | None = None) -> StatusSnapshot:
    """models: the relations of the project's mirror models; the rows of other tables (a model renamed or
    removed leaves its table, runs and checks behind) are left out, which before showed as a mirror still
    'ok' with its last lag and check, as of its last run."""
    status = StatusSnapshot(taken_at=time.time(), service="cdc-status (from the tables)")
    if models is not None:
        names = {relation_name(model) for model in models}
        runs = [row for row in runs if relation_name(row["target_table"]) in names]
        checks = [check for check in checks if relation_name(check["mirror"]) in names]
    mirrors: dict[str, MirrorStatus] = {}
    by_invocation: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    landing = LandingStatus()
    # Each mirror's runs count the lines quarantined since its previous run, every mirror the same lines.
    quarantined: dict[str, int] = defaultdict(int)
    for row in sorted(runs, key=lambda row: str(row.get("finished_at"))):
        name = relation_name(row["target_table"])
        mirror = mirrors.setdefault(name, MirrorStatus(name))
        mirror.source_table = row.get("source_table") or mirror.source_table
        mirror.last_run_at = utc_epoch(row.get("finished_at"))
        mirror.last_run_seconds = _number(row.get("run_seconds"))
        mirror.last_run_success = True
        mirror.events_read += int(_number(row.get("events_read")))
        mirror.inserted += int(_number(row.get("rows_inserted")))
        mirror.updated += int(_number(row.get("rows_updated")))
        mirror.deleted += int(_number(row.get("rows_deleted")))
        mirror.skipped += int(_number(row.get("events_skipped")))
        if row.get("lag_seconds") not in (None, ""):
            mirror.lag_seconds = _number(row["lag_seconds"])
        mirror.consistency_group = row.get("consistency_group") or None
        if row.get("cut_lag_seconds") not in (None, ""):
            mirror.cut_lag_seconds = _number(row["cut_lag_seconds"])
        quarantined[name] += int(_number(row.get("lines_quarantined")))
        by_invocation[str(row.get("invocation_id"))].append(row)
    for rows in by_invocation.values():
        lags = [_number(row["lag_seconds"]) for row in rows if row.get("lag_seconds") not in (None, "")]
        status.history.append(Sample(max(utc_epoch(row.get("finished_at")) or 0 for row in rows), max(lags) if lags else None,
                                     sum(int(_number(row.get(name))) for row in rows
                                         for name in ("rows_inserted", "rows_updated", "rows_deleted")),
                                     max(_number(row.get("run_seconds")) for row in rows)))
    status.history.sort(key=lambda sample: sample.at)
    # A model without a runs row in the time: shown, not left out (a failed run writes no row, so a mirror
    # failing all along was missing from cdc-status, which said all the others were fine and exited 0).
    for name in names if models is not None else ():
        mirrors.setdefault(name, MirrorStatus(name, no_run_in_time=True))
    status.mirrors = [mirrors[name] for name in sorted(mirrors)]
    status.cycles = len(by_invocation)
    landing.quarantined = max(quarantined.values(), default=0)
    status.landing = landing
    newest: dict[str, Mapping[str, Any]] = {}
    for check in checks:
        name = relation_name(check["mirror"])
        if name not in newest or str(check.get("checked_at")) > str(newest[name].get("checked_at")):
            newest[name] = check
    status.verify = [VerifyStatus(name, str(check.get("checked_at")), str(check.get("clean")).lower() in ("true", "1"),
                                  int(_number(check.get("missing"))), int(_number(check.get("extra"))),
                                  int(_number(check.get("differing"))), check.get("source_position") or None)
                     for name, check in sorted(newest.items())]
    return status
