"""Crash injection: kill -9 the landing and the apply, in a `dbt run` process and in `cdc-run`,
at the named crash points (python_jobs/crash_points.py) and at random moments; after each kill
one plain `dbt run`, then every mirror against the oracle.

    .venv/bin/python -m reliability.crashes                  # 16 named + 40 random points (about 15 min on 2 cores)
    .venv/bin/python -m reliability.crashes --random 4       # a shorter run

Each point delivers one more wave of Debezium files first, so every kill interrupts real work.
Figures (printed, and written to reliability/results/crashes.json): points tried, processes
that the kill interrupted, rows lost / duplicated / wrong against the oracle after the rerun,
and runs that needed a person (the rerun failed or left a mirror wrong; the suite then rebuilds
the mirrors with --full-refresh, as a person would, and goes on).
"""

from __future__ import annotations

import argparse
import functools
import random
import signal
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from python_jobs.crash_points import PIPELINE_POINTS
from reliability.workload import LANDING_AND_MIRRORS, MAINTAIN, MIRRORS, Workload, to_json

RESULTS = Path(__file__).resolve().parent / "results" / "crashes.json"
DRIVERS = ("dbt", "cdc-run")
MIRRORS_ONLY = ["--select", *MIRRORS.values()]
NAMED_POINTS = len(PIPELINE_POINTS) * len(DRIVERS)


@dataclass
class Trial:
    """One point: the run that was killed, and the rerun that must heal it."""

    point: str
    driver: str
    kill_after_seconds: float | None
    interrupted: bool
    run_seconds: float
    heal_seconds: float
    heal_succeeded: bool
    rows_lost: int
    rows_duplicated: int
    rows_wrong: int
    needed_a_person: bool
    details: list[str] = field(default_factory=list)


def crash_args(point: str) -> list[str]:
    """The dbt command the crashed run runs: a full refresh of the mirrors for the point inside one."""
    if point in ("full-refresh-before-offset", "rebuild-before-swap", "rebuild-after-swap", "table-drop"):
        return ["run", "--full-refresh", *MIRRORS_ONLY]
    if point == "maintenance":
        return ["run", *LANDING_AND_MIRRORS, *MAINTAIN]
    return ["run", *LANDING_AND_MIRRORS]


def crash_and_heal(workload: Workload, point: str, driver: str, kill_after: float | None = None,
                   rerun_here: bool = False) -> Trial:
    """Deliver a wave; run with the crash point armed (or kill after kill_after seconds when point
    is 'random'); rerun with a plain `dbt run` (in this process when rerun_here: as cdc-run reruns,
    without a JVM to start); compare. point: a crash point or 'random'."""
    workload.deliver()
    named = point != "random"
    crashed = workload.run(driver, crash_args(point), crash_at=point if named else None, kill_after=kill_after)
    interrupted = crashed.returncode == -signal.SIGKILL if named else crashed.killed
    rerun = workload.run_here if rerun_here else functools.partial(workload.run, "dbt")
    heal = rerun(["run", *LANDING_AND_MIRRORS])
    comparisons = workload.compare()
    details = [line for comparison in comparisons.values() for line in comparison.details]
    if heal.returncode != 0:
        details.append("rerun failed: " + _last_error(heal.output))
    trial = Trial(
        point=point, driver=driver, kill_after_seconds=kill_after, interrupted=interrupted,
        run_seconds=round(crashed.seconds, 1), heal_seconds=round(heal.seconds, 1), heal_succeeded=heal.returncode == 0,
        rows_lost=sum(c.lost for c in comparisons.values()),
        rows_duplicated=sum(c.duplicated for c in comparisons.values()),
        rows_wrong=sum(c.wrong for c in comparisons.values()),
        needed_a_person=heal.returncode != 0 or not all(c.ok for c in comparisons.values()),
        details=details,
    )
    if trial.needed_a_person:
        # What a person would do, so the next points start from correct mirrors.
        rerun(["run", *LANDING_AND_MIRRORS])
        rerun(["run", "--full-refresh", *MIRRORS_ONLY])
    return trial


