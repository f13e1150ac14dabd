"""A local Databend HTTP endpoint backed by the embedded Databend engine, for development and CI.

This is a development/test endpoint, NOT a server for production: one process-wide engine
session serves every client, statements run one at a time, authentication is one optional password and
results are held in memory until fetched.

It speaks enough of Databend's HTTP query API for `databend-py` (the client under
`databend-sqlalchemy` and therefore `dbt-databend-cloud`) and `databend-driver`:

- `POST /v1/query` (body: `sql`, `session`, `pagination`) answers with `id`, `session`, `schema`,
  `data` (rows of strings, NULL as the string "NULL" unless the session sets
  `format_null_as_str=0`), `state`, `error`, `stats` and `next_uri` / `final_uri` / `kill_uri`;
- `GET /v1/query/{id}/page/{n}` pages through results larger than one page;
- `/v1/query/{id}/final` and `/v1/query/{id}/kill` release a result;
- `/v1/session/login`, `/logout`, `/refresh`, `/heartbeat` and `/v1/verify` for clients that call them.

Authentication: HTTP Basic with user `root` and any password (empty is fine), or, when
`$DATABEND_LOCAL_PASSWORD` is set where it starts, that password only.

The engine is the `databend` wheel from PyPI (`from databend import SessionContext`). Its catalog
and data live under `--data-dir` (`_meta`, `_data`, `logs`), so tables outlive the process.
One engine session serves all clients: before each statement the endpoint switches it to the
client's database and settings (`USE`, `SET`), so per-client state round-trips in `session` as
with a real server. A transaction opened by one client keeps other clients out until it ends.

    python -m python_jobs.devtools.databend_local --port 8000 --data-dir .databend-local
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Iterator

from python_jobs.devtools.databend_local.engine import MissingEngine
from python_jobs.devtools.databend_local.http_api import DEFAULT_PAGE_ROWS, PASSWORD_ENV, make_server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    parser.add_argument("--data-dir", type=Path, required=True, help="engine catalog, data and logs")
    parser.add_argument("--page-rows", type=int, default=DEFAULT_PAGE_ROWS, help="max rows per result page")
    parser.add_argument("--verbose", action="store_true", help="log every HTTP request to stderr")
    args = parser.parse_args(argv)

    try:
        server = make_server(args.data_dir, args.host, args.port, args.page_rows, args.verbose)
    except MissingEngine as error:
        print(f"python -m python_jobs.devtools.databend_local: {error}", file=sys.stderr)
        return 2

    def stop(signum: int, frame: Any) -> None:
        # shutdown() waits for serve_forever() to return, so it cannot run on serve_forever's thread.
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(server.url, flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0


@contextlib.contextmanager
def serve(data_dir: Path, page_rows: int = DEFAULT_PAGE_ROWS, startup_timeout: float = 60.0,
          password: str | None = None) -> Iterator[str]:
    """Run the endpoint in a subprocess on a free port; yields its URL (`http://127.0.0.1:PORT`).
    password: the one it takes (passed in its environment), else any.

    A subprocess, not a thread: the binding fixes its data path at import and can abort the
    whole process on some engine failures. Its stderr goes to `data_dir/databend_local.log`.
    """
    data_dir = Path(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "python_jobs.devtools.databend_local", "--port", "0",
               "--data-dir", str(data_dir), "--page-rows", str(page_rows)]
    with open(data_dir / "databend_local.log", "ab") as log:
        environment = {**os.environ, PASSWORD_ENV: password} if password else {
            name: value for name, value in os.environ.items() if name != PASSWORD_ENV}
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, cwd=data_dir, text=True, env=environment)
    try:
        yield _wait_for_url(process, startup_timeout, data_dir / "databend_local.log")
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()
    # Only reached when the body succeeded: a server that did not stop cleanly is a failure too.
    if process.returncode != 0:
        log = data_dir / "databend_local.log"
        raise RuntimeError(f"databend_local exited with code {process.returncode}; see {log}")


def _wait_for_url(process: subprocess.Popen, timeout: float, log_path: Path) -> str:
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(process.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    url = lines[0].strip() if lines else ""
    if not url.startswith("http://"):
        process.kill()
        raise RuntimeError(f"databend_local did not start within {timeout}s; see {log_path}")
    return url


if __name__ == "__main__":
    sys.exit(main())
