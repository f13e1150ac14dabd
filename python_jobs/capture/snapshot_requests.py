"""cdc-snapshot: read a table, or a key range of it, again, while its capture runs
(docs/online_snapshots.md; docs/operating.md, "Re-read a table or a key range").

    cdc-snapshot --state data/capture-state.json --table shop.orders
    cdc-snapshot --state data/capture-state.json --table shop.order_lines --from 10,1 --to 20,6

The request is a file in a folder beside the capture's state file (<state>.requests/), which the
capture takes at its next file, running or when it next starts: it reads the rows in pages while its
changes stream, and each page's key range repairs the mirror (missing and stale rows come back, rows
the source no longer has go). A key is its columns' values in key order, comma-separated, as the
source writes them. A request the capture cannot serve (a table it does not read, a bound that is not
a value of the key's type) is moved to <state>.requests/refused/ with the reason; the command waits
--wait-seconds for the capture to take or refuse it and says which (exit status 1: refused).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from python_jobs.capture.output import read_state, write_state


# A running capture looks for requests this often: a folder listing at every change cost a quarter of a
# busy stream's time (BENCHMARKS.md, "Capture").
REQUESTS_EVERY_SECONDS = 1.0


# Where a request the capture could not serve goes, with its reason (refuse).
REFUSED = "refused"
# Who waits for a request (cdc-snapshot, cdc-verify --repair) looks this often.
WAIT_POLL_SECONDS = 0.2


def requests_folder(state: Path) -> Path:
    return state.with_name(state.name + ".requests")


def write_request(state: Path, table: str, start: list[str] | None, through: list[str] | None) -> Path:
    """A request file, written whole (the capture never reads half of one)."""
    folder = requests_folder(state)
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / f"{uuid.uuid4().hex}.json"
    partial = folder / f".{final.name}.partial"
    partial.write_text(json.dumps({"table": table, "from": start, "to": through}))
    os.replace(partial, final)
    return final


@contextlib.contextmanager
def taken_requests(state: Path, pages: Any) -> Iterator[list[dict[str, Any]]]:
    """The requests waiting beside a state file, oldest first, for the caller to add to pages
    (snapshot_pages.Pages); then the state file records pages' snapshots, and only then are the
    request files removed: a capture that dies before takes them again when it starts."""
    folder = requests_folder(state)
    paths = sorted(folder.glob("*.json"), key=lambda path: path.stat().st_mtime) if folder.is_dir() else []
    taken = []
    for path in paths:
        try:
            taken.append({**json.loads(path.read_text()), "file": path.name})
        except (OSError, ValueError, TypeError):
            continue  # not a request this command wrote
    yield taken
    if paths:
        write_state(state, {**read_state(state), "snapshots": pages.state()})
        for path in paths:
            path.unlink(missing_ok=True)


def refuse(state: Path, request: Mapping[str, Any], reason: str, log: Any) -> None:
    """A taken request the capture leaves out: logged, and kept under refused/ with why, for whoever
    asked (await_request) to say so: a log line alone reaches no one who waits for the range to be read."""
    log.warning("cdc-snapshot of %s: %s; left out", request.get("table"), reason)
    name = request.get("file")
    if not name:
        return
    folder = requests_folder(state) / REFUSED
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f".{name}.partial"
    kept = {key: value for key, value in request.items() if key != "file"}
    partial.write_text(json.dumps({**kept, "refused": reason}))
    os.replace(partial, folder / name)


def refused_warnings(state: Path) -> list[str]:
    """Each request the capture refused and no one has removed, as a capture warning (the status page,
    cdc_capture_warnings, cdc-status): its range stays unrepaired until someone acts."""
    folder = requests_folder(state) / REFUSED
    warnings = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        try:
            request = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        start, through = request.get("from"), request.get("to")
        keys = f"keys {','.join(start) if start else 'start'} to {','.join(through) if through else 'end'}"
        warnings.append(f"cdc-snapshot of {request.get('table')} {keys} was refused: {request.get('refused')}; that "
                        f"range is not read again: ask again as the reason says, then remove {path}")
    return warnings


def await_request(path: Path, seconds: float) -> tuple[str, str | None]:
    """What became of a request written by write_request, within seconds: ("taken", None) once the
    capture has recorded its snapshot, ("refused", reason) once it left it out, ("waiting", None)
    while its file is still there (no capture running, or one busy with a file)."""
    refused = path.parent / REFUSED / path.name
    deadline = time.monotonic() + max(0.0, seconds)
    while True:
        if refused.exists():
            try:
                return "refused", str(json.loads(refused.read_text()).get("refused"))
            except (OSError, ValueError):
                return "refused", "the capture left it out (its reason could not be read)"
        if not path.exists():
            # Taken: the capture moves a refused request under refused/ before it removes the request.
            return ("refused", None) if refused.exists() else ("taken", None)
        if time.monotonic() >= deadline:
            return "waiting", None
        time.sleep(WAIT_POLL_SECONDS)


def outcome_line(table: str, keys: str, path: Path, outcome: tuple[str, str | None], seconds: float) -> str:
    """What a caller of await_request tells its user of one request."""
    state, reason = outcome
    if state == "taken":
        return f"{table} {keys}: taken by the capture, being read again ({path.name})"
    if state == "refused":
        return f"{table} {keys}: refused by the capture: {reason} ({path.parent / REFUSED / path.name})"
    return (f"{table} {keys}: not taken by a capture within {seconds:g} s; a capture with this state reads it "
            f"when it next starts or finishes its file ({path.name})")


def key_parts(key: str | None) -> list[str] | None:
    """A key as given on the command line: its columns' values split at each comma, kept as they are
    (spaces too); a comma or backslash inside a value written as \\, or \\\\."""
    if key is None:
        return None
    parts, current, escaped = [], [], False
    for char in key:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ",":
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    return [*parts, "".join(current)]


# PostgreSQL's integer types, whose bounds are checked here: the capture refused them with the server's cast error.
INTEGER_TYPES = {"smallint", "integer", "bigint"}


def bound_problem(state: Mapping[str, Any], table: str, option: str, parts: list[str] | None) -> str | None:
    """What is wrong with a range bound, as far as the state file tells (the key's columns, and on
    PostgreSQL their types): a bound of another number of values than the key has columns, or a
    text where an integer column's value goes; None when nothing is."""
    key = (state.get("keys") or {}).get(table)
    if parts is None or not key:
        return None
    if len(parts) != len(key):
        return (f"{option} gives {len(parts)} value(s), but the key of {table} has {len(key)} column(s) "
                f"({', '.join(key)}): give one value for each, in that order, comma-separated")
    columns = (state.get("columns") or {}).get(table)  # PostgreSQL's: {attnum: name}, with column_types {attnum: type}
    names = {name: number for number, name in columns.items()} if isinstance(columns, dict) else {}
    types = (state.get("column_types") or {}).get(table) or {}
    for column, value in zip(key, parts):
        data_type = types.get(names.get(column, ""), "")
        if data_type in INTEGER_TYPES and not value.strip().lstrip("+-").isdigit():
            return f"{option}: {value!r} is not a value of {table}.{column}, which is {data_type}"
    return None