def _last_error(output: str) -> str:
    lines = [line for line in output.splitlines() if "Error" in line or "error" in line]
    return (lines[-1] if lines else output.strip().splitlines()[-1] if output.strip() else "no output")[:300]


def figures(trials: list[Trial], seconds: float, command: str, complete: bool = True) -> dict:
    named = [t for t in trials if t.point != "random"]
    return {
        "command": command,
        "complete": complete,
        "points_tried": len(trials),
        "named_points": len(named),
        "named_points_reached": sum(t.interrupted for t in named),
        "random_kills": len(trials) - len(named),
        "random_kills_that_interrupted_a_run": sum(t.interrupted for t in trials if t.point == "random"),
        "rows_lost": sum(t.rows_lost for t in trials),
        "rows_duplicated": sum(t.rows_duplicated for t in trials),
        "rows_wrong": sum(t.rows_wrong for t in trials),
        "runs_that_needed_a_person": sum(t.needed_a_person for t in trials),
        "reruns_that_failed": sum(not t.heal_succeeded for t in trials),
        "seconds": round(seconds),
        "trials": [asdict(t) for t in trials],
    }


def _write(path: Path, result: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(to_json(result) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Kill the landing and the apply at named and random points; rerun; compare with the oracle.")
    parser.add_argument("--random", type=int, default=40,
                        help=f"random kills (default 40; with the {NAMED_POINTS} named points, {NAMED_POINTS + 40} points)")
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--work-dir", type=Path, help="where the throwaway project and warehouse go (default: a temp folder)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    work_dir = args.work_dir or Path(tempfile.mkdtemp(prefix="cdc_merge_crashes_"))
    # A wave for the first run and one for every point: a point without new events would find nothing to interrupt.
    workload = Workload(work_dir / "suite", seed=args.seed, waves=1 + NAMED_POINTS + args.random + 1)
    started = time.monotonic()
    trials: list[Trial] = []
    schedule: list[tuple] = []
    command = " ".join([".venv/bin/python -m reliability.crashes", *(sys.argv[1:] if argv is None else argv)])
    try:
        print(f"crashes: work folder {work_dir}; a first run without a kill sets the random kills' range", flush=True)
        workload.deliver()
        first = workload.run("dbt", ["run", *LANDING_AND_MIRRORS])
        if first.returncode != 0:
            print(first.output[-3000:])
            raise SystemExit("crashes: the first run failed; see its output above")
        baseline = first.seconds
        # Named and random points interleaved, so a run cut short has both kinds.
        named = [(point, driver, None) for point in PIPELINE_POINTS for driver in DRIVERS]
        randoms = [("random", rng.choice(DRIVERS), round(rng.uniform(1.0, 0.6 * baseline), 1)) for _ in range(args.random)]
        every = max(1, len(randoms) // len(named))
        for point in named:
            schedule += [point, *randoms[:every]]
            randoms = randoms[every:]
        schedule += randoms
        for number, (point, driver, kill_after) in enumerate(schedule, start=1):
            trial = crash_and_heal(workload, point, driver, kill_after, rerun_here=True)
            trials.append(trial)
            when = f"after {kill_after:.1f} s" if kill_after is not None else "at the point"
            print(
                f"[{number}/{len(schedule)}] {point:<27} {driver:<7} killed {when}: "
                f"{'interrupted' if trial.interrupted else 'had ended'}; rerun {'ok' if trial.heal_succeeded else 'FAILED'}; "
                f"lost {trial.rows_lost}, duplicated {trial.rows_duplicated}, wrong {trial.rows_wrong}"
                + (f"; NEEDED A PERSON: {'; '.join(trial.details)}" if trial.needed_a_person else ""),
                flush=True,
            )
            _write(args.out, figures(trials, time.monotonic() - started, command, complete=False))
    finally:
        workload.close()
    result = figures(trials, time.monotonic() - started, command, complete=len(trials) == len(schedule))
    _write(args.out, result)
    summary = {k: v for k, v in result.items() if k != "trials"}
    print("crashes: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in summary.items() if k not in ("command", "complete")))
    print(f"crashes: figures in {args.out}")
    bad = result["rows_lost"] + result["rows_duplicated"] + result["rows_wrong"] + result["runs_that_needed_a_person"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
