"""Py4J answers without Nagle's delay.

The JVM writes its answer to a Python call on the calling thread's socket. An answer of more than
about 8 KB goes in several segments, and the last one waits for the acknowledgement of the others,
which Linux's receiver delays by up to 40 ms: a call returning a raw table's snapshot log (300
snapshots, 17 KB) took 44 ms instead of about 1 ms. py4j does not set TCP_NODELAY on its sockets, so it
is set here on the JVM side of the calling thread's connection, through Java reflection: with
PySpark's pinned threads each Python thread has its own connection, served by a JVM thread of its
own whose Runnable is that connection.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from python_jobs.landing.io.py4j_lookups import kept_class

log = logging.getLogger("cdc_merge.py4j")

_thread = threading.local()
# The reflective handles, the same for every connection of a session's gateway: found once.
_handles_lock = threading.Lock()
_handles: dict = {}


def answer_without_delay(spark: Any) -> bool:
    """Sets TCP_NODELAY on the JVM's socket of this thread's connection, once per thread and session
    (four calls into the JVM; the fields are looked up once). False where the JVM does not allow it
    (the calls then work as before)."""
    if getattr(_thread, "session", None) is spark:
        return _thread.done
    _thread.session, _thread.done = spark, False
    try:
        with _handles_lock:
            if _handles.get("session") is not spark:
                jvm = spark._jvm
                target = jvm.java.lang.Class.forName("java.lang.Thread").getDeclaredField("target")
                target.setAccessible(True)
                _handles.clear()
                _handles.update(session=spark, thread_class=kept_class("java.lang.Thread", spark._sc._gateway._gateway_client),
                                target=target, socket=None)
        connection = _handles["target"].get(_handles["thread_class"].currentThread())
        if connection is None:
            return False
        with _handles_lock:
            if _handles["socket"] is None:
                socket_field = connection.getClass().getDeclaredField("socket")
                socket_field.setAccessible(True)
                _handles["socket"] = socket_field
        _handles["socket"].get(connection).setTcpNoDelay(True)
        _thread.done = True
    except Exception as error:  # noqa: BLE001 - another py4j or JVM: each large answer may wait 40 ms
        log.debug("py4j socket left with Nagle's algorithm: %s", str(error).splitlines()[0][:300])
    return _thread.done


def java_thread_class(spark: Any) -> Any:
    """java.lang.Thread as answer_without_delay found it for the session (looked up now if it has not)."""
    answer_without_delay(spark)
    return _handles.get("thread_class") if _handles.get("session") is spark else spark._jvm.java.lang.Thread
