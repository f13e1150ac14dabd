"""Schemas of every table and intermediate DataFrame the landing job touches."""

from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

# The source transaction of an event, where its format says (python_jobs/formats/transactions.py).
TRANSACTION_FIELDS = [
    StructField("tx_id", StringType()),
    StructField("tx_order", LongType()),
    StructField("tx_events", LongType()),
]

# One row per file found in the input folder.
INPUT_FILE_SCHEMA = StructType(
    [
        StructField("landed_file", StringType()),
        StructField("content", StringType()),
    ]
)

# One row per line of an input file; landed_line counts from 1; not_utf8: the line's bytes are
# not UTF-8 (transforms.split_lines).
INPUT_LINE_SCHEMA = StructType(
    [
        StructField("landed_file", StringType()),
        StructField("landed_line", IntegerType()),
        StructField("line_text", StringType()),
        StructField("not_utf8", BooleanType()),
    ]
)

# What a format parser returns for each output of a line (python_jobs.formats.records.ParsedLine).
PARSED_LINE_SCHEMA = StructType(
    [
        StructField("status", StringType()),
        StructField("table_name", StringType()),
        StructField("key", StringType()),
        StructField("action", StringType()),
        StructField("raw_data", StringType()),
        StructField("before_data", StringType()),
        StructField("seq", StringType()),
        StructField("source_ts_ms", LongType()),
        StructField("reason", StringType()),
        *TRANSACTION_FIELDS,
    ]
)

# What the JVM fast path (jvm/src/cdc_merge/DebeziumFastParser.java) returns for a line it parses:
# PARSED_LINE_SCHEMA's fields of an event without status and reason, the row images as the
# line's UTF-8 bytes.
JVM_PARSED_EVENT_SCHEMA = StructType(
    [
        StructField(field.name, BinaryType() if field.name in ("raw_data", "before_data") else field.dataType)
        for field in PARSED_LINE_SCHEMA.fields
        if field.name not in ("status", "reason")
    ]
)

# The raw table; keep in step with macros/raw_tables.sql (tests/test_landing.py checks).
RAW_EVENT_SCHEMA = StructType(
    [
        StructField("table_name", StringType()),
        StructField("key", StringType()),
        StructField("action", StringType()),
        StructField("raw_data", StringType()),
        StructField("before_data", StringType()),
        StructField("seq", StringType()),
        StructField("source_ts", TimestampType()),
        StructField("landed_file", StringType()),
        StructField("landed_line", IntegerType()),
        StructField("landed_at", TimestampType()),
        # Last, as ALTER TABLE adds them to a raw table created before them (io/sinks.py).
        *TRANSACTION_FIELDS,
    ]
)

QUARANTINE_SCHEMA = StructType(
    [
        StructField("landed_file", StringType()),
        StructField("landed_line", IntegerType()),
        StructField("raw_text", StringType()),
        StructField("reason", StringType()),
        StructField("landed_at", TimestampType()),
    ]
)
