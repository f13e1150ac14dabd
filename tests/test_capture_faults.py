"""Source faults for the capture programs, on real PostgreSQL and MariaDB servers: the server
restarts mid-stream, the replication slot is gone, the output folder is full, the password is
wrong. Each ends with a clear error and no traceback, and the next run resumes without loss."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import PROJECT_DIR
from harness.mariadb_server import start_mariadb
from harness.postgres_server import start_postgres
from harness.throwaway_server import wait_until_accepting
from python_jobs.capture.postgres_records import file_events

SECRET = "s3cret-Wr0ng-pa55"


@pytest.fixture
def postgres():
    # Not under pytest's tmp_path: the server runs as another user, who cannot enter it.
    directory = Path(tempfile.mkdtemp(prefix="cdc-merge-postgres-"))
    server = start_postgres(directory)
    yield server
    server.stop()
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def mariadb():
    directory = Path(tempfile.mkdtemp(prefix="cdc-merge-mariadb-"))
    server = start_mariadb(directory)
    yield server
    server.stop()
    shutil.rmtree(directory, ignore_errors=True)


def restart(server, stop_signal: int, pid_file: str) -> None:
    """Stop the server (fast shutdown, clients cut off) and start it again on its data and port.

    The signal goes to the server itself (its pid file): as root it runs under runuser."""
    os.kill(int((server.directory / pid_file).read_text().split()[0]), stop_signal)
    server.process.wait(timeout=60)
    restart_stopped(server)


def restart_stopped(server) -> None:
    log_path = server.directory / "server.log"
    with open(log_path, "a") as log:
        server.process = subprocess.Popen(server.process.args, stdout=log, stderr=subprocess.STDOUT)
    wait_until_accepting(server.connect, server.process, log_path, "the restarted server")


def capture(command: str, *args: str, env: dict | None = None, follow: bool = False):
    """A capture command as users run it; the finished process, or the running one with --follow."""
    argv = [sys.executable, "-m", f"python_jobs.capture.{command}", *args, *(["--follow"] if follow else [])]
    environment = {**os.environ, **(env or {})}
    if follow:
        return subprocess.Popen(argv, cwd=PROJECT_DIR, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
    return subprocess.run(argv, cwd=PROJECT_DIR, env=environment, capture_output=True, text=True, timeout=300)


@contextlib.contextmanager
def following_capture(command: str, *args: str):
    """A capture with --follow; killed on the way out if a failed check left it running."""
    process = capture(command, *args, follow=True)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()


def stopped(process) -> str:
    """SIGTERM to a following capture: its stderr, once it stopped cleanly."""
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    return stderr


def captured_ids(out: Path) -> list[int]:
    """The id of every event in the capture's files, in file order (duplicates kept)."""
    ids = []
    for path in sorted(out.glob("*.json")):
        for event in file_events(path):
            if "op" in event:  # not a transaction's END record
                ids.append(int((event["after"] or event["before"])["id"]))
    return ids


def ids_moved_on_and_left(tmp_path: Path, out: Path) -> list[int]:
    """The ids of the files moved on to tmp_path (as the landing would take them) and of those still in out."""
    every = tmp_path / "every_file"
    every.mkdir()
    for path in [*tmp_path.glob("*.json"), *out.glob("*.json")]:
        if path.name != "state.json":
            shutil.move(str(path), every / path.name)
    return captured_ids(every)


def positions(out: Path) -> list[str]:
    found = []
    for path in sorted(out.glob("*.json")):
        for event in file_events(path):
            if "op" not in event:  # a transaction's END record
                continue
            source = event["source"]
            found.append(f"{source.get('file')}:{source.get('pos')}:{source.get('row')}:{source.get('lsn')}")
    return found


