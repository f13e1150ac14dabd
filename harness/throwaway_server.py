"""Shared by the throwaway source servers (postgres_server.py, mariadb_server.py) and the
capture round tests: a free port, waiting for a server, killing a capture half way."""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Callable


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_accepting(connect: Callable[[], object], process: subprocess.Popen, log_path: Path, name: str) -> None:
    """Poll until connect() works; if the server exits or 60 s pass, fail with its log's end."""
    deadline = time.monotonic() + 60
    while True:
        try:
            connect().close()
            return
        except Exception:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"{name} did not start; its log ends:\n{log_path.read_text()[-2000:]}") from None
            time.sleep(0.2)


def kill_after_first_file(command: list[str], inbox: Path, cwd: Path, env: dict | None = None) -> int:
    """Run a capture command, SIGKILL it once it has written a new file; returns how many it wrote."""
    before = set(inbox.iterdir())
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not set(inbox.glob("*.json")) - before and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    process.send_signal(signal.SIGKILL)
    assert process.wait() == -signal.SIGKILL, "capture finished before it could be killed"
    return len(set(inbox.glob("*.json")) - before)
