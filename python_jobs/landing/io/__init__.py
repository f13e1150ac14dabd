"""Every read and write of the landing job, in one package, one module per concern:

    session.py        the Spark session with the Iceberg catalog; settings held for a block of work;
                      rows of the driver as a local relation
    jvm_functions.py  the parsers' jar and its functions (the Debezium fast path, the number quoter)
    input_files.py    new input files in micro-batches, and each batch's place from the checkpoint;
                      a small batch's lines read in the driver
    checkpoint_table.py  which raw table a checkpoint's files went into (its UUID)
    sinks.py          the raw and quarantine tables in Iceberg or Databend, each batch appended once
    errors.py         LandingError
    py4j_socket.py    py4j's answers without Nagle's delay
    py4j_lookups.py   py4j's look-ups of classes and static methods, kept

The landing job and its tests use them through this package (`from python_jobs.landing import io`).
"""

from python_jobs.landing.io.checkpoint_table import TableIdentity, claim_raw_table
from python_jobs.landing.io.errors import LandingError
from python_jobs.landing.io.input_files import (
    batch_place,
    claim_checkpoint,
    files_changed_since_listed,
    finish_moves,
    input_file_count,
    input_scan_conf,
    latest_planned_batch,
    lines_of_local_files,
    move_landed_files,
    read_new_files,
    require_readable_folder,
    run_available_batches,
    warn_of_a_long_listing,
)
from python_jobs.landing.io.jvm_functions import (
    JVM_DEBEZIUM_PARSER,
    JVM_DEBEZIUM_PARSER_CLASS,
    JVM_NUMBER_QUOTER,
    JVM_NUMBER_QUOTER_CLASS,
    PARSERS_JAR,
    parsers_jar,
    register_jvm_number_quoter,
    register_jvm_parser,
)
from python_jobs.landing.io.session import (
    CATALOG,
    ICEBERG_JAR_NAME,
    ICEBERG_MAVEN_COORDINATES,
    default_warehouse,
    iceberg_helper_jar,
    iceberg_jar,
    iceberg_spark_conf,
    local_file_system_conf,
    local_file_system_jar,
    local_relation,
    require_java,
    session_conf,
    spark_session,
    uncompressed_cache,
)
from python_jobs.landing.io.sinks import (
    LANDING_BATCH_PROPERTY,
    DatabendSink,
    IcebergSink,
    append_once,
    local_warehouse,
    require_tables,
    sink_for,
)

__all__ = [
    "LandingError", "TableIdentity", "claim_raw_table",
    "batch_place", "claim_checkpoint", "files_changed_since_listed", "finish_moves", "input_file_count", "input_scan_conf", "latest_planned_batch", "lines_of_local_files", "move_landed_files", "read_new_files", "require_readable_folder", "run_available_batches", "warn_of_a_long_listing",
    "JVM_DEBEZIUM_PARSER", "JVM_DEBEZIUM_PARSER_CLASS", "JVM_NUMBER_QUOTER", "JVM_NUMBER_QUOTER_CLASS",
    "PARSERS_JAR", "parsers_jar", "register_jvm_number_quoter", "register_jvm_parser",
    "CATALOG", "ICEBERG_JAR_NAME", "ICEBERG_MAVEN_COORDINATES", "default_warehouse", "iceberg_jar",
    "iceberg_spark_conf", "iceberg_helper_jar", "local_file_system_conf", "local_file_system_jar", "local_relation", "require_java", "session_conf", "spark_session", "uncompressed_cache",
    "LANDING_BATCH_PROPERTY", "DatabendSink", "IcebergSink", "append_once", "local_warehouse", "require_tables", "sink_for",
]