def wait_for(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


@contextlib.contextmanager
def small_filesystem(path: Path, size: str = "16k"):
    """A tmpfs of size at path (as root); elsewhere a folder this user may not write to. Both are
    the kernel refusing the write (ENOSPC or EACCES), as a full or broken output folder does."""
    path.mkdir(parents=True)
    if os.geteuid() == 0:
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)
        try:
            yield "No space left on device"
        finally:
            subprocess.run(["umount", str(path)], check=True)
    else:
        path.chmod(0o555)
        try:
            yield "Permission denied"
        finally:
            path.chmod(0o755)


# -- PostgreSQL ---------------------------------------------------------------------------------


def pg_setup(postgres, rows: int) -> None:
    with postgres.connect() as connection, connection.cursor() as cursor:
        cursor.execute("create schema shop; create table shop.items (id bigint primary key, note text)")
        cursor.execute("insert into shop.items select g, 'row ' || g from generate_series(1, %s) g", (rows,))


def pg_insert(postgres, first: int, last: int) -> None:
    with postgres.connect() as connection, connection.cursor() as cursor:
        cursor.execute("insert into shop.items select g, repeat('x', 200) from generate_series(%s, %s) g", (first, last))


def pg_args(postgres, tmp_path: Path, out: Path | None = None) -> list[str]:
    return ["--dsn", postgres.dsn, "--tables", "shop.items", "--slot", "faults",
            "--out", str(out or tmp_path / "out"), "--state", str(tmp_path / "state.json")]


def test_postgres_restart_mid_stream_is_waited_out_by_a_following_capture(postgres, tmp_path):
    pg_setup(postgres, 20)
    assert capture("postgres", *pg_args(postgres, tmp_path)).returncode == 0
    with following_capture("postgres", *pg_args(postgres, tmp_path), "--max-wait-seconds", "0.3") as following:
        pg_insert(postgres, 21, 40)
        wait_for(lambda: 40 in captured_ids(tmp_path / "out"))
        restart(postgres, signal.SIGINT, 'data/postmaster.pid')
        pg_insert(postgres, 41, 60)
        wait_for(lambda: 60 in captured_ids(tmp_path / "out"))
        assert following.poll() is None  # still running
        stderr = stopped(following)
    assert "lost the connection to PostgreSQL" in stderr and "reconnecting in 1 s (attempt 1)" in stderr, stderr
    assert "Traceback" not in stderr
    assert sorted(set(captured_ids(tmp_path / "out"))) == list(range(1, 61))


def test_postgres_gone_is_a_clear_error_for_a_run_without_follow(postgres, tmp_path):
    pg_setup(postgres, 5)
    assert capture("postgres", *pg_args(postgres, tmp_path)).returncode == 0
    pg_insert(postgres, 6, 10)
    os.kill(int((postgres.directory / "data/postmaster.pid").read_text().split()[0]), signal.SIGINT)
    postgres.process.wait(timeout=60)
    result = capture("postgres", *pg_args(postgres, tmp_path))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "cannot connect to PostgreSQL" in result.stderr, result.stderr

    restart_stopped(postgres)
    assert capture("postgres", *pg_args(postgres, tmp_path)).returncode == 0
    assert sorted(captured_ids(tmp_path / "out")) == list(range(1, 11))


