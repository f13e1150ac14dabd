"""Every read and write of the landing job: Spark session, input files, Iceberg tables."""

from __future__ import annotations

import contextlib
import functools
import glob
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence

from py4j.java_gateway import JavaClass
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from python_jobs.landing.schemas import JVM_PARSED_EVENT_SCHEMA, QUARANTINE_SCHEMA, RAW_EVENT_SCHEMA
from python_jobs.landing.transforms import BatchPlace

log = logging.getLogger("cdc_merge")

CATALOG = "lake"
ICEBERG_JAR_NAME = "iceberg-spark-runtime-3.5_2.12-1.10.2.jar"
ICEBERG_MAVEN_COORDINATES = "org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.2"
# The landing job's JVM parsers, built by `make` from jvm/src (README, Landing speed).
PARSERS_JAR = Path(__file__).parent.parent / "jars" / "cdc-merge-parsers.jar"
JVM_DEBEZIUM_PARSER = "cdc_merge_debezium_fast"
JVM_DEBEZIUM_PARSER_CLASS = "cdc_merge.DebeziumFastParser"
JVM_NUMBER_QUOTER = "cdc_merge_fractional_numbers_quoted"
JVM_NUMBER_QUOTER_CLASS = "cdc_merge.FractionalNumbersQuoted"
# Iceberg writes snapshot-property.* write options into the snapshot summary.
LANDING_BATCH_PROPERTY = "cdc-merge.landing-batch"


class LandingError(RuntimeError):
    """The landing job cannot start; the message says what to do."""


def require_java() -> None:
    """Spark 3.5 needs Java 17+ here; say so before the JVM fails obscurely."""
    java_home = os.environ.get("JAVA_HOME")
    java = shutil.which("java", path=os.path.join(java_home, "bin")) if java_home else shutil.which("java")
    if java is None:
        raise LandingError("Java 17 or newer is required (no 'java' on PATH or in JAVA_HOME)")
    version = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    major = version.split('"')[1].split(".")[0] if '"' in version else "0"
    if not major.isdigit() or int(major) < 17:
        raise LandingError(f"Java 17 or newer is required, found: {version.splitlines()[0] if version else java}")


def iceberg_jar() -> str:
    """The Iceberg runtime jar: $CDC_MERGE_ICEBERG_JAR, else the one shipped by snowpark-connect-deps-iceberg."""
    configured = os.environ.get("CDC_MERGE_ICEBERG_JAR")
    if configured:
        return configured
    import snowpark_connect_deps_iceberg

    package_dir = os.path.dirname(snowpark_connect_deps_iceberg.__file__)
    found = glob.glob(os.path.join(package_dir, "jars", ICEBERG_JAR_NAME))
    if not found:
        raise LandingError(
            f"{ICEBERG_JAR_NAME} not found under {package_dir}; install snowpark-connect-deps-iceberg==1.0.2 "
            f"or set CDC_MERGE_ICEBERG_JAR (or CDC_MERGE_ICEBERG_PACKAGES={ICEBERG_MAVEN_COORDINATES})"
        )
    return found[0]


def iceberg_spark_conf(warehouse: str) -> dict[str, str]:
    """Session settings for the local Iceberg catalog; profiles/profiles.yml sets the same ones."""
    conf = {
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        f"spark.sql.catalog.{CATALOG}": "org.apache.iceberg.spark.SparkCatalog",
        f"spark.sql.catalog.{CATALOG}.type": "hadoop",
        f"spark.sql.catalog.{CATALOG}.warehouse": warehouse,
        # Always see other writers' commits (the landing job, another dbt run).
        f"spark.sql.catalog.{CATALOG}.cache-enabled": "false",
        "spark.sql.defaultCatalog": CATALOG,
        "spark.sql.catalogImplementation": "in-memory",
        "spark.sql.session.timeZone": "UTC",
        # Spark's default heap is 1 GB; applying a 1M-event batch to a 10M-row mirror peaks near 5 GB.
        "spark.driver.memory": os.environ.get("CDC_MERGE_DRIVER_MEMORY", "6g"),
        # Batch work, not pauses, matters here: the parallel collector landed 1M events 15-20% faster
        # than G1 (the default) and applied a 1M-event batch 7% faster (BENCHMARKS.md).
        "spark.driver.extraJavaOptions": "-XX:+UseParallelGC",
        "spark.sql.shuffle.partitions": "4",
        "spark.ui.enabled": "false",
    }
    packages = os.environ.get("CDC_MERGE_ICEBERG_PACKAGES")
    if packages:
        conf["spark.jars.packages"] = packages
    else:
        conf["spark.jars"] = iceberg_jar()
    return conf


