"""The cluster's long-running processes: started in the background with their log and pid in the
cluster folder, waited for until they accept connections, stopped by pid."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Callable, Mapping, Sequence

LOOPBACK = "127.0.0.1"


class ClusterError(Exception):
    """A cluster component cannot start or stop; the message says what to do."""


def free_port() -> int:
    """A port nothing listens on now (the kernel's choice), so two clusters on one machine differ."""
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return probe.getsockname()[1]


def require_free_port(port: int, component: str, option: str) -> int:
    """port itself, or a free one for 0; a taken port is an error naming the component and option."""
    if port == 0:
        return free_port()
    with socket.socket() as probe:
        try:
            probe.bind((LOOPBACK, port))
        except OSError:
            raise ClusterError(
                f"{component}: port {port} on {LOOPBACK} is taken by another process; "
                f"pass another {option}, or leave it out to choose a free port"
            ) from None
    return port


def accepts_connections(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex((LOOPBACK, port)) == 0


def start(name: str, command: Sequence[str], folder: Path, env: Mapping[str, str], cwd: Path | None = None) -> int:
    """Starts command in its own process group, output to <folder>/<name>.log, pid to <name>.pid."""
    log = open(folder / f"{name}.log", "ab")
    process = subprocess.Popen(
        list(command), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        env=dict(env), cwd=cwd or folder, start_new_session=True,
    )
    log.close()
    (folder / f"{name}.pid").write_text(f"{process.pid}\n")
    return process.pid


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A child of this process that exited stays a zombie until reaped.
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:
        return True


def wait_until(ready: Callable[[], bool], pid: int, name: str, folder: Path, timeout: float) -> None:
    """Polls ready() until true; if the process exits or timeout passes, fails with its log's end."""
    deadline = time.monotonic() + timeout
    while not ready():
        if not alive(pid):
            raise ClusterError(f"{name} exited while starting; {log_end(folder, name)}")
        if time.monotonic() > deadline:
            raise ClusterError(f"{name} did not become ready in {timeout:.0f} s; {log_end(folder, name)}")
        time.sleep(0.5)


def log_end(folder: Path, name: str, chars: int = 3000) -> str:
    path = folder / f"{name}.log"
    text = path.read_text(errors="replace") if path.exists() else ""
    return f"the end of {path}:\n{text[-chars:]}" if text else f"{path} is empty"


def read_pid(folder: Path, name: str) -> int | None:
    path = folder / f"{name}.pid"
    try:
        return int(path.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None


def stop(folder: Path, name: str, timeout: float = 30) -> bool:
    """Stops the process group of <name>.pid (SIGTERM, then SIGKILL); whether one was running."""
    pid = read_pid(folder, name)
    if pid is None:
        return False
    was_alive = alive(pid)
    if was_alive:
        _signal_group(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if alive(pid):
            _signal_group(pid, signal.SIGKILL)
            while alive(pid):
                time.sleep(0.1)
    (folder / f"{name}.pid").unlink(missing_ok=True)
    return was_alive


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass
    except PermissionError:
        os.kill(pid, sig)
