"""cdc-snapshot: read a table, or a key range of it, again, while its capture runs
(docs/online_snapshots.md; docs/operating.md, "Re-read a table or a key range").

    cdc-snapshot --state data/capture-state.json --table shop.orders
    cdc-snapshot --state data/capture-state.json --table shop.order_lines --from 10,1 --to 20,6

The request is a file in a folder beside the capture's state file (<state>.requests/), which the
capture takes at its next file, running or when it next starts: it reads the rows in pages while its
changes stream, and each page's key range repairs the mirror (missing and stale rows come back, rows
the source no longer has go). A key is its columns' values in key order, comma-separated, as the
source writes them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any, Iterator, Sequence

from python_jobs.capture.output import read_state, write_state


# A running capture looks for requests this often: a folder listing at every change cost a quarter of a
# busy stream's time (BENCHMARKS.md, "Capture").
REQUESTS_EVERY_SECONDS = 1.0


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
            taken.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue  # not a request this command wrote
    yield taken
    if paths:
        write_state(state, {**read_state(state), "snapshots": pages.state()})
        for path in paths:
            path.unlink(missing_ok=True)


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


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="cdc-snapshot", description=__doc__.split("\n\n")[0])
    parser.add_argument("--state", required=True, type=Path, help="the capture's state file (its --state)")
    parser.add_argument("--table", required=True, help="schema.table (database.table) of the capture's --tables")
    parser.add_argument("--from", dest="start", help="the range's first key, inclusive (default: the table's start): "
                        "its columns' values in key order, comma-separated (a comma or backslash in a value as \\, or \\\\)")
    parser.add_argument("--to", dest="through", help="the range's last key, inclusive (default: the table's end)")
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
    path = write_request(args.state, args.table, key_parts(args.start), key_parts(args.through))
    print(f"cdc-snapshot: {args.table} will be read again by the capture with state {args.state} ({path.name})",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
