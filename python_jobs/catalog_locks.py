"""One apply per mirror across machines, where the Iceberg catalog is a PostgreSQL database (the
`cluster` target's JDBC catalog): the mirror's lock is a session-level advisory lock in that
database, which every machine that writes the mirrors reaches.

run_locks.py's file locks hold between processes of one machine; the cluster target takes none of
them (dbt's SQL runs in the Thrift server, not in dbt's process), so two schedulers, or an
orchestrator's retry on another worker while the first run still applies, would apply one mirror at
once: both insert the keys that are new to it, and both write its batch branch and changes table.
The advisory lock is held by one database connection of the run and goes away with it: when the run
releases it, when its process ends, even by SIGKILL (the server sees the connection close), and
after a machine's power loss once TCP keepalives find the connection dead (about a minute). The
holder is named by its connection's application_name. Waiting and its limit are run_locks.py's.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import os
import socket
import time
from dataclasses import dataclass
from typing import Any, Mapping, Optional
from urllib.parse import parse_qs, urlparse

from python_jobs import run_locks

log = logging.getLogger("cdc_merge")

# Connections holding a lock, by lock key.
_held: dict[int, Any] = {}


@dataclass(frozen=True)
class CatalogDatabase:
    """Where the catalog's PostgreSQL is, from the Spark settings of the catalog."""

    catalog: str
    host: str
    port: int
    database: str
    user: str
    password: str

    def connect(self, application_name: str) -> Any:
        import psycopg2

        connection = psycopg2.connect(
            host=self.host, port=self.port, dbname=self.database, user=self.user, password=self.password,
            application_name=application_name[:63], connect_timeout=30,
            # A holder whose machine vanished: both ends drop the connection within about a minute.
            keepalives=1, keepalives_idle=30, keepalives_interval=10, keepalives_count=3,
            options="-c tcp_keepalives_idle=30 -c tcp_keepalives_interval=10 -c tcp_keepalives_count=3",
        )
        connection.autocommit = True
        return connection


def catalog_database(settings: Mapping[str, str]) -> Optional[CatalogDatabase]:
    """The default catalog's database when it is an Iceberg JDBC catalog on PostgreSQL, else None."""
    catalog = settings.get("spark.sql.defaultCatalog", "spark_catalog")
    prefix = f"spark.sql.catalog.{catalog}"
    uri = settings.get(f"{prefix}.uri") or ""
    if settings.get(f"{prefix}.type") != "jdbc" or not uri.startswith("jdbc:postgresql://"):
        return None
    parsed = urlparse(uri.removeprefix("jdbc:"))
    query = parse_qs(parsed.query)
    user = settings.get(f"{prefix}.jdbc.user") or query.get("user", [""])[0]
    password = settings.get(f"{prefix}.jdbc.password") or query.get("password", [""])[0]
    return CatalogDatabase(catalog, parsed.hostname or "localhost", parsed.port or 5432, parsed.path.lstrip("/"),
                           user, password)


def lock_key(database: CatalogDatabase, kind: str, name: str) -> int:
    """A signed 64-bit advisory lock key for name (a mirror) of the catalog."""
    digest = hashlib.sha1(f"cdc_merge {kind} {database.catalog} {name.lower()}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def acquire(database: CatalogDatabase, kind: str, name: str, what: str, wait: Optional[float] = None) -> None:
    """Hold the lock of name until release() or this process ends; wait for another holder up to
    wait seconds (default run_locks.wait_seconds()), then raise run_locks.LockBusy naming it."""
    wait = run_locks.wait_seconds() if wait is None else wait
    key = lock_key(database, kind, name)
    release(database, kind, name)
    since = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    try:
        connection = database.connect(f"cdc_merge pid {os.getpid()} on {socket.gethostname()} since {since}")
    except Exception as error:  # psycopg2.Error, or the driver missing
        raise run_locks.LockBusy(
            f"{what}: cannot reach the catalog's database {database.host}:{database.port}/{database.database} to take "
            f"its lock ({str(error).strip()}); this run changed nothing of it."
        ) from None
    deadline = time.monotonic() + wait
    told = False
    try:
        with connection.cursor() as cursor:
            while True:
                cursor.execute("select pg_try_advisory_lock(%s)", (key,))
                if cursor.fetchone()[0]:
                    break
                holder = _holder(cursor, key)
                if time.monotonic() >= deadline:
                    raise run_locks.LockBusy(run_locks.busy_message(what, holder, wait))
                if not told:
                    log.info("%s is in use by another run (%s): waiting up to %.0f s", what, holder, wait)
                    print(f"cdc_merge: {what} is in use by another run ({holder}): waiting up to {wait:.0f} s", flush=True)
                    told = True
                time.sleep(0.5)
    except BaseException:
        connection.close()
        raise
    _held[key] = connection


def holds(database: CatalogDatabase, kind: str, name: str) -> bool:
    """Whether this process holds the lock of name."""
    return lock_key(database, kind, name) in _held


def release(database: CatalogDatabase, kind: str, name: str) -> None:
    connection = _held.pop(lock_key(database, kind, name), None)
    if connection is not None:
        connection.close()  # ends the session, and with it its advisory locks


def release_all() -> None:
    while _held:
        _, connection = _held.popitem()
        connection.close()


def _holder(cursor: Any, key: int) -> str:
    """The application_name of the session holding key (an advisory lock on a bigint keeps its high
    and low 32 bits as classid and objid)."""
    unsigned = key & 0xFFFFFFFFFFFFFFFF
    cursor.execute(
        "select a.application_name, a.client_addr::text from pg_locks l join pg_stat_activity a on a.pid = l.pid "
        "where l.locktype = 'advisory' and l.granted and l.objsubid = 1 and l.classid::bigint = %s and l.objid::bigint = %s",
        (unsigned >> 32, unsigned & 0xFFFFFFFF),
    )
    row = cursor.fetchone()
    if row is None:
        return "starting"
    name, address = row
    name = (name or "").removeprefix("cdc_merge ")
    return f"{name}{f' from {address}' if address else ''}" if name else f"a session from {address or 'this host'}"
