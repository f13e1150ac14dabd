"""Run dbt again and again in one process, so every run after the first finds a warm SparkSession.

    cdc-run --every 60                                  # dbt run every minute, until stopped
    cdc-run --every 60 --runs 10 -- run --select raw_events+
    cdc-run --every 300 --keep-going -- run --project-dir . --profiles-dir profiles
    cdc-run --every 10 --capture 'cdc-capture-postgres --dsn "host=db dbname=shop" --tables shop.orders \
        --out data/inbox --state data/capture.json' -- build     # capture, landing and apply as one service
    cdc-run --every 10 --status-port 9108 ...            # and its status page at http://127.0.0.1:9108/, metrics at /metrics

Everything after `--` goes to dbt as it is (default: `run`). A new `dbt run` process starts a JVM
and a SparkSession and compiles Spark's code again: 16.5 s for an idle project of 10 mirrors, against
3.8-4.7 s for each run here after the first (BENCHMARKS.md, "Applied since (9)"). The embedded
SparkSession (profile method `session`) lives as long as this process.

Runs start every N seconds, counted from one start to the next; a run that takes longer than N
seconds is followed by the next one at once, and the one after that waits N seconds from there
(no missed slots made up). SIGTERM or SIGINT (Ctrl-C) stops the loop
after the run in progress, never inside one. A failed run stops the loop with exit status 1,
unless --keep-going: then the next run retries it (replaying a batch changes nothing,
docs/ordering.md) and the exit status is 1 at the end.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from python_jobs import stop_signals
from python_jobs.apply import key_index
from python_jobs.scheduler.captures import Captures, CaptureStartError
from python_jobs.scheduler.dbt_artifacts import JsonArtifacts
from python_jobs.status import service as status_service
from python_jobs.status.model import RedactingStream, redact
from python_jobs.status.registry import REGISTRY

log = logging.getLogger("cdc_merge")


@dataclass
class RunOutcome:
    """One dbt invocation: whether it succeeded, how long it took, its nodes' statuses."""

    success: bool
    seconds: float
    statuses: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    # (relation, message, source table) of each model that failed (the status page's failing mirrors)
    failed_nodes: list[tuple[str, str, str]] = field(default_factory=list)

    def line(self) -> str:
        nodes = ", ".join(f"{count} {status}" for status, count in sorted(self.statuses.items())) or "no nodes"
        return redact(f"{'ok' if self.success else 'FAILED'} in {self.seconds:.1f} s ({nodes})" + (f": {self.error}" if self.error else ""))


def invoke_dbt(args: Sequence[str], artifacts: JsonArtifacts | None = None) -> RunOutcome:
    """One dbt command in this process (so in this process's SparkSession); with artifacts (the
    process's JsonArtifacts), dbt's JSON artifacts written only where they change."""
    from dbt.cli.main import dbtRunner

    from python_jobs import run_locks

    started = time.monotonic()
    operation_errors: list[str] = []
    callbacks = [operation_errors_into(operation_errors), *([artifacts.callback] if artifacts else [])]
    try:
        result = dbtRunner(callbacks=callbacks).invoke(artifacts.args_for(args) if artifacts else list(args))
        if artifacts:
            artifacts.after(result.result)
    finally:
        # A mirror whose run failed half way keeps its lock until here, not until this process ends.
        run_locks.release_all()
    seconds = time.monotonic() - started
    statuses: dict[str, int] = {}
    failures, failed_nodes = [], []
    for node in getattr(result.result, "results", None) or []:
        statuses[str(node.status)] = statuses.get(str(node.status), 0) + 1
        if str(node.status) in ("error", "fail"):
            # A run-operation's result has no message: dbt only logs what the macro raised.
            message = " ".join(str(node.message if node.message is not None else "; ".join(operation_errors)).split())
            name, resource_type, relation = result_node(node)
            failures.append(f"{name}: {message}")
            if resource_type == "model":  # a failing test is no failing mirror
                config = getattr(getattr(node, "node", None), "config", None)
                source_table = str(config.get("source_table") or "") if config is not None else ""
                failed_nodes.append((relation or name, message, source_table))
    error = None
    if not result.success:
        error = str(result.exception) if result.exception is not None else "; ".join(failures) or "see dbt's log above"
    return RunOutcome(result.success, seconds, statuses, error, failed_nodes)


def operation_errors_into(errors: list[str]) -> Callable[[Any], None]:
    """A dbt event callback that appends what a run-operation's macro raised to errors."""
    def collect(event: Any) -> None:
        if event.info.name in ("RunningOperationCaughtError", "RunningOperationUncaughtError"):
            errors.append(str(event.data.exc))
    return collect


def result_node(result: Any) -> tuple[str, Optional[str], Optional[str]]:
    """(name, resource type, relation) of one dbt result: a run's carries its node, a
    run-operation's (RunResultOutput) only the unique_id of its macro ("macro.project.name")."""
    node = getattr(result, "node", None)
    if node is not None:
        return node.name, getattr(node, "resource_type", None), getattr(node, "relation_name", None)
    unique_id = str(getattr(result, "unique_id", "") or "dbt")
    return unique_id.rsplit(".", 1)[-1], unique_id.split(".", 1)[0], getattr(result, "relation_name", None)


@dataclass
class LoopSummary:
    runs: list[RunOutcome] = field(default_factory=list)

    @property
    def failed(self) -> int:
        return sum(not run.success for run in self.runs)

    def line(self) -> str:
        if not self.runs:
            return "no runs"
        seconds = [run.seconds for run in self.runs]
        later = seconds[1:]
        return (
            f"{len(self.runs)} runs, {self.failed} failed; first {seconds[0]:.1f} s"
            + (f", later ones {min(later):.1f}-{max(later):.1f} s (median {sorted(later)[len(later) // 2]:.1f} s)" if later else "")
        )