def test_a_capture_killed_between_its_file_and_the_slot_confirm_writes_no_change_twice(postgres, tmp_path):
    pg_setup(postgres, 5)
    assert capture("postgres", *pg_args(postgres, tmp_path)).returncode == 0
    pg_insert(postgres, 6, 10)
    killed = capture("postgres", *pg_args(postgres, tmp_path), env={"CDC_MERGE_CRASH_AT": "capture-before-confirm"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert sorted(captured_ids(tmp_path / "out")) == list(range(1, 11))  # the file is there, the slot still has them

    pg_insert(postgres, 11, 12)
    result = capture("postgres", *pg_args(postgres, tmp_path))
    assert result.returncode == 0, result.stderr
    assert sorted(captured_ids(tmp_path / "out")) == list(range(1, 13))


def test_a_dropped_replication_slot_is_a_clear_error(postgres, tmp_path):
    pg_setup(postgres, 3)
    assert capture("postgres", *pg_args(postgres, tmp_path)).returncode == 0
    with postgres.connect() as connection, connection.cursor() as cursor:
        cursor.execute("select pg_drop_replication_slot('faults')")
    result = capture("postgres", *pg_args(postgres, tmp_path))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "replication slot faults is gone" in result.stderr and "--resnapshot" in result.stderr


def test_a_new_state_file_on_an_existing_slot_is_refused_and_the_slot_kept(postgres, tmp_path):
    pg_setup(postgres, 3)
    assert capture("postgres", *pg_args(postgres, tmp_path)).returncode == 0
    pg_insert(postgres, 4, 6)  # held by the slot, not captured yet
    (tmp_path / "state.json").rename(tmp_path / "state-of-the-slot.json")

    result = capture("postgres", *pg_args(postgres, tmp_path))

    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "replication slot faults already exists" in result.stderr and "--resnapshot" in result.stderr
    with postgres.connect() as connection, connection.cursor() as cursor:
        cursor.execute("select count(*) from pg_replication_slots where slot_name = 'faults'")
        assert cursor.fetchone() == (1,)
    # With the state file the slot was made with, the changes it held are all there.
    (tmp_path / "state-of-the-slot.json").rename(tmp_path / "state.json")
    assert capture("postgres", *pg_args(postgres, tmp_path)).returncode == 0
    assert sorted(captured_ids(tmp_path / "out")) == list(range(1, 7))


def test_postgres_capture_into_a_full_folder_fails_clearly_and_the_next_run_loses_nothing(postgres, tmp_path):
    pg_setup(postgres, 5)
    out = tmp_path / "small"
    with small_filesystem(out) as refusal:
        assert capture("postgres", *pg_args(postgres, tmp_path, out)).returncode == 0  # the snapshot fits
        pg_insert(postgres, 6, 400)  # 80 kB of changes
        result = capture("postgres", *pg_args(postgres, tmp_path, out))
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert f"cannot write {out}" in result.stderr and refusal in result.stderr
        assert "run the capture again: it resumes from the last file written, nothing is lost" in result.stderr
        assert not list(out.glob(".*partial")), "a partial file was left behind"
        for path in out.glob("*.json"):  # the files written so far move on, as the landing would take them
            shutil.move(str(path), tmp_path / path.name)
    result = capture("postgres", *pg_args(postgres, tmp_path, out))
    assert result.returncode == 0, result.stderr
    assert sorted(ids_moved_on_and_left(tmp_path, out)) == list(range(1, 401))


def test_postgres_password_only_from_the_environment_and_never_printed(postgres, tmp_path):
    pg_setup(postgres, 2)
    with postgres.connect() as connection, connection.cursor() as cursor:
        cursor.execute(f"create role cdc login replication password '{SECRET}'")
        cursor.execute("grant usage on schema shop to cdc; grant select on shop.items to cdc")
    hba = postgres.directory / "data" / "pg_hba.conf"
    hba.write_text("host all cdc 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
    with postgres.connect() as connection, connection.cursor() as cursor:
        cursor.execute("select pg_reload_conf()")
    dsn = postgres.dsn.replace("user=postgres", "user=cdc")
    args = ["--tables", "shop.items", "--slot", "secrets", "--out", str(tmp_path / "out"),
            "--state", str(tmp_path / "state.json")]

    on_command_line = capture("postgres", "--dsn", f"{dsn} password={SECRET}", *args)
    wrong = capture("postgres", "--dsn", dsn, *args, env={"PGPASSWORD": SECRET + "-not"})
    right = capture("postgres", "--dsn", dsn, *args, env={"PGPASSWORD": SECRET})

    assert on_command_line.returncode == 2 and "--dsn holds a password: remove it and set PGPASSWORD" in on_command_line.stderr
    assert wrong.returncode == 2 and "password authentication failed" in wrong.stderr
    assert "check --dsn, and the password in PGPASSWORD" in wrong.stderr and "Traceback" not in wrong.stderr
    assert right.returncode == 0, right.stderr
    assert sorted(captured_ids(tmp_path / "out")) == [1, 2]
    # cdc-init (and cdc-scaffold) read the same source the same way.
    init = [sys.executable, "-m", "python_jobs.starter.init", "--tables", "shop.items", "--package-local", str(PROJECT_DIR)]
    init_on_command_line = run_init([*init, str(tmp_path / "p1"), "--postgres", f"{dsn} password={SECRET}"], {})
    init_wrong = run_init([*init, str(tmp_path / "p2"), "--postgres", dsn], {"PGPASSWORD": SECRET + "-not"})
    assert init_on_command_line.returncode == 2 and "--postgres holds a password" in init_on_command_line.stderr
    assert init_wrong.returncode == 2 and "cannot connect to PostgreSQL (" in init_wrong.stderr
    assert "password authentication failed" in init_wrong.stderr and "Traceback" not in init_wrong.stderr
    for result in (on_command_line, wrong, right, init_on_command_line, init_wrong):
        assert SECRET not in result.stdout + result.stderr
    assert not any(SECRET in path.read_text() for path in tmp_path.rglob("*") if path.is_file())


def run_init(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=PROJECT_DIR, env={**os.environ, **env}, capture_output=True, text=True, timeout=120)


def test_a_table_without_a_primary_key_is_refused_before_a_slot_is_made(postgres, tmp_path):
    pg_setup(postgres, 2)
    with postgres.connect() as connection, connection.cursor() as cursor:
        cursor.execute("create table shop.notes (note text)")
    args = ["--dsn", postgres.dsn, "--tables", "shop.items,shop.notes", "--slot", "nokey", "--out",
            str(tmp_path / "out"), "--state", str(tmp_path / "state.json")]
    result = capture("postgres", *args)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "table shop.notes has no primary key: a mirror needs one to merge on" in result.stderr
    with postgres.connect() as connection, connection.cursor() as cursor:
        cursor.execute("select count(*) from pg_replication_slots")
        assert cursor.fetchone() == (0,)
    assert not (tmp_path / "out").exists() and not (tmp_path / "state.json").exists()


def test_the_stream_starts_once_the_slot_s_last_holder_is_gone(postgres):
    """A capture started again right after one died finds the slot still streaming to the old
    server process: it waits for that stream to end instead of failing, and fails with the
    server's error if the slot stays held."""
    import threading

    import psycopg2
    import psycopg2.extras

    from python_jobs.capture.postgres_connection import start_replication_when_free

    admin = postgres.connect()
    admin.autocommit = True
    with admin.cursor() as cursor:
        cursor.execute("select pg_create_logical_replication_slot('held', 'wal2json')")

    def replication_cursor():
        connection = psycopg2.connect(postgres.dsn, connection_factory=psycopg2.extras.LogicalReplicationConnection)
        return connection, connection.cursor()

    holder, holding = replication_cursor()
    holding.start_replication(slot_name="held", decode=False)
    waiting, cursor = replication_cursor()
    with pytest.raises(psycopg2.Error, match="is active for PID"):
        start_replication_when_free(cursor, "held", wait_seconds=1.0, decode=False)

    threading.Timer(1.0, holder.close).start()
    started = time.monotonic()
    start_replication_when_free(cursor, "held", wait_seconds=30.0, decode=False)
    assert time.monotonic() - started >= 0.9
    with admin.cursor() as check:
        check.execute("select active_pid from pg_replication_slots where slot_name = 'held'")
        assert check.fetchone()[0] == waiting.get_backend_pid()
    waiting.close()
    admin.close()
