"""Source faults for the MariaDB capture, on a real server: it restarts mid-stream, the output folder
is full, the password is wrong. Each ends with a clear error and no traceback, and the next run
resumes without loss (the PostgreSQL capture's: test_capture_faults.py, whose helpers these share)."""

from __future__ import annotations

import json
import shutil
import signal
from pathlib import Path

from test_capture_faults import (  # noqa: F401 - mariadb is a fixture
    capture,
    captured_ids,
    following_capture,
    ids_moved_on_and_left,
    mariadb,
    SECRET,
    positions,
    restart,
    small_filesystem,
    stopped,
    wait_for,
)


def my_setup(mariadb, rows: int) -> None:
    connection = mariadb.connect(autocommit=True)
    with connection.cursor() as cursor:
        cursor.execute("create database shop")
        cursor.execute("create table shop.items (id bigint primary key, note text)")
        cursor.executemany("insert into shop.items values (%s, %s)", [(i, f"row {i}") for i in range(1, rows + 1)])
    connection.close()


def my_insert(mariadb, first: int, last: int) -> None:
    connection = mariadb.connect(autocommit=True)
    with connection.cursor() as cursor:
        cursor.executemany("insert into shop.items values (%s, %s)", [(i, "x" * 200) for i in range(first, last + 1)])
    connection.close()


def my_args(mariadb, tmp_path: Path, out: Path | None = None) -> list[str]:
    return ["--host", "127.0.0.1", "--port", str(mariadb.port), "--user", "root", "--tables", "shop.items",
            "--out", str(out or tmp_path / "out"), "--state", str(tmp_path / "state.json")]


def test_mariadb_restart_mid_stream_is_waited_out_by_a_following_capture(mariadb, tmp_path):
    my_setup(mariadb, 20)
    assert capture("mysql", *my_args(mariadb, tmp_path)).returncode == 0
    with following_capture("mysql", *my_args(mariadb, tmp_path), "--max-wait-seconds", "0.3") as following:
        my_insert(mariadb, 21, 40)
        wait_for(lambda: 40 in captured_ids(tmp_path / "out"))
        restart(mariadb, signal.SIGTERM, 'mysqld.pid')
        my_insert(mariadb, 41, 60)
        wait_for(lambda: 60 in captured_ids(tmp_path / "out"))
        assert following.poll() is None  # still running
        stderr = stopped(following)
    assert "Traceback" not in stderr

    ids = captured_ids(tmp_path / "out")
    assert sorted(set(ids)) == list(range(1, 61))
    # A repeated event is one delivered twice at its own position (harmless to the mirrors): no key
    # has two different positions for one change.
    changes = set(zip(positions(tmp_path / "out"), ids))
    assert len(changes) == 60


def test_mariadb_capture_into_a_full_folder_fails_clearly_and_the_next_run_loses_nothing(mariadb, tmp_path):
    my_setup(mariadb, 5)
    out = tmp_path / "small"
    with small_filesystem(out) as refusal:
        assert capture("mysql", *my_args(mariadb, tmp_path, out)).returncode == 0
        my_insert(mariadb, 6, 400)
        result = capture("mysql", *my_args(mariadb, tmp_path, out))
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert f"cannot write {out}" in result.stderr and refusal in result.stderr
        assert not list(out.glob(".*partial"))
        for path in out.glob("*.json"):
            shutil.move(str(path), tmp_path / path.name)
    result = capture("mysql", *my_args(mariadb, tmp_path, out))
    assert result.returncode == 0, result.stderr
    assert sorted(ids_moved_on_and_left(tmp_path, out)) == list(range(1, 401))


