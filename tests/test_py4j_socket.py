"""Py4J answers without Nagle's delay (python_jobs/landing/io/py4j_socket.py), in a real
SparkSession: the JVM's socket of each calling thread's connection gets TCP_NODELAY, and calls
still answer as before."""

from __future__ import annotations

import threading

from python_jobs.landing.io.py4j_socket import answer_without_delay


def jvm_socket_no_delay(spark) -> bool:
    """TCP_NODELAY of the JVM's socket serving the calling thread, read by the same reflection."""
    jvm = spark._jvm
    target = jvm.java.lang.Class.forName("java.lang.Thread").getDeclaredField("target")
    target.setAccessible(True)
    connection = target.get(jvm.java.lang.Thread.currentThread())
    field = connection.getClass().getDeclaredField("socket")
    field.setAccessible(True)
    return field.get(connection).getTcpNoDelay()


def test_each_threads_connection_answers_without_delay(spark):
    seen = {}

    def in_thread():
        seen["before"] = jvm_socket_no_delay(spark)
        seen["set"] = answer_without_delay(spark)
        seen["after"] = jvm_socket_no_delay(spark)
        seen["answer"] = spark._jvm.java.lang.StringBuilder("x" * 50_000).toString()

    # A new Python thread has a connection of its own, which nothing has set yet.
    thread = threading.Thread(target=in_thread)
    thread.start()
    thread.join()

    assert seen["before"] is False
    assert seen["set"] is True and seen["after"] is True
    assert seen["answer"] == "x" * 50_000
    assert answer_without_delay(spark) is True and jvm_socket_no_delay(spark) is True
