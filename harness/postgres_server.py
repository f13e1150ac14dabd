"""A throwaway PostgreSQL 15 server with wal2json, from the Debian packages (make test-dbs)."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from harness.throwaway_server import free_port, wait_until_accepting

PG_BIN = Path("/usr/lib/postgresql/15/bin")
WAL2JSON = Path("/usr/lib/postgresql/15/lib/wal2json.so")


@dataclass
class PostgresServer:
    directory: Path
    port: int
    process: subprocess.Popen

    @property
    def dsn(self) -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres"

    def connect(self, dbname: str = "postgres"):
        import psycopg2

        return psycopg2.connect(self.dsn, dbname=dbname)

    def stop(self) -> None:
        self.process.terminate()  # SIGTERM: smart shutdown
        self.process.wait(timeout=30)


def _as_server_user(command: list[str]) -> list[str]:
    # initdb and postgres refuse to run as root.
    return ["runuser", "-u", "nobody", "--", *command] if os.geteuid() == 0 else command


def start_postgres(directory: Path) -> PostgresServer:
    for needed in (PG_BIN / "postgres", WAL2JSON):
        if not needed.exists():
            raise RuntimeError(f"{needed} is missing: run `make test-dbs` (postgresql-15, postgresql-15-wal2json)")
    directory.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        shutil.chown(directory, "nobody")
    data = directory / "data"
    initdb = subprocess.run(
        _as_server_user([str(PG_BIN / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
                         "-E", "UTF8", "--locale=C.UTF-8"]),
        capture_output=True, text=True,
    )
    if initdb.returncode:
        raise RuntimeError(f"initdb failed in {directory}: {initdb.stderr.strip()}")
    port = free_port()
    log = open(directory / "server.log", "w")
    process = subprocess.Popen(
        _as_server_user([
            str(PG_BIN / "postgres"), "-D", str(data), "-p", str(port),
            "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={directory}",
            "-c", "wal_level=logical", "-c", "max_replication_slots=4", "-c", "max_wal_senders=4",
            "-c", "fsync=off", "-c", "max_prepared_transactions=10",  # PREPARE TRANSACTION in the workloads
        ]),
        stdout=log, stderr=subprocess.STDOUT,
    )
    server = PostgresServer(directory, port, process)
    wait_until_accepting(server.connect, process, directory / "server.log", "PostgreSQL")
    return server


def create_capture_user(server: PostgresServer, schemas: list[str], name: str = "cdc") -> str:
    """The user the docs prescribe for the capture (docs/your_project.md): LOGIN and REPLICATION, and
    SELECT on the captured schemas' tables, nothing else; returns its DSN."""
    connection = server.connect()
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute(f"create role {name} login replication")
        for schema in schemas:
            cursor.execute(f"grant usage on schema {schema} to {name}")
            cursor.execute(f"grant select on all tables in schema {schema} to {name}")
            cursor.execute(f"alter default privileges in schema {schema} grant select on tables to {name}")
    connection.close()
    return f"host=127.0.0.1 port={server.port} user={name} dbname=postgres"
