"""The PostgreSQL database that holds the cluster's Iceberg JDBC catalog (Debian's postgresql-15),
and the JDBC driver jar every Spark process needs to reach it (Debian's libpostgresql-jdbc-java)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from python_jobs.cluster import processes
from python_jobs.cluster.processes import LOOPBACK, ClusterError

PG_BIN = Path(os.environ.get("CDC_MERGE_PG_BIN", "/usr/lib/postgresql/15/bin"))
POSTGRES_JDBC_JAR = Path(os.environ.get("CDC_MERGE_POSTGRES_JDBC_JAR", "/usr/share/java/postgresql.jar"))
DATABASE = "iceberg_catalog"
USER = "postgres"
NAME = "catalog-postgres"


def jdbc_jar() -> str:
    if not POSTGRES_JDBC_JAR.is_file():
        raise ClusterError(
            f"{POSTGRES_JDBC_JAR} not found: install Debian's libpostgresql-jdbc-java (make test-dbs), "
            "or set CDC_MERGE_POSTGRES_JDBC_JAR to a PostgreSQL JDBC driver jar"
        )
    return str(POSTGRES_JDBC_JAR)


def jdbc_uri(port: int) -> str:
    return f"jdbc:postgresql://{LOOPBACK}:{port}/{DATABASE}"


def _as_server_user(command: list[str]) -> list[str]:
    # initdb and postgres refuse to run as root.
    return ["runuser", "-u", "nobody", "--", *command] if os.geteuid() == 0 else command


def start(folder: Path, port: int) -> int:
    """Creates (first time) and starts the catalog's PostgreSQL on port; returns its pid."""
    postgres = PG_BIN / "postgres"
    if not postgres.exists():
        raise ClusterError(f"{postgres} not found: install Debian's postgresql-15 (make test-dbs), or set CDC_MERGE_PG_BIN")
    jdbc_jar()
    home = folder / "catalog-postgres"
    home.mkdir(exist_ok=True)
    if os.geteuid() == 0:
        shutil.chown(home, "nobody")
    if os.geteuid() == 0 and subprocess.run(_as_server_user(["test", "-w", str(home)])).returncode:
        raise ClusterError(
            f"PostgreSQL runs as user nobody here (it refuses root) and cannot reach {home}: choose a cluster "
            "folder on a path every user may enter (--folder, e.g. under /tmp)"
        )
    data = home / "data"
    if not data.exists():
        initdb = subprocess.run(
            _as_server_user([str(PG_BIN / "initdb"), "-D", str(data), "-U", USER, "--auth=trust",
                             "-E", "UTF8", "--locale=C.UTF-8"]),
            capture_output=True, text=True,
        )
        if initdb.returncode:
            raise ClusterError(f"initdb failed in {data}: {initdb.stderr.strip()}")
    pid = processes.start(
        NAME,
        _as_server_user([str(postgres), "-D", str(data), "-p", str(port), "-c", f"listen_addresses={LOOPBACK}",
                         "-c", f"unix_socket_directories={home}", "-c", "max_connections=50"]),
        folder, os.environ,
    )
    processes.wait_until(lambda: _create_database(port), pid, NAME, folder, timeout=60)
    return pid


def _create_database(port: int) -> bool:
    """True once the server answers and the catalog database exists (created if missing)."""
    import psycopg2

    try:
        connection = psycopg2.connect(host=LOOPBACK, port=port, user=USER, dbname="postgres", connect_timeout=2)
    except psycopg2.OperationalError:
        return False
    connection.autocommit = True
    try:
        with connection.cursor() as cursor:
            cursor.execute("select 1 from pg_database where datname = %s", (DATABASE,))
            if cursor.fetchone() is None:
                cursor.execute(f"create database {DATABASE}")
    finally:
        connection.close()
    return True
