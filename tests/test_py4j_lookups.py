"""Py4J's look-ups kept (python_jobs/landing/io/py4j_lookups.py), in a real SparkSession: PySpark's
functions ask the JVM nothing but the call once their class and method are known; fields, packages
and names not found are asked every time; answers are the same. And the adapter's application id
(loaded_tables.application_id), asked once per SparkContext."""

from __future__ import annotations

import threading
from contextlib import contextmanager

from py4j.java_gateway import JavaPackage
from pyspark.sql import functions as F

from python_jobs.landing.io.py4j_lookups import KeptClassesView, KeptMembersClass, keep_jvm_lookups

REFLECTION = "r\n"  # py4j's reflection commands: what a name is, what a class's member is


@contextmanager
def commands_sent(spark):
    """Every command the calling thread sends the JVM while the block runs. Py4J's finalizer thread
    sends the deletes of objects Python collected whenever it gets to them: not counted."""
    client = spark.sparkContext._gateway._gateway_client
    sent: list[str] = []
    send = client.send_command
    caller = threading.get_ident()

    def counting(command, *args, **kwargs):
        if threading.get_ident() == caller:
            sent.append(command)
        return send(command, *args, **kwargs)

    client.send_command = counting
    try:
        yield sent
    finally:
        del client.send_command


def test_pyspark_functions_ask_only_for_the_call_once_known(spark):
    keep_jvm_lookups(spark)  # the session fixture's spark_session did it already: doing it again changes nothing
    assert type(spark.sparkContext._jvm) is KeptClassesView
    F.col("warm"), F.lit(1)

    with commands_sent(spark) as sent:
        for index in range(50):
            F.col(f"c{index}"), F.lit(index)
    assert len(sent) == 100 and not [command for command in sent if command.startswith(REFLECTION)]

    # The answers are what Spark gives for them.
    assert spark.range(3).select((F.col("id") + F.lit(10)).alias("v")).collect() == [(10,), (11,), (12,)]
    assert isinstance(spark._jvm.functions, KeptMembersClass)
    assert spark._jvm.functions._fqn == "org.apache.spark.sql.functions"


def test_fields_packages_and_unknown_names_are_asked_every_time(spark):
    jvm = spark.sparkContext._jvm
    integer = jvm.Integer  # java.lang.Integer: py4j's view imports java.lang.*
    assert integer.MAX_VALUE == 2**31 - 1 and "MAX_VALUE" not in integer.__dict__
    assert isinstance(jvm.cdc_merge_no_such_package, JavaPackage) and "cdc_merge_no_such_package" not in jvm.__dict__
    assert integer.valueOf("7") == 7
    with commands_sent(spark) as sent:
        integer.MAX_VALUE
        jvm.cdc_merge_no_such_package
        integer.valueOf  # a static method: kept
    assert [command.split("\n")[1] for command in sent] == ["m", "u"]


def test_threads_share_the_kept_classes(spark):
    """The kept class answers every thread (py4j pins each Python thread to a JVM thread of its own)."""
    answers = []

    def in_thread(index):
        answers.append(spark.range(index, index + 1).select(F.col("id").cast("string").alias("s")).first()[0])

    threads = [threading.Thread(target=in_thread, args=(index,)) for index in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(answers) == ["0", "1", "2", "3"]


def test_a_scala_objects_instance_is_kept_as_the_builder_asks_for_it(spark):
    from pyspark.sql import SparkSession

    module = getattr(spark._jvm, "SparkSession$")
    instance = getattr(module, "MODULE$")
    with commands_sent(spark) as sent:
        assert getattr(module, "MODULE$") is instance
        assert SparkSession.builder.getOrCreate() is spark
    assert not [command for command in sent if command.startswith(REFLECTION)]


def test_the_application_id_is_asked_of_the_jvm_once_per_context(spark):
    """The adapter keys its loaded tables, raw ranges and counts by application (loaded_tables.py)."""
    from dbt.adapters.cdc_spark.loaded_tables import application_id

    assert application_id(spark) == spark.sparkContext.applicationId
    with commands_sent(spark) as sent:
        assert application_id(spark) == application_id(spark)
    assert sent == []
