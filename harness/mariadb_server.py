"""A throwaway MariaDB server with a row-based binlog, from the Debian package (make test-dbs)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from harness.throwaway_server import free_port, wait_until_accepting

MARIADBD = Path("/usr/sbin/mariadbd")
INSTALL_DB = Path("/usr/bin/mariadb-install-db")


@dataclass
class MariadbServer:
    directory: Path
    port: int
    process: subprocess.Popen

    def connect(self, **options):
        import pymysql

        return pymysql.connect(host="127.0.0.1", port=self.port, user="root", password="", charset="utf8mb4", **options)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)


@contextlib.contextmanager
def server_charsets(server: MariadbServer):
    """Text decoded by this server's own mappings while in the block, read through a connection of its
    own (as the capture does); forgotten after it, so later tests in the process do not ask a stopped server."""
    from python_jobs.capture.mysql_server_charsets import forget_server_charsets, load_server_charsets

    connection = server.connect()
    load_server_charsets(connection)
    try:
        yield
    finally:
        forget_server_charsets(connection)
        connection.close()


def _server_user() -> list[str]:
    # mariadbd refuses to run as root unless told to; the files then belong to nobody.
    return ["--user=nobody"] if os.geteuid() == 0 else []


def start_mariadb(directory: Path, options: tuple[str, ...] = ()) -> MariadbServer:
    """A server on a new datadir; options (mariadbd's, as --name=value) go to the install too, for
    settings a datadir is made with (--lower-case-table-names=1)."""
    for needed in (MARIADBD, INSTALL_DB):
        if not needed.exists():
            raise RuntimeError(f"{needed} is missing: run `make test-dbs` (mariadb-server)")
    directory.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        shutil.chown(directory, "nobody")
    data = directory / "data"
    # Each server its own tmpdir: a starting server deletes every #sql file in its tmpdir, which failed
    # another server's install in /tmp ("Error on delete of '/tmp/#sql-temptable-...'") under xdist.
    scratch = directory / "tmp"
    scratch.mkdir(exist_ok=True)
    if os.geteuid() == 0:
        shutil.chown(scratch, "nobody")
    install = subprocess.run(
        [str(INSTALL_DB), f"--datadir={data}", "--auth-root-authentication-method=normal",
         "--skip-test-db", "--no-defaults", *_server_user(), f"--tmpdir={scratch}", *options],
        capture_output=True, text=True,
    )
    if install.returncode:
        raise RuntimeError(f"mariadb-install-db failed in {directory}: {install.stderr.strip()[-2000:]}")
    port = free_port()
    log = open(directory / "server.log", "w")
    process = subprocess.Popen(
        [str(MARIADBD), "--no-defaults", f"--datadir={data}", f"--port={port}", "--bind-address=127.0.0.1",
         f"--socket={directory / 'mysqld.sock'}", f"--pid-file={directory / 'mysqld.pid'}", *_server_user(), f"--tmpdir={scratch}",
         "--server-id=1", f"--log-bin={data / 'binlog'}", "--binlog-format=ROW", "--binlog-row-image=FULL",
         "--binlog-row-metadata=FULL", "--default-time-zone=+00:00", "--character-set-server=utf8mb4",
         "--innodb-flush-log-at-trx-commit=0", "--sync-binlog=0", "--skip-name-resolve", *options],
        stdout=log, stderr=subprocess.STDOUT,
    )
    server = MariadbServer(directory, port, process)
    wait_until_accepting(server.connect, process, directory / "server.log", "MariaDB")
    return server


def create_mariadb_capture_user(server: MariadbServer, databases: list[str], name: str = "cdc") -> tuple[str, str]:
    """The user the docs prescribe for the capture (docs/your_project.md): REPLICATION SLAVE,
    REPLICATION CLIENT, and SELECT on the captured databases, nothing else; returns (user, password)."""
    password = "capture-pw"
    connection = server.connect(autocommit=True)
    with connection.cursor() as cursor:
        cursor.execute(f"create user {name}@'%%' identified by %s", (password,))
        cursor.execute(f"grant replication slave, replication client on *.* to {name}@'%'")
        for database in databases:
            cursor.execute(f"grant select on `{database}`.* to {name}@'%'")
    connection.close()
    return name, password
