"""The captures' --follow mode on real servers: changes stream into files within the wait, SIGTERM
stops cleanly, and kill -9 at random points loses no change."""

from __future__ import annotations

import json
import random
import shlex
import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable

import pytest

from test_capture_faults import (  # noqa: F401 - mariadb and postgres are fixtures
    capture,
    captured_ids,
    following_capture,
    mariadb,
    pg_args,
    pg_insert,
    pg_setup,
    postgres,
    stopped,
    wait_for,
)
from python_jobs.capture.postgres_records import file_events
from python_jobs.scheduler.captures import Captures
from test_capture_faults_mariadb import my_args, my_insert, my_setup
from python_jobs.status.status_files import read_capture_status

FOLLOW = ["--max-wait-seconds", "0.3", "--progress-seconds", "0.5"]


@dataclass(frozen=True)
class Source:
    command: str
    setup: Callable
    insert: Callable
    args: Callable
    name: str  # in the progress line


SOURCES = {
    "postgres": Source("postgres", pg_setup, pg_insert, pg_args, "slot faults"),
    "mariadb": Source("mysql", my_setup, my_insert, my_args, "binlog 127.0.0.1"),
}


@pytest.fixture(params=sorted(SOURCES))
def source(request):
    server = request.getfixturevalue(request.param)
    return SOURCES[request.param], server


def events_by_position(out) -> dict[str, list[str]]:
    """Every change event's text by its source position (a position twice: written twice)."""
    found: dict[str, list[str]] = {}
    for path in sorted(out.glob("*.json")):
        for event in file_events(path):
            if "op" in event:
                where = event["source"]
                position = f"{where.get('lsn')}:{where.get('file')}:{where.get('pos')}:{where.get('row')}"
                found.setdefault(position, []).append(json.dumps(
                    {key: event[key] for key in ("before", "after", "op")}, sort_keys=True))
    return found


def test_follow_streams_each_commit_within_its_wait_and_stops_on_sigterm(source, tmp_path):
    kind, server = source
    kind.setup(server, 10)
    assert capture(kind.command, *kind.args(server, tmp_path)).returncode == 0
    with following_capture(kind.command, *kind.args(server, tmp_path), *FOLLOW) as following:
        waits = []
        for first in range(11, 111, 20):
            committed = time.monotonic()
            kind.insert(server, first, first + 19)
            wait_for(lambda: first + 19 in captured_ids(tmp_path / "out"), timeout=30)
            waits.append(time.monotonic() - committed)
        time.sleep(1.2)  # a progress line's interval, twice
        stderr = stopped(following)
    assert "Traceback" not in stderr
    assert f"following {kind.name}" in stderr and ": 100 changes in 5 transactions" in stderr, stderr
    assert "changes/s" in stderr and "behind the server" in stderr
    assert max(waits) < 5, waits  # each commit in a file within seconds (0.3 s wait, a busy machine)
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["following"]["changes"] == 100 and state["following"]["transactions"] == 5
    # Its status file says it stopped: cdc-status showed the last "connected" of a capture no longer running.
    status = read_capture_status("capture", tmp_path / "state.json")
    assert (status.connected, status.running, status.changes) == (False, False, 100), status
    # PostgreSQL's stream writes these inserts as the server sent them (postgres_records.py).
    records = sum(line.startswith('{"commit_lsn":') for path in (tmp_path / "out").glob("*.json")
                  for line in path.read_text().splitlines())
    assert records == (100 if kind.command == "postgres" else 0)

    # Recorded as it went: a catch-up run afterwards writes nothing again.
    kind.insert(server, 111, 115)
    assert capture(kind.command, *kind.args(server, tmp_path)).returncode == 0
    assert sorted(captured_ids(tmp_path / "out")) == list(range(1, 116))  # each once