def order_problem(state: Mapping[str, Any], table: str, start: list[str] | None, through: list[str] | None) -> str | None:
    """A --from after --to, where the state file tells the key's order (every key column an integer, on
    PostgreSQL: a text key's order is the server's collation's); such a range holds no row."""
    key = (state.get("keys") or {}).get(table)
    columns = (state.get("columns") or {}).get(table)
    if start is None or through is None or not key or not isinstance(columns, dict):
        return None
    names = {name: number for number, name in columns.items()}
    types = (state.get("column_types") or {}).get(table) or {}
    if any(types.get(names.get(column, ""), "") not in INTEGER_TYPES for column in key):
        return None
    if [int(value) for value in start] <= [int(value) for value in through]:
        return None
    return (f"--from {','.join(start)} comes after --to {','.join(through)} in the key order of {table} "
            f"({', '.join(key)}), so the range holds no row: give the lower key as --from")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="cdc-snapshot", description=__doc__.split("\n\n")[0])
    parser.add_argument("--state", required=True, type=Path, help="the capture's state file (its --state)")
    parser.add_argument("--table", required=True, help="schema.table (database.table) of the capture's --tables")
    parser.add_argument("--from", dest="start", help="the range's first key, inclusive (default: the table's start): "
                        "its columns' values in key order, comma-separated (a comma or backslash in a value as \\, or \\\\)")
    parser.add_argument("--to", dest="through", help="the range's last key, inclusive (default: the table's end)")
    parser.add_argument("--wait-seconds", type=float, default=10.0, help="how long to wait for the capture to take "
                        "or refuse the request (0: do not wait)")
    args = parser.parse_args(argv)
    if not args.state.is_file():
        parser.error(f"--state {args.state}: no such file; give the state file of the capture that reads {args.table}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    state = json.loads(args.state.read_text())
    if "slot" not in state and "file" not in state:
        print(f"cdc-snapshot: {args.state} is not the state file of cdc-capture-postgres or cdc-capture-mysql",
              file=sys.stderr)
        return 2
    tables = state.get("tables")
    if tables is not None and args.table not in tables:
        print(f"cdc-snapshot: {args.table} is not one of the capture's tables ({', '.join(tables)})", file=sys.stderr)
        return 2
    start, through = key_parts(args.start), key_parts(args.through)
    problem = (bound_problem(state, args.table, "--from", start) or bound_problem(state, args.table, "--to", through)
               # The bounds' order only once each is a value of the key.
               or order_problem(state, args.table, start, through))
    if problem:
        print(f"cdc-snapshot: {problem}; nothing was asked of the capture", file=sys.stderr)
        return 2
    path = write_request(args.state, args.table, start, through)
    outcome = await_request(path, args.wait_seconds)
    keys = f"keys {args.start or 'start'} to {args.through or 'end'}"
    print(f"cdc-snapshot: {outcome_line(args.table, keys, path, outcome, args.wait_seconds)}", file=sys.stderr)
    return 1 if outcome[0] == "refused" else 0


if __name__ == "__main__":
    sys.exit(main())