def default_warehouse() -> str:
    return os.path.abspath(os.environ.get("CDC_MERGE_WAREHOUSE", "warehouse"))


def spark_session(app_name: str = "cdc_merge", warehouse: str | None = None) -> SparkSession:
    """The active session (spark-submit, dbt) or a local one with the Iceberg catalog."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    require_java()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name).master(os.environ.get("CDC_MERGE_SPARK_MASTER", "local[2]"))
    for name, value in iceberg_spark_conf(warehouse or default_warehouse()).items():
        builder = builder.config(name, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def parsers_jar() -> str:
    """The parsers' jar: $CDC_MERGE_PARSERS_JAR, or the one `make jvm` builds; empty turns the JVM functions off."""
    return os.environ.get("CDC_MERGE_PARSERS_JAR", str(PARSERS_JAR))


def register_jvm_parser(spark: SparkSession, key_columns: Mapping[str, Sequence[str]]) -> str | None:
    """Register the JVM Debezium fast path for these key columns in the session: the function's
    name, or None (with a warning) when neither its jar nor its class (spark-submit --jars) is there.

    $CDC_MERGE_PARSERS_JAR overrides the jar; set it to an empty value to parse every line in Python.
    """
    jar = parsers_jar()
    if not jar:
        return None
    # The keys travel inside the function: as an argument they would be decoded for every line.
    keys = json.dumps({table: list(columns) for table, columns in key_columns.items()}, sort_keys=True)
    name = f"{JVM_DEBEZIUM_PARSER}_{hashlib.sha1(keys.encode()).hexdigest()[:12]}"
    if spark.catalog.functionExists(name):
        return name
    parser_class = _parsers_jar_class(spark, jar, JVM_DEBEZIUM_PARSER_CLASS, "parsing every line in Python, 6-7x slower")
    if parser_class is None:
        return None
    return_type = spark._jsparkSession.parseDataType(JVM_PARSED_EVENT_SCHEMA.json())
    spark._jsparkSession.udf().register(name, parser_class(keys), return_type)
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
    if os.path.isfile(jar):
        spark.sql(f"add jar '{jar}'")
    java_class = functools.reduce(getattr, class_name.split("."), spark._jvm)
    if not isinstance(java_class, JavaClass):
        log.warning("%s not found and %s is not on the classpath (build the jar with 'make jvm'): %s",
                    jar, class_name, fallback)
        return None
    return java_class