def test_a_capture_asked_before_a_run_writes_what_it_holds_at_once(source, tmp_path):
    """cdc-run asks its captures before each run (SIGUSR1, roll_requests.py): the changes they hold are
    in a file when roll() returns, not --max-wait-seconds later; a command that did not announce that
    it answers is not sent the signal (it would end it)."""
    kind, server = source
    kind.setup(server, 10)
    assert capture(kind.command, *kind.args(server, tmp_path)).returncode == 0
    following = shlex.join([sys.executable, "-m", f"python_jobs.capture.{kind.command}", *kind.args(server, tmp_path),
                            "--max-wait-seconds", "120"])
    silent = shlex.join([sys.executable, "-c", "import time; time.sleep(120)"])
    captures = Captures([following, silent], ended=threading.Event())
    captures.start()
    try:
        wait_for(lambda: captures.running[0].rolls_on_request, timeout=60)
        assert not captures.running[1].rolls_on_request
        captures.roll()  # nothing held: answered at once
        assert captures.running[0].answers == 1
        kind.insert(server, 11, 30)
        committed = time.monotonic()
        # The server streams the commit within moments; each roll() writes what had come by then.
        while 30 not in captured_ids(tmp_path / "out"):
            assert time.monotonic() - committed < 20, "the changes waited for --max-wait-seconds"
            captures.roll(timeout=5)
        assert sorted(captured_ids(tmp_path / "out")) == list(range(1, 31))
        assert all(capture.process.poll() is None for capture in captures.running)
    finally:
        captures.stop(timeout=30)
    assert captures.running[0].process.returncode == 0 and not captures.failed()
    assert sorted(captured_ids(tmp_path / "out")) == list(range(1, 31))  # nothing written twice on the way out


def test_follow_killed_at_random_points_loses_no_change(source, tmp_path):
    kind, server = source
    kind.setup(server, 0)
    assert capture(kind.command, *kind.args(server, tmp_path)).returncode == 0
    chance = random.Random(7)
    inserted = 0
    for _ in range(4):
        following = capture(kind.command, *kind.args(server, tmp_path), *FOLLOW, follow=True)
        try:
            for _ in range(chance.randint(3, 8)):
                kind.insert(server, inserted + 1, inserted + 50)
                inserted += 50
                time.sleep(chance.uniform(0, 0.3))
            time.sleep(chance.uniform(0, 1.0))
        finally:
            following.kill()  # SIGKILL, wherever it is
            following.wait(timeout=30)
    result = capture(kind.command, *kind.args(server, tmp_path))  # the catch-up run takes the rest
    assert result.returncode == 0, result.stderr

    assert sorted(set(captured_ids(tmp_path / "out"))) == list(range(1, inserted + 1))
    # A change is in a file twice only when a kill fell between its file and the recorded position:
    # then it is the same event (same position, same images), which the landing writes once.
    written = events_by_position(tmp_path / "out")
    assert all(len(set(texts)) == 1 for texts in written.values())


def slot_confirmed(postgres) -> int:
    with postgres.connect() as connection, connection.cursor() as cursor:
        cursor.execute("select confirmed_flush_lsn - '0/0'::pg_lsn from pg_replication_slots where slot_name = 'faults'")
        return int(cursor.fetchone()[0])


def busy_elsewhere(postgres, seconds: float) -> int:
    """Writes for some seconds into a database the capture does not read; the WAL position after."""
    connection = postgres.connect()
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute("select 1 from pg_database where datname = 'elsewhere'")
        if cursor.fetchone() is None:
            cursor.execute("create database elsewhere")
    connection.close()
    other = postgres.connect(dbname="elsewhere")
    other.autocommit = True
    with other.cursor() as cursor:
        cursor.execute("create table if not exists busy (id serial primary key, note text)")
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            cursor.execute("insert into busy (note) select repeat('x', 500) from generate_series(1, 200)")
        cursor.execute("select pg_current_wal_lsn() - '0/0'::pg_lsn")
        position = int(cursor.fetchone()[0])
    other.close()
    return position


def test_the_slot_advances_while_only_other_databases_write(postgres, tmp_path):
    """Heartbeats (docs/online_snapshots.md): no captured change for a while, another database busy;
    the slot's confirmed position still passes that WAL, following and in a run without --follow."""
    pg_setup(postgres, 5)
    assert capture("postgres", *pg_args(postgres, tmp_path)).returncode == 0
    files = sorted((tmp_path / "out").glob("*.json"))

    written_to = busy_elsewhere(postgres, 2)
    assert slot_confirmed(postgres) < written_to - 1_000_000  # megabytes of WAL the slot holds
    assert capture("postgres", *pg_args(postgres, tmp_path)).returncode == 0
    assert slot_confirmed(postgres) >= written_to

    with following_capture("postgres", *pg_args(postgres, tmp_path), *FOLLOW, "--heartbeat-seconds", "0.5") as following:
        written_to = busy_elsewhere(postgres, 2)
        wait_for(lambda: slot_confirmed(postgres) >= written_to, timeout=30)
        stopped(following)
    assert sorted((tmp_path / "out").glob("*.json")) == files  # heartbeats write no file
