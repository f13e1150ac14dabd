"""What giving a new dbt thread the helpers' class loader saves (adapter/dbt/adapters/cdc_spark/
iceberg_jvm.py): the demo's cycles, landing included, alternating with the loader given and the
classes kept for the process, and without (each new thread runs ADD JAR as a statement and looks
each class up by its packages again, as before), in one process with one SparkSession; maintenance
cycles left out of both medians.

    .venv/bin/python -m benchmarks.apply.jar_loader [--cycles 24]

Writes benchmarks/results/jar_loader.json and .log.
"""

from __future__ import annotations

import contextlib
import threading

from benchmarks.common import demo_ab
from benchmarks.common.results import RESULTS_DIR


def jvm_class_per_thread(spark, class_name, per_thread=threading.local()):
    """iceberg_jvm.jvm_class as it was: ADD JAR and the class look-ups in every new thread."""
    import os

    from py4j.java_gateway import JavaClass

    from dbt.adapters.cdc_spark import iceberg_jvm

    iceberg_jvm.answer_without_delay(spark)
    iceberg_jvm.keep_jvm_lookups(spark)
    jar = iceberg_jvm.jar_path()
    if getattr(per_thread, "session", None) is not spark:
        per_thread.session, per_thread.found = spark, {}
        if os.path.isfile(jar):
            spark.sql(f"add jar '{jar}'")
    if class_name not in per_thread.found:
        java_class = spark._jvm
        for part in class_name.split("."):
            java_class = getattr(java_class, part)
        per_thread.found[class_name] = (iceberg_jvm.kept_class(class_name, spark._sc._gateway._gateway_client)
                                        if isinstance(java_class, JavaClass) else None)
    return per_thread.found[class_name]


@contextlib.contextmanager
def added_per_thread():
    """The baseline, in every module that calls jvm_class."""
    import sys

    from dbt.adapters.cdc_spark import iceberg_jvm

    original = iceberg_jvm.jvm_class
    modules = [module for name, module in list(sys.modules.items())
               if name.startswith("dbt.adapters.cdc_") and getattr(module, "jvm_class", None) is original]
    for module in modules:
        module.jvm_class = jvm_class_per_thread
    try:
        yield
    finally:
        for module in modules:
            module.jvm_class = original


def main(argv: list[str] | None = None) -> int:
    return demo_ab.alternate(__doc__.split("\n\n")[0], argv, RESULTS_DIR / "jar_loader.json",
                             "loader_given", "added_per_thread", added_per_thread)


if __name__ == "__main__":
    raise SystemExit(main())
