"""The embedded catalog's commit lock (FileLockManager.java) holds across processes: Iceberg's Hadoop
catalog commits a table by checking that the next version's metadata file does not exist and
renaming its own into place, and a local file system's rename replaces a file that appeared in
between. With only one JVM's lock, two processes committing one version at the same instant both
succeeded and one commit was lost (1 of 3,000 appends from two processes at once:
reliability/catalog_commits.py, RELIABILITY.md). Another process here takes the same OS lock
(fcntl, as the JVM's FileChannel lock is on Linux)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

HOLDER = """
import fcntl, sys, time
with open(sys.argv[1], "a") as handle:
    fcntl.lockf(handle, fcntl.LOCK_EX)
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""
TRY = """
import fcntl, sys
with open(sys.argv[1], "a") as handle:
    try:
        fcntl.lockf(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        print("taken")
    except OSError:
        print("busy")
"""


def _manager(spark):
    manager = spark._jvm.cdc_merge.iceberg.FileLockManager()
    manager.initialize(spark._jvm.java.util.HashMap())
    return manager


def test_a_commit_lock_the_jvm_holds_is_held_for_other_processes(spark, tmp_path):
    entity = f"{tmp_path}/metadata/v2.metadata.json"
    manager = _manager(spark)
    lock_file = spark._jvm.cdc_merge.iceberg.FileLockManager.lockFile(entity)

    assert manager.acquire(entity, "commit-1")
    while_held = subprocess.run([sys.executable, "-c", TRY, lock_file], capture_output=True, text=True, check=True).stdout
    assert manager.release(entity, "commit-1")
    after = subprocess.run([sys.executable, "-c", TRY, lock_file], capture_output=True, text=True, check=True).stdout

    assert (while_held.strip(), after.strip()) == ("busy", "taken")
    assert not manager.release(entity, "commit-1")  # released once only


def test_a_commit_waits_while_another_process_holds_the_lock(spark, tmp_path):
    entity = f"{tmp_path}/metadata/v3.metadata.json"
    manager = _manager(spark)
    lock_file = spark._jvm.cdc_merge.iceberg.FileLockManager.lockFile(entity)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, lock_file, "1.5"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        assert manager.acquire(entity, "commit-2")
        waited = time.monotonic() - started
        manager.release(entity, "commit-2")
    finally:
        holder.kill()
        holder.wait()
    assert waited > 1.0


def test_threads_of_one_jvm_take_the_lock_in_turn(spark, tmp_path):
    entity = f"{tmp_path}/metadata/v4.metadata.json"
    manager = _manager(spark)
    assert manager.acquire(entity, "first")
    second = []

    def commit() -> None:  # a lock is released by the thread that took it
        second.append(manager.acquire(entity, "second"))
        second.append(manager.release(entity, "second"))

    thread = threading.Thread(target=commit)
    thread.start()
    thread.join(0.5)
    assert thread.is_alive()  # waits for the first
    manager.release(entity, "first")
    thread.join(10)
    assert second == [True, True]