def run_every(
    dbt_args: Sequence[str],
    every: float,
    runs: int = 0,
    keep_going: bool = False,
    stop: threading.Event | None = None,
    run: Callable[[Sequence[str]], RunOutcome] = invoke_dbt,
    before_each: Callable[[], None] = lambda: None,
) -> LoopSummary:
    """Run dbt_args every `every` seconds until `runs` runs (0: no limit), `stop` is set, or a run
    fails without keep_going; before_each just before each run (the captures' files written)."""
    stop = stop or threading.Event()
    summary = LoopSummary()
    while not stop.is_set():
        number = len(summary.runs) + 1
        # Counted from this run's start: a run that overruns is followed at once, and the one after
        # waits its whole interval (no slots of a fixed grid made up, none cut short).
        started = time.monotonic()
        next_start = started + every
        before_each()
        outcome = run(dbt_args)
        summary.runs.append(outcome)
        REGISTRY.observe_cycle(outcome.success, outcome.seconds, outcome.failed_nodes, outcome.error)
        log.info("run %d: %s", number, outcome.line())
        if not outcome.success and not keep_going:
            break
        if runs and number >= runs:
            break
        if outcome.seconds > every > 0:
            log.info("run %d took %.1f s, longer than --every %g s: the next run starts now", number, outcome.seconds, every)
        stop.wait(max(next_start - time.monotonic(), 0))
    return summary


def arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Run dbt (default: dbt run) every N seconds in one process, with one warm SparkSession.",
        epilog="Arguments after -- go to dbt, e.g. cdc-run --every 60 -- run --select raw_events+",
    )
    parser.add_argument("--every", type=float, required=True, help="seconds from the start of one run to the start of the next")
    parser.add_argument("--runs", type=int, default=0, help="stop after this many runs (default 0: until stopped)")
    parser.add_argument("--keep-going", action="store_true", help="after a failed run, go on (the exit status is still 1)")
    parser.add_argument("--capture", action="append", default=[], metavar="COMMAND",
                        help="a capture command to keep running beside the runs, streaming (--follow is added), e.g. "
                        "--capture 'cdc-capture-postgres --dsn \"host=db\" --tables shop.orders --out data/inbox "
                        "--state data/capture.json'; repeat it for several sources")
    parser.add_argument("--status-port", type=int, metavar="PORT",
                        help="serve the status page at / and Prometheus metrics at /metrics on this port "
                             "(docs/operating.md, What to watch); 0 picks a free one")
    parser.add_argument("--status-host", default="127.0.0.1",
                        help="the address the status endpoint listens on (default 127.0.0.1: this machine only)")
    parser.add_argument("dbt_args", nargs="*", help="the dbt command and its options (default: run)")
    args = parser.parse_args(argv)
    if args.every < 0:
        parser.error(f"--every must be 0 or more seconds, got {args.every:g}")
    if args.runs < 0:
        parser.error(f"--runs must be 0 (no limit) or more, got {args.runs}")
    if args.status_port is not None and not 0 <= args.status_port <= 65535:
        parser.error(f"--status-port must be a port number (0-65535), got {args.status_port}")
    if any(not capture.strip() for capture in args.capture):
        parser.error("--capture needs the capture command, e.g. --capture 'cdc-capture-postgres --dsn ... --out data/inbox'")
    args.dbt_args = args.dbt_args or ["run"]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(argv)
    # The service's output is its log: no password or token in it, whoever writes the line (docs/observability.md).
    sys.stdout, sys.stderr = RedactingStream(sys.stdout), RedactingStream(sys.stderr)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    # py4j logs every call between Python and the JVM at INFO: a long-running service's log would be little else.
    logging.getLogger("py4j").setLevel(logging.WARNING)
    stop = threading.Event()
    # Said and set off the signal handler (stop_signals.py): a second signal, or one inside stop.wait(), deadlocked it.
    stop_signals.set_on_signals(
        stop, lambda signum: log.info("%s: stopping after the run in progress", signal.Signals(signum).name))
    # Batch after batch into the same mirrors: each mirror's keys are kept between runs (key_index.py).
    try:
        key_index.keep_in_service(os.environ)
    except ValueError as error:
        print(f"cdc-run: {error}", file=sys.stderr)
        return 2
    # A capture that ends stops the loop too (after the run in progress).
    captures = Captures(args.capture, ended=stop)
    try:
        captures.start()
    except CaptureStartError as error:
        print(f"cdc-run: {redact(str(error))}", file=sys.stderr)
        return 2
    server = None
    try:
        if args.status_port is not None:
            try:
                server = status_service.start(args.status_host, args.status_port, captures.running, args.dbt_args)
            except OSError as error:
                print(f"cdc-run: cannot serve the status endpoint on {args.status_host}:{args.status_port}: "
                      f"{error.strerror or error}; choose another --status-port", file=sys.stderr)
                return 2
        artifacts = JsonArtifacts()
        summary = run_every(args.dbt_args, args.every, args.runs, args.keep_going, stop,
                            run=lambda dbt_args: invoke_dbt(dbt_args, artifacts), before_each=captures.roll)
    finally:
        if server is not None:
            server.stop()
        captures.stop()
    failed_captures = captures.failed()
    log.info("cdc-run: %s%s", summary.line(),
             "".join(f"; capture {capture.name} failed: {capture.tail[-1] if capture.tail else 'no output'}"
                     for capture in failed_captures))
    return 1 if summary.failed or failed_captures else 0


if __name__ == "__main__":
    sys.exit(main())
