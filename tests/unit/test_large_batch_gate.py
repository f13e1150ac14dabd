"""The large-batch gate: small chunks never wait; a large one waits for another thread's large one."""

from __future__ import annotations

import threading
import time

from python_jobs.apply.large_batch_gate import LargeBatchGate


def test_small_chunks_pass_without_holding_the_gate():
    gate = LargeBatchGate(large_events=100)
    assert gate.enter(99) is False
    assert not gate.held


def test_a_thread_holding_the_gate_enters_again_and_releases_once():
    gate = LargeBatchGate(large_events=100)
    assert gate.enter(100) is True
    assert gate.enter(5) is True  # its next chunk, small or not
    gate.release_held()
    assert not gate.held
    gate.release_held()  # nothing held: nothing happens


def test_a_second_large_chunk_waits_until_the_first_mirror_ends():
    gate = LargeBatchGate(large_events=100)
    gate.enter(1_000)
    order = []

    def other_mirror():
        gate.enter(1_000)
        order.append("other entered")
        gate.release_held()

    thread = threading.Thread(target=other_mirror)
    thread.start()
    time.sleep(0.05)
    order.append("first released")
    gate.release_held()
    thread.join(timeout=5)
    assert order == ["first released", "other entered"]


def test_a_thread_cannot_release_what_another_holds():
    gate = LargeBatchGate(large_events=100)
    gate.enter(1_000)
    thread = threading.Thread(target=gate.release_held)
    thread.start()
    thread.join()
    assert gate.held
    gate.release_held()
    assert not gate.held
