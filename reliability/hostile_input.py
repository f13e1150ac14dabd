"""Hostile input through the real landing: generated bad lines of every format, mixed with good
ones, in files that are empty, end without a newline, hold a 50 MB line, or are deleted or
rewritten between the landing listing them and reading them.

    .venv/bin/python -m reliability.hostile_input                  # 10,000+ bad lines per format
    .venv/bin/python -m reliability.hostile_input --bad-per-kind 50 --huge-mb 1   # a quick look

Prints lines tried, crashes and lines lost, and writes reliability/results/hostile_input.json.
A crash is a landing run that raised, or a line quarantined as a parser bug; a line is lost when
a good line is not in the raw table exactly once, or a bad line is neither quarantined with a
reason nor landed. Good lines quarantined and bad lines landed are counted apart (both must be 0).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from reliability import hostile_lines
from reliability.hostile_lines import EVENT, QUARANTINE, Case

PROJECT_DIR = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results" / "hostile_input.json"
LINES_PER_FILE = 2_000
FILES_PER_BATCH = 8
log = logging.getLogger("cdc_merge.reliability")


@dataclass
class InputFolder:
    """The files written for one landing run, and what each line of each file must become."""

    path: Path
    expected: dict[str, list[Case]] = field(default_factory=dict)  # file name -> its lines' cases
    # File name -> the reason its line-0 quarantine note must give (deleted or rewritten).
    notes: dict[str, str] = field(default_factory=dict)
    no_final_newline: int = 0

    def write(self, name: str, cases: list[Case], final_newline: bool = True) -> Path:
        data = b"\n".join(case.data for case in cases) + (b"\n" if final_newline and cases else b"")
        target = self.path / name
        target.write_bytes(data)
        self.expected[name] = list(cases)
        self.no_final_newline += not final_newline and bool(cases)
        return target


def write_inputs(folder: InputFolder, bad_per_kind: int, good_per_format: int, huge_mb: int, seed: int) -> dict:
    """Every format's cases in files of LINES_PER_FILE lines (some without a final newline),
    an empty file, a file with a huge good line and a huge cut one, and the files that
    change_files_while_landing deletes and rewrites. Returns what to do to the latter."""
    for number, fmt in enumerate(hostile_lines.FORMATS):
        cases = hostile_lines.cases(fmt, bad_per_kind, good_per_format, seed)
        starts = range(0, len(cases), LINES_PER_FILE)
        for part, start in enumerate(starts):
            # The last file of every other format ends without a newline.
            final_newline = not (number % 2 and part == len(starts) - 1)
            folder.write(f"{fmt}-{part:03d}.json", cases[start : start + LINES_PER_FILE], final_newline)
    folder.write("empty.json", [])
    if huge_mb:
        size = huge_mb * 1024 * 1024
        folder.write("huge-line.json", [hostile_lines.huge_line("debezium", size, good=True),
                                        hostile_lines.huge_line("canal", size, good=False)])
    # Deleted after listing: its lines are gone, and the quarantine says so.
    deleted = hostile_lines.cases("debezium", 1, 10, seed + 1)
    folder.write("deleted-while-landing.json", deleted)
    # Rewritten after listing: what it holds when read lands, and the quarantine says it changed.
    rewritten_before = hostile_lines.cases("maxwell", 1, 10, seed + 2)
    rewritten_after = hostile_lines.cases("ogg", 2, 20, seed + 3)
    folder.write("rewritten-while-landing.json", rewritten_before)
    return {"deleted-while-landing.json": None, "rewritten-while-landing.json": rewritten_after}


def change_files_while_landing(folder: InputFolder, changes: dict):
    """A land_batch for io.run_available_batches that, once the batch holding the files in changes
    is listed and before it is read, deletes or rewrites them (None: delete), then lands the batch."""

    def land_batch(batch, tag, place, may_be_retry, land_files):
        listed = {name.rsplit("/", 1)[-1] for name in place.file_ranks}
        for name, new_cases in changes.items():
            if name in listed and name not in folder.notes:
                target = folder.path / name
                if new_cases is None:
                    target.unlink()
                    folder.expected[name] = []
                    folder.notes[name] = "deleted after the landing listed it"
                else:
                    # A later modification time than the listing saw, as a writer rewriting it would leave.
                    folder.write(name, new_cases)
                    modified = os.stat(target).st_mtime
                    os.utime(target, (modified + 2, modified + 2))
                    folder.notes[name] = "modified after the landing listed it"
        land_files(batch, tag, place, may_be_retry)

    return land_batch


def land(config, spark, land_batch) -> "land.LandingSummary":
    """land.run, with land_batch between the listing and the landing of each batch."""
    from python_jobs.landing import io, land as landing

    sink = io.sink_for(config, spark)
    sink.require_tables(config.raw_table, config.quarantine_table)
    jvm_parser = io.register_jvm_parser(spark, config.key_columns, config.format)
    summary = landing.LandingSummary()
    files = io.read_new_files(spark, config.input_dir, config.max_files_per_batch, config.file_glob)

    def land_files(batch, tag, place, may_be_retry):
        landing.land_files(batch, config, sink, tag, place, summary, jvm_parser, None, may_be_retry)

    io.run_available_batches(
        files, config.checkpoint_dir, lambda batch, tag, place, may_be_retry: land_batch(batch, tag, place, may_be_retry, land_files)
    )
    return summary


def check(folder: InputFolder, spark, raw_table: str, quarantine_table: str) -> dict:
    """Every line against what it must become; the figures. Only rows of this run's input
    folder count (the tables may hold earlier runs' rows)."""
    from python_jobs.formats.records import INTERNAL_ERROR

    prefix = f"file:{folder.path}/"

    def name_of(landed_file: str) -> str:
        return landed_file.rsplit("/", 1)[-1]

    landed = Counter()
    for row in spark.sql(f"select landed_file, landed_line, count(*) as n from {raw_table} "
                         f"where startswith(landed_file, '{prefix}') group by 1, 2").collect():
        landed[(name_of(row.landed_file), row.landed_line)] = row.n
    reasons: dict[tuple[str, int], list[str]] = defaultdict(list)
    for row in spark.sql(f"select landed_file, landed_line, reason from {quarantine_table} "
                         f"where startswith(landed_file, '{prefix}')").collect():
        reasons[(name_of(row.landed_file), row.landed_line)].append(row.reason or "")

    figures = Counter()
    per_format: dict[str, Counter] = defaultdict(Counter)
    examples: dict[str, str] = {}
    for name, cases in folder.expected.items():
        for number, case in enumerate(cases, start=1):
            where = (name, number)
            tally = per_format[case.format]
            tally["lines"] += 1
            tally[case.kind] += 1
            figures["lines tried"] += 1
            figures["bad lines"] += case.expected == QUARANTINE
            internal = [reason for reason in reasons[where] if reason.startswith(INTERNAL_ERROR)]
            if internal:
                figures["crashes"] += 1
                examples.setdefault(f"crash {case.format} {case.kind}", internal[0])
            if case.expected == EVENT:
                if landed[where] != 1:
                    figures["lines lost"] += 1
                    tally["lost"] += 1
                    examples.setdefault(f"lost {case.format} {case.kind}", f"{where}: {case.data[:300]!r} {reasons[where]}")
                if reasons[where]:
                    figures["good lines quarantined"] += 1
            else:
                if landed[where]:
                    figures["bad lines landed"] += 1
                    tally["bad landed"] += 1
                    examples.setdefault(f"landed {case.format} {case.kind}", f"{where}: {case.data[:300]!r}")
                elif not any(reasons[where]):
                    figures["lines lost"] += 1
                    tally["lost"] += 1
                    examples.setdefault(f"lost {case.format} {case.kind}", f"{where}: {case.data[:300]!r}")
    for name, what in folder.notes.items():
        notes = reasons[(name, 0)]
        figures["changed files"] += 1
        if not any(what in reason for reason in notes):
            figures["changed files without a note"] += 1
            examples.setdefault(f"no note {name}", f"{notes}")
    known = {(name, number) for name, cases in folder.expected.items() for number in range(1, len(cases) + 1)}
    known |= {(name, 0) for name in folder.notes}
    # Blank lines (a final newline's empty line) land nowhere; anything else unexpected is counted.
    figures["rows for no line"] = sum(1 for where in list(landed) + list(reasons) if where not in known)
    return {
        "figures": dict(figures),
        "per_format": {fmt: dict(tally) for fmt, tally in sorted(per_format.items())},
        "examples": examples,
    }


def create_raw_tables(work: Path, raw_schema: str) -> None:
    """The raw and quarantine tables, from the project's own DDL macro (in this Spark session)."""
    from dbt.cli.main import dbtRunner

    os.environ["CDC_MERGE_RAW_SCHEMA"] = raw_schema
    result = dbtRunner().invoke([
        "run-operation", "create_raw_tables", "--project-dir", str(PROJECT_DIR), "--profiles-dir",
        str(PROJECT_DIR / "profiles"), "--target-path", str(work / "target"), "--log-path", str(work / "logs"), "--quiet",
    ])
    if not result.success:
        raise RuntimeError(f"dbt run-operation create_raw_tables failed: {result.exception}")


def run(work: Path, bad_per_kind: int, good_per_format: int, huge_mb: int, seed: int, spark=None,
        raw_schema: str = "hostile_raw") -> dict:
    """Write the inputs under work, land them, check every line; the result document."""
    from python_jobs.landing import io
    from python_jobs.landing.config import parse_config

    inbox = work / "inbox"
    inbox.mkdir(parents=True)
    folder = InputFolder(inbox)
    started = time.monotonic()
    changes = write_inputs(folder, bad_per_kind, good_per_format, huge_mb, seed)
    written = time.monotonic()
    if spark is None:  # dbt's profile and the landing share the warehouse: this run's own
        os.environ["CDC_MERGE_WAREHOUSE"] = str(work / "warehouse")
        spark = io.spark_session("cdc_merge_hostile_input", str(work / "warehouse"))
    create_raw_tables(work, raw_schema)
    config = parse_config({
        "input": str(inbox), "checkpoint": str(work / "checkpoint"), "raw_table": f"{raw_schema}.raw_events",
        "quarantine_table": f"{raw_schema}.quarantine", "tables": {table: {"key": key} for table, key in hostile_lines.KEYS.items()},
        # Several batches: a huge line's batch holds few other files (the driver has 2 GB here).
        "max_files_per_batch": FILES_PER_BATCH,
    }, work / "landing.yml")
    crashed = None
    try:
        summary = land(config, spark, change_files_while_landing(folder, changes))
        summary_line = summary.line()
    except Exception as error:  # noqa: BLE001 - a landing that raises is what this counts
        crashed, summary_line = f"{type(error).__name__}: {str(error)[:2000]}", None
    landed = time.monotonic()
    result = check(folder, spark, config.raw_table, config.quarantine_table)
    result["figures"]["crashes"] = result["figures"].get("crashes", 0) + (crashed is not None)
    for name in ("crashes", "lines lost", "good lines quarantined", "bad lines landed", "changed files without a note"):
        result["figures"].setdefault(name, 0)
    result.update({
        "command": "python -m reliability.hostile_input " + " ".join(
            f"--{name} {value}" for name, value in (("bad-per-kind", bad_per_kind), ("good-per-format", good_per_format),
                                                    ("huge-mb", huge_mb), ("seed", seed))),
        "landing_error": crashed,
        "landing_summary": summary_line,
        "files": len(folder.expected),
        "files_without_final_newline": folder.no_final_newline,
        "bad_kinds": list(hostile_lines.BAD_KINDS),
        "seconds": {"write": round(written - started, 1), "land": round(landed - written, 1),
                    "check": round(time.monotonic() - landed, 1)},
        "jvm_fast_path": bool(io.register_jvm_parser(spark, config.key_columns, config.format)),
    })
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bad-per-kind", type=int, default=1_200,
                        help="bad lines of each kind per format (9 kinds, Canal 8: 1,200 gives 9,600-10,800)")
    parser.add_argument("--good-per-format", type=int, default=5_000, help="good lines mixed in per format")
    parser.add_argument("--huge-mb", type=int, default=50, help="size of the huge lines (0: none)")
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    work = Path(tempfile.mkdtemp(prefix="hostile-input-"))
    try:
        result = run(work, args.bad_per_kind, args.good_per_format, args.huge_mb, args.seed)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    figures = result["figures"]
    print(f"lines tried {figures['lines tried']:,} ({figures['bad lines']:,} bad) in {result['files']} files; "
          f"crashes {figures['crashes']}; lines lost {figures['lines lost']}; good lines quarantined "
          f"{figures['good lines quarantined']}; bad lines landed {figures['bad lines landed']}; changed files "
          f"without a note {figures['changed files without a note']} ({result['seconds']['land']} s landing); "
          f"written to {args.out}")
    failed = any(figures[name] for name in ("crashes", "lines lost", "good lines quarantined", "bad lines landed",
                                             "changed files without a note"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
