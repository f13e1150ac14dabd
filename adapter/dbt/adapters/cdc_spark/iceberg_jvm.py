"""The cdc_merge apply's Java helpers for Iceberg (jvm/iceberg/cdc_merge/iceberg/), in dbt's own
SparkSession: deletes by position (position_deletes.py) and the key range check below."""

import os
import threading
from typing import Any, Optional

from dbt.adapters.events.logging import AdapterLogger

from python_jobs.landing.io.py4j_lookups import keep_jvm_lookups, kept_class
from python_jobs.landing.io.py4j_socket import answer_without_delay, java_thread_class
from python_jobs.landing.io.session import iceberg_helper_jar

logger = AdapterLogger("cdc_spark")

KEY_RANGES_CLASS = "cdc_merge.iceberg.KeyRanges"


def jar_path() -> str:
    """Built by `make jvm` against the Iceberg runtime jar into this package's jars/;
    $CDC_MERGE_ICEBERG_JVM_JAR overrides it and an empty value turns the helpers off (the apply then
    deletes with a MERGE and keeps every key range)."""
    return iceberg_helper_jar()


# Per process, for one session and jar: the class loader ADD JAR left on the first JVM thread that
# added the jar (the session's jar class loader, holding it), and the classes found there (None: not found).
_process_lock = threading.Lock()
_process: dict = {}
# Per Python thread (py4j pins each to a JVM thread of its own): the session and jar that thread's JVM
# thread loads classes with.
_thread = threading.local()


def jvm_class(spark: Any, class_name: str) -> Optional[Any]:
    """The JVM class, its jar added to the session first; None when the jar is missing or turned off."""
    from py4j.java_gateway import JavaClass

    # The helpers' answers (snapshot logs, stored rows) are often larger than 8 KB (py4j_socket.py).
    answer_without_delay(spark)
    keep_jvm_lookups(spark)
    jar = jar_path()
    if not jar:
        return None
    if getattr(_thread, "jar", None) != jar or getattr(_thread, "session", None) is not spark:
        # Once per thread: each dbt thread calls from a JVM thread of its own, whose context class
        # loader must see the jar (py4j finds a static method's class through it). The first thread
        # adds the jar; a later one (dbt starts new threads every invocation) is given the loader
        # ADD JAR left, one call instead of a statement parsed and run (tens of ms per thread).
        with _process_lock:
            if _process.get("jar") != jar or _process.get("session") is not spark:
                _process.clear()
                _process.update(jar=jar, session=spark, loader=None, found={})
                if os.path.isfile(jar):
                    spark.sql(f"add jar '{jar}'")
                    _process["loader"] = java_thread_class(spark).currentThread().getContextClassLoader()
            elif _process["loader"] is not None:
                java_thread_class(spark).currentThread().setContextClassLoader(_process["loader"])
        _thread.jar, _thread.session = jar, spark
    found = _process["found"]
    if class_name not in found:
        # Looked up by its packages once: py4j looks each package up on the whole classpath.
        java_class = spark._jvm
        for part in class_name.split("."):
            java_class = getattr(java_class, part)
        if not isinstance(java_class, JavaClass):
            logger.warning(f"{jar} not found (build it with 'make jvm'): cdc_merge applies without its Iceberg helpers")
        # Kept with its methods (py4j_lookups.py): each call names a method the JVM would be asked about again.
        found[class_name] = kept_class(class_name, spark._sc._gateway._gateway_client) if isinstance(java_class, JavaClass) else None
    return found[class_name]


def key_range_skips_files(spark: Any, table: str, column: str, lower: str, upper: str) -> Optional[bool]:
    """Whether a read of table filtered by lower <= column <= upper skips any of its data files;
    None when the helpers are not available."""
    java_class = jvm_class(spark, KEY_RANGES_CLASS)
    if java_class is None:
        return None
    return java_class.skipsDataFiles(spark._jsparkSession, table, column, lower, upper)