def test_mariadb_wrong_password_is_a_clear_error_that_never_prints_it(mariadb, tmp_path):
    my_setup(mariadb, 2)
    connection = mariadb.connect(autocommit=True)
    with connection.cursor() as cursor:
        cursor.execute(f"create user cdc@'127.0.0.1' identified by '{SECRET}'")
        cursor.execute("grant replication slave, replication client, reload, select on *.* to cdc@'127.0.0.1'")
    connection.close()
    args = [arg if arg != "root" else "cdc" for arg in my_args(mariadb, tmp_path)]

    wrong = capture("mysql", *args, env={"MYSQL_PWD": SECRET + "-not"})
    right = capture("mysql", *args, env={"MYSQL_PWD": SECRET})

    assert wrong.returncode == 2 and "Access denied for user 'cdc'" in wrong.stderr
    assert "the password in MYSQL_PWD" in wrong.stderr and "Traceback" not in wrong.stderr
    assert right.returncode == 0, right.stderr
    assert sorted(captured_ids(tmp_path / "out")) == [1, 2]
    for result in (wrong, right):
        assert SECRET not in result.stdout + result.stderr
    assert not any(SECRET in path.read_text() for path in tmp_path.rglob("*") if path.is_file())


def test_a_second_capture_on_one_state_file_waits_then_stops_naming_the_first(mariadb, tmp_path):
    """Two cdc-runs started on one project run two captures of one state file: the binlog has no slot
    that keeps the second out, and both wrote the state through one partial file (the second stopped
    with a FileNotFoundError traceback, or the state was left mixed of both). The second waits for
    the state's lock (CDC_MERGE_LOCK_WAIT), then stops naming the first, which streams on."""
    my_setup(mariadb, 20)
    out = tmp_path / "out"
    assert capture("mysql", *my_args(mariadb, tmp_path)).returncode == 0
    with following_capture("mysql", *my_args(mariadb, tmp_path), "--max-wait-seconds", "0.05") as first:
        my_insert(mariadb, 21, 30)
        wait_for(lambda: 30 in captured_ids(out))
        second = capture("mysql", *my_args(mariadb, tmp_path), "--max-wait-seconds", "0.05", follow=True,
                         env={"CDC_MERGE_LOCK_WAIT": "2"})
        try:
            my_insert(mariadb, 31, 200)
            _, stderr = second.communicate(timeout=60)
        finally:
            if second.poll() is None:
                second.kill()
        assert second.returncode == 2, stderr
        assert f"is in use by a capture (pid {first.pid} on" in stderr and "Traceback" not in stderr, stderr
        my_insert(mariadb, 201, 210)
        wait_for(lambda: 210 in captured_ids(out))
        assert first.poll() is None
        stopped(first)
    assert sorted(set(captured_ids(out))) == list(range(1, 211))
    assert json.loads((tmp_path / "state.json").read_text())


def test_a_transaction_of_a_table_not_captured_leaves_the_newest_commit_written(mariadb, tmp_path):
    """The state's newest commit is what cdc-verify --state waits to see landed (verify/in_flight.py). A
    transaction of another table moved it, and lands nothing, so every check called every mirror behind."""
    my_setup(mariadb, 5)
    connection = mariadb.connect(autocommit=True)
    with connection.cursor() as cursor:
        cursor.execute("create table shop.other (id int primary key)")
    assert capture("mysql", *my_args(mariadb, tmp_path)).returncode == 0
    state = tmp_path / "state.json"
    following_state = lambda: json.loads(state.read_text()).get("following") or {}  # noqa: E731
    with following_capture("mysql", *my_args(mariadb, tmp_path), "--max-wait-seconds", "0.3") as following:
        my_insert(mariadb, 6, 6)
        wait_for(lambda: 6 in captured_ids(tmp_path / "out") and following_state().get("newest_commit_ms"))
        written = following_state()
        with connection.cursor() as cursor:
            cursor.execute("insert into shop.other values (1)")
        wait_for(lambda: following_state().get("position") != written["position"])
        assert following_state()["newest_commit_ms"] == written["newest_commit_ms"]
        stopped(following)
    connection.close()