@contextlib.contextmanager
def session_conf(spark: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """The settings hold in the session inside, and are put back after."""
    before = {name: spark.conf.get(name, None) for name in settings}
    for name, value in settings.items():
        spark.conf.set(name, value)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                spark.conf.unset(name)
            else:
                spark.conf.set(name, value)


def uncompressed_cache(spark: SparkSession):
    """DataFrames persisted and first computed inside are cached uncompressed.

    The landing job caches each batch for one or two reads; compressing the strings costs more
    than reading them twice (BENCHMARKS.md, landing).
    """
    return session_conf(spark, {"spark.sql.inMemoryColumnarStorage.compressed": "false"})


def input_scan_conf(spark: SparkSession) -> dict[str, str]:
    """Settings for reading a batch's input files (BENCHMARKS.md, landing).

    The file source lists each batch's files again, in a Spark job when there are more than 32;
    the input folder is local, so listing in the driver saves that job (0.25 s a batch). At least
    four read tasks per core: a 1M-event batch was read in 5 tasks, so on 2 cores one core idled
    through the third wave.
    """
    return {
        "spark.sql.sources.parallelPartitionDiscovery.threshold": str(2**31 - 1),
        "spark.sql.files.minPartitionNum": str(4 * spark.sparkContext.defaultParallelism),
    }


def require_tables(spark: SparkSession, raw_table: str, quarantine_table: str) -> None:
    """The raw and quarantine tables come from dbt's DDL macros; check they match our schemas."""
    for table, schema in ((raw_table, RAW_EVENT_SCHEMA), (quarantine_table, QUARANTINE_SCHEMA)):
        if not spark.catalog.tableExists(table):
            raise LandingError(
                f"table {table} does not exist: create it with "
                "'dbt run-operation create_raw_tables' (make demo does this)"
            )
        actual = [(f.name, f.dataType) for f in spark.table(table).schema.fields]
        expected = [(f.name, f.dataType) for f in schema.fields]
        if actual != expected:
            raise LandingError(f"table {table} has columns {actual}, expected {expected}")


def read_new_files(spark: SparkSession, input_dir: Path, max_files_per_batch: int, file_glob: str) -> DataFrame:
    """Stream of whole files not landed before (the checkpoint remembers which were).

    Spark skips names starting with '.' or '_': writers should write under such a
    name and rename when the file is complete.
    """
    if not input_dir.is_dir():
        raise LandingError(f"input folder {input_dir} does not exist")
    return (
        spark.readStream.format("text")
        .option("wholetext", "true")
        .option("maxFilesPerTrigger", max_files_per_batch)
        .option("pathGlobFilter", file_glob)
        .load(str(input_dir))
        .select(F.col("_metadata.file_path").alias("landed_file"), F.col("value").alias("content"))
    )


def run_available_batches(
    files: DataFrame, checkpoint_dir: Path, land_batch: Callable[[DataFrame, str, BatchPlace, bool], None]
) -> None:
    """Land every file present now, one micro-batch at a time, then stop.

    land_batch gets the batch, its tag, its place in the order of landed files, and whether an
    earlier run may have tried it.
    """
    planned_before = latest_planned_batch(checkpoint_dir)

    def on_batch(batch: DataFrame, batch_id: int) -> None:
        # The query id lives in the checkpoint, so a retried batch gets the same tag.
        query_id = batch.sparkSession.sparkContext.getLocalProperty("sql.streaming.queryId")
        land_batch(batch, f"{query_id}/{batch_id}", batch_place(checkpoint_dir, batch_id), batch_id <= planned_before)

    # The file source reads the settings of the session that made `files`, at each batch.
    with session_conf(files.sparkSession, input_scan_conf(files.sparkSession)):
        query = (
            files.writeStream.foreachBatch(on_batch)
            .option("checkpointLocation", str(checkpoint_dir))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()


def batch_place(checkpoint_dir: Path, batch_id: int) -> BatchPlace:
    """A micro-batch's place in the order of landed files, as the checkpoint recorded it when
    the batch was planned, so a retried batch gets the same one: the batch's start time
    (offsets/<id>), and its files ranked by (modification time, path), the order in which the
    file source picks files (sources/0/<id>, or the <id>.compact file that holds it)."""
    offsets = (checkpoint_dir / "offsets" / str(batch_id)).read_text().splitlines()
    started_ms = json.loads(offsets[1])["batchTimestampMs"]
    source_log = checkpoint_dir / "sources" / "0"
    entries_file = source_log / str(batch_id)
    if not entries_file.exists():
        entries_file = source_log / f"{batch_id}.compact"
    entries = [json.loads(line) for line in entries_file.read_text().splitlines()[1:] if line.strip()]
    files = sorted((entry["timestamp"], entry["path"]) for entry in entries if entry["batchId"] == batch_id)
    if not files:
        raise LandingError(f"checkpoint {checkpoint_dir} lists no files for micro-batch {batch_id} in {entries_file}")
    # The log writes local paths as file:///x, Spark's _metadata.file_path as file:/x.
    return BatchPlace(started_ms, {_FILE_URI.sub(r"\1:/", path): rank for rank, (_, path) in enumerate(files)})


_FILE_URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):///")


def latest_planned_batch(checkpoint_dir: Path) -> int:
    """The highest micro-batch id the checkpoint holds offsets for; -1 for a new checkpoint.

    A restarted query runs that batch again when its commit is missing; every later batch is
    planned by the run itself, so no earlier run can have tried it.
    """
    offsets = checkpoint_dir / "offsets"
    planned = [int(entry.name) for entry in offsets.iterdir() if entry.name.isdigit()] if offsets.is_dir() else []
    return max(planned, default=-1)


def append_once(df: DataFrame, table: str, batch_tag: str, may_be_retry: bool = True) -> bool:
    """Append df in one Iceberg commit tagged with batch_tag, unless a commit with that tag exists.

    A micro-batch that dies after this commit is run again with the same tag,
    so the tag check is what keeps a file from being landed twice. A batch no earlier run
    tried (may_be_retry false) skips the check, a query of the table's snapshots (0.1-0.2 s).
    """
    spark = df.sparkSession
    already = may_be_retry and spark.sql(
        f"select 1 from {table}.snapshots where summary['{LANDING_BATCH_PROPERTY}'] = '{batch_tag}' limit 1"
    ).count()
    if already:
        log.info("%s: batch %s was committed before; not appending again", table, batch_tag)
        return False
    df.writeTo(table).option(f"snapshot-property.{LANDING_BATCH_PROPERTY}", batch_tag).append()
    return True


class IcebergSink:
    """The raw and quarantine tables in the Spark session's Iceberg catalog."""

    # Each commit carries its own tag, so one batch may land in several commits.
    tags_each_commit = True

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark

    def require_tables(self, raw_table: str, quarantine_table: str) -> None:
        require_tables(self.spark, raw_table, quarantine_table)

    def append_once(
        self, df: DataFrame, table: str, batch_tag: str, batch_files: list[str], may_be_retry: bool = True
    ) -> bool:
        return append_once(df, table, batch_tag, may_be_retry)


class DatabendSink:
    """The raw and quarantine tables in Databend, loaded in bulk.

    Spark writes a batch as Parquet into a folder the server can read, and one COPY INTO
    per table loads it atomically. The input files of a batch land together or not at
    all, so a batch whose files are already in the table was committed before: a retried
    micro-batch is not loaded twice.
    """

    # A load is known by its input files: one batch must be one load per table.
    tags_each_commit = False

    def __init__(self, dsn_env: str, stage_dir: Path) -> None:
        import databend_driver

        dsn = os.environ.get(dsn_env)
        if not dsn:
            raise LandingError(
                f"sink databend: set {dsn_env} to the Databend DSN, e.g. databend://root:@localhost:8000/?sslmode=disable"
            )
        try:
            self.connection = databend_driver.BlockingDatabendClient(dsn).get_conn()
        except Exception as error:
            raise LandingError(f"sink databend: cannot connect with ${dsn_env}: {error}") from None
        self.stage_dir = stage_dir

    def require_tables(self, raw_table: str, quarantine_table: str) -> None:
        for table, schema in ((raw_table, RAW_EVENT_SCHEMA), (quarantine_table, QUARANTINE_SCHEMA)):
            database, name = table.split(".")
            rows = self.connection.query_all(
                f"select name from system.columns where database = '{database}' and table = '{name}'"
            )
            actual = sorted(row.values()[0] for row in rows)
            if not actual:
                raise LandingError(
                    f"table {table} does not exist in Databend: create it with "
                    "'dbt run-operation create_raw_tables --target <your databend target>'"
                )
            if actual != sorted(field.name for field in schema.fields):
                raise LandingError(f"table {table} has columns {actual}, expected {schema.fieldNames()}")

    def append_once(
        self, df: DataFrame, table: str, batch_tag: str, batch_files: list[str], may_be_retry: bool = True
    ) -> bool:
        if may_be_retry and self._holds_any(table, batch_files):
            log.info("%s: batch %s was loaded before; not loading again", table, batch_tag)
            return False
        folder = self.stage_dir / table / batch_tag.replace("/", "-")
        spark = df.sparkSession
        # INT96, Spark's default, is not a timestamp to other readers.
        spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
        df.write.mode("overwrite").parquet(str(folder))
        self.connection.exec(
            f"copy into {table} from 'fs://{folder}/' pattern = '.*[.]parquet' "
            "file_format = (type = parquet) force = true"
        )
        shutil.rmtree(folder, ignore_errors=True)
        return True

    def _holds_any(self, table: str, landed_files: list[str]) -> bool:
        quoted = ", ".join("'" + name.replace("'", "''") + "'" for name in landed_files)
        (count,) = self.connection.query_row(f"select count(*) from {table} where landed_file in ({quoted})").values()
        return int(count) > 0


def sink_for(config, spark: SparkSession) -> IcebergSink | DatabendSink:
    if config.sink == "databend":
        return DatabendSink(config.databend_dsn_env, config.databend_stage_dir)
    return IcebergSink(spark)
