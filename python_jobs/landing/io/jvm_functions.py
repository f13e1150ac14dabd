"""The parsers' jar (built by `make` from jvm/src) and its functions registered in a Spark session:
the Debezium fast path (which also takes the PostgreSQL capture's record lines) and the
fractional-number quoter for the Databend sink."""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Mapping, Sequence

from py4j.java_gateway import JavaClass
from pyspark.sql import SparkSession

from python_jobs.landing.schemas import JVM_PARSED_EVENT_SCHEMA

log = logging.getLogger("cdc_merge")

# The landing job's JVM parsers, built by `make` from jvm/src (docs/landing.md, "The JVM fast path").
PARSERS_JAR = Path(__file__).parent.parent.parent / "jars" / "cdc-merge-parsers.jar"
JVM_DEBEZIUM_PARSER = "cdc_merge_debezium_fast"
JVM_DEBEZIUM_PARSER_CLASS = "cdc_merge.DebeziumFastParser"
JVM_NUMBER_QUOTER = "cdc_merge_fractional_numbers_quoted"
JVM_NUMBER_QUOTER_CLASS = "cdc_merge.FractionalNumbersQuoted"


def parsers_jar() -> str:
    """The parsers' jar: $CDC_MERGE_PARSERS_JAR, or the one `make jvm` builds; empty turns the JVM functions off."""
    return os.environ.get("CDC_MERGE_PARSERS_JAR", str(PARSERS_JAR))


def register_jvm_parser(spark: SparkSession, key_columns: Mapping[str, Sequence[str]], format_name: str = "auto") -> str | None:
    """Register the JVM Debezium fast path for these key columns in the session: the function's
    name, or None (with a warning) when neither its jar nor its class (spark-submit --jars) is there.
    It also takes the PostgreSQL capture's record lines when the landing's format (format_name) is
    "auto" or "debezium", whose Python parsers read them alongside Debezium's lines (formats/detect.py).

    $CDC_MERGE_PARSERS_JAR overrides the jar; set it to an empty value to parse every line in Python.
    """
    jar = parsers_jar()
    if not jar:
        return None
    # The keys travel inside the function: as an argument they would be decoded for every line.
    keys = json.dumps({table: list(columns) for table, columns in key_columns.items()}, sort_keys=True)
    takes_record_lines = format_name in ("auto", "debezium")
    name = f"{JVM_DEBEZIUM_PARSER}_{hashlib.sha1(f'{keys} {takes_record_lines}'.encode()).hexdigest()[:12]}"
    if spark.catalog.functionExists(name):
        return name
    parser_class = _parsers_jar_class(spark, jar, JVM_DEBEZIUM_PARSER_CLASS, "parsing every line in Python, 6-7x slower")
    if parser_class is None:
        return None
    return_type = spark._jsparkSession.parseDataType(JVM_PARSED_EVENT_SCHEMA.json())
    spark._jsparkSession.udf().register(name, parser_class(keys, takes_record_lines), return_type)
    return name


def register_jvm_number_quoter(spark: SparkSession) -> str | None:
    """Register the JVM version of transforms.fractional_numbers_quoted: its name, or None (with
    a warning) when the parsers' jar is missing or turned off, as for register_jvm_parser."""
    jar = parsers_jar()
    if not jar:
        return None
    if spark.catalog.functionExists(JVM_NUMBER_QUOTER):
        return JVM_NUMBER_QUOTER
    quoter_class = _parsers_jar_class(spark, jar, JVM_NUMBER_QUOTER_CLASS, "quoting fractional numbers for Databend in Python")
    if quoter_class is None:
        return None
    spark._jsparkSession.udf().register(JVM_NUMBER_QUOTER, quoter_class(), spark._jsparkSession.parseDataType('"string"'))
    return JVM_NUMBER_QUOTER


def _parsers_jar_class(spark: SparkSession, jar: str, class_name: str, fallback: str):
    """A class of the parsers' jar (added to the session first), or None with a warning saying
    what happens instead."""
    # Added once a session: again, Spark warned that it had been added already, in every landing's output.
    if os.path.isfile(jar) and not _jar_added(spark, jar):
        spark.sql(f"add jar '{jar}'")
    java_class = functools.reduce(getattr, class_name.split("."), spark._jvm)
    if not isinstance(java_class, JavaClass) and os.path.isfile(jar):
        # `add jar` shows the jar's classes to the JVM thread it ran on (its context class loader), and
        # py4j looks classes up on this Python thread's own JVM thread: dbt runs each invocation's
        # models on new threads. The session's jar class loader holds every jar added.
        spark._jvm.java.lang.Thread.currentThread().setContextClassLoader(spark._jsparkSession.sharedState().jarClassLoader())
        java_class = functools.reduce(getattr, class_name.split("."), spark._jvm)
    if not isinstance(java_class, JavaClass):
        log.warning("%s not found and %s is not on the classpath (build the jar with 'make jvm'): %s",
                    jar, class_name, fallback)
        return None
    return java_class


def _jar_added(spark: SparkSession, jar: str) -> bool:
    """Whether the session's context already serves a jar of this file's name."""
    listed = str(spark.sparkContext._jsc.sc().listJars().mkString("\n")).splitlines()
    return any(entry.rsplit("/", 1)[-1] == os.path.basename(jar) for entry in listed)
