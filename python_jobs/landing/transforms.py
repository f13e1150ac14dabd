"""Pure DataFrame -> DataFrame steps of the landing job."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, IntegerType, StructField, StructType, TimestampType

from python_jobs.formats import detect as formats, records
from python_jobs.landing.schemas import (
    INPUT_LINE_SCHEMA,
    JVM_PARSED_EVENT_SCHEMA,
    PARSED_LINE_SCHEMA,
    QUARANTINE_SCHEMA,
    RAW_EVENT_SCHEMA,
)


# What parse_cdc_lines gives: the line, then each of its outputs.
PARSED_LINES_SCHEMA = StructType([
    *(field for field in INPUT_LINE_SCHEMA.fields if field.name != "not_utf8"),
    StructField("line_entry", IntegerType(), False),
    *PARSED_LINE_SCHEMA.fields,
])

NOT_UTF8_REASON = "not valid UTF-8: bytes that are no UTF-8 character are shown as U+FFFD in raw_text"


def split_lines(files: DataFrame) -> DataFrame:
    """(landed_file, content) -> (landed_file, landed_line, line_text, not_utf8), lines counted from 1.

    Splitting decodes the file's bytes, and bytes that are not UTF-8 become U+FFFD: a line would
    land with its text silently changed. So a file whose bytes do not survive decoding marks its
    lines that hold U+FFFD as not_utf8 (they are quarantined); a file that is valid UTF-8, the
    usual case, costs one comparison.
    """
    file_is_utf8 = F.col("content").cast("binary") == F.encode(F.col("content"), "UTF-8")
    # Its own select, below the explode: next to it, Spark would compute it again for every line.
    return files.select("landed_file", "content", file_is_utf8.alias("file_is_utf8")).select(
        "landed_file",
        "file_is_utf8",
        F.posexplode(F.split(F.col("content"), "\n")).alias("line_index", "line_text"),
    ).select(
        "landed_file",
        (F.col("line_index") + 1).cast("int").alias("landed_line"),
        "line_text",
        (~F.col("file_is_utf8") & F.col("line_text").contains("\ufffd")).alias("not_utf8"),
    )


def _not_utf8(lines: DataFrame) -> Column:
    """split_lines' mark; lines made some other way (tests, benchmarks) are text already."""
    return F.col("not_utf8") if "not_utf8" in lines.columns else F.lit(False)


def parse_cdc_lines(
    lines: DataFrame, key_columns: Mapping[str, Sequence[str]], format_name: str = "auto"
) -> DataFrame:
    """One row per parsed output of every line: its events (a Canal line may hold many), or its
    single status (blank, tombstone, ignored, rejected) with the reason; line_entry counts the
    outputs of a line from 0."""
    parse = line_parser(key_columns, format_name)
    parse_udf = F.udf(parse, ArrayType(PARSED_LINE_SCHEMA), useArrow=True)
    return lines.select(
        "landed_file", "landed_line", "line_text",
        F.posexplode(parse_udf("line_text", _not_utf8(lines))).alias("line_entry", "parsed"),
    ).select("landed_file", "landed_line", "line_text", "line_entry", "parsed.*")


def lines_in_driver(lines: DataFrame) -> list[tuple]:
    """lines (split_lines) collected as INPUT_LINE_SCHEMA tuples."""
    return [tuple(line) for line in lines.select("landed_file", "landed_line", "line_text", _not_utf8(lines).alias("not_utf8")).collect()]


def parsed_lines(lines: Sequence[tuple], key_columns: Mapping[str, Sequence[str]], format_name: str = "auto") -> list[tuple]:
    """parse_cdc_lines in the driver, by the UDF's own function, for a few lines (INPUT_LINE_SCHEMA
    tuples): PARSED_LINES_SCHEMA tuples, no Python worker."""
    parse = line_parser(key_columns, format_name)
    return [
        (landed_file, landed_line, line_text, entry, *parsed)
        for landed_file, landed_line, line_text, not_utf8 in lines
        for entry, parsed in enumerate(parse(line_text, not_utf8))
    ]


def line_parser(key_columns: Mapping[str, Sequence[str]], format_name: str) -> Callable[[str, bool], list[tuple]]:
    """(line_text, not_utf8) -> the line's outputs as PARSED_LINE_SCHEMA tuples."""
    keys = {table: list(columns) for table, columns in key_columns.items()}
    fields = [field.name for field in PARSED_LINE_SCHEMA.fields]

    def parse(line_text: str, not_utf8: bool) -> list[tuple]:
        found = (
            [records.ParsedLine(records.STATUS_REJECTED, reason=NOT_UTF8_REASON)]
            if not_utf8 else formats.parse_line(line_text, keys, format_name)
        )
        return [tuple(getattr(parsed, name) for name in fields) for parsed in found]

    return parse


def parse_in_jvm(lines: DataFrame, jvm_debezium_parser: str) -> DataFrame:
    """lines plus in_jvm: the event the JVM fast path (io.register_jvm_parser) parsed from a common
    Debezium line, else null. line_text is kept only where in_jvm is null: those lines go to
    parse_cdc_lines, and only a quarantined line needs its text."""
    in_jvm = F.when(~_not_utf8(lines), F.call_udf(jvm_debezium_parser, F.col("line_text").cast("binary")))
    return lines.withColumn("in_jvm", in_jvm).withColumn(
        "line_text", F.when(F.col("in_jvm").isNull(), F.col("line_text"))
    )


def left_for_python(marked: DataFrame) -> DataFrame:
    """The lines parse_in_jvm did not parse, as split_lines returns them."""
    return marked.where(F.col("in_jvm").isNull()).select(
        *(name for name in INPUT_LINE_SCHEMA.fieldNames() if name in marked.columns)
    )


def parsed_in_jvm(marked: DataFrame) -> DataFrame:
    """The events parse_in_jvm parsed, in parse_cdc_lines' shape (line_text null)."""
    values = {
        "status": F.lit(records.STATUS_EVENT),
        **{name: F.col(f"in_jvm.{name}") for name in JVM_PARSED_EVENT_SCHEMA.fieldNames()},
    }
    return marked.where(F.col("in_jvm").isNotNull()).select(
        "landed_file",
        "landed_line",
        "line_text",
        F.lit(0).alias("line_entry"),
        *(
            values.get(field.name, F.lit(None)).cast(field.dataType).alias(field.name)
            for field in PARSED_LINE_SCHEMA.fields
        ),
    )


def events_parsed_in_jvm(lines: DataFrame, jvm_debezium_parser: str) -> DataFrame:
    """Only the events the JVM fast path parses from lines, in parse_cdc_lines' shape (line_text
    null); the other lines are dropped.

    The function runs once per line: its result goes through a one-element array into a column of
    its own, which parsed_in_jvm filters (a filter on the call would run it again). No higher-order
    function (`filter(array(...), ...)`): Spark interprets those, and with one the whole stage ran
    0.3 s slower per 1M lines (BENCHMARKS.md, "Applied since (9)")."""
    in_jvm = F.array(F.when(~_not_utf8(lines), F.call_udf(jvm_debezium_parser, F.col("line_text").cast("binary"))))
    return parsed_in_jvm(
        lines.select(
            "landed_file",
            "landed_line",
            F.lit(None).cast("string").alias("line_text"),
            F.explode(in_jvm).alias("in_jvm"),
        )
    )


@dataclass(frozen=True)
class BatchPlace:
    """Where a landing batch stands in the order of landed files (docs/ordering.md): when it
    started (ms, as the checkpoint records it) and each file's rank in it."""

    started_ms: int
    file_ranks: Mapping[str, int]
    # Each file's modification time (ms) when the batch listed it: a file that changed or went
    # away since may not have been read as it was listed (files_changed_since_listed).
    listed_ms: Mapping[str, int] = field(default_factory=dict)


def with_line_place(parsed: DataFrame, place: BatchPlace) -> DataFrame:
    """Events whose format carries no log position (seq records.line_ordered_seq) get the line's
    place appended to seq: the batch, the file's rank in it, the line, the output of the line."""
    ranks = F.create_map(*(F.lit(part) for item in sorted(place.file_ranks.items()) for part in item))
    rank = F.coalesce(
        F.element_at(ranks, F.col("landed_file")),
        F.raise_error(F.concat(F.lit("landing: file not in its batch's checkpoint entry: "), F.col("landed_file"))),
    )
    line_place = F.concat_ws(
        ".",
        F.col("seq"),
        F.lit(f"{place.started_ms:015d}"),
        F.lpad(rank.cast("string"), 6, "0"),
        F.lpad(F.col("landed_line").cast("string"), 10, "0"),
        F.lpad(F.col("line_entry").cast("string"), 10, "0"),
    )
    return parsed.withColumn(
        "seq", F.when(F.col("seq").startswith(records.LINE_ORDERED_PREFIX), line_place).otherwise(F.col("seq"))
    )


def landed_events(parsed: DataFrame, landed_at: dt.datetime, place: BatchPlace) -> DataFrame:
    """Rows for the raw table: every line the parser accepted as a change event."""
    events = parsed.where(F.col("status") == records.STATUS_EVENT)
    return with_line_place(events, place).selectExpr(*_columns_of(RAW_EVENT_SCHEMA, landed_at))


def quarantined_records(parsed: DataFrame, landed_at: dt.datetime) -> DataFrame:
    """Rows for the quarantine table: every rejected or ignored line with its reason."""
    return (
        parsed.where(F.col("status").isin(records.STATUS_REJECTED, records.STATUS_IGNORED))
        .withColumnRenamed("line_text", "raw_text")
        .selectExpr(*_columns_of(QUARANTINE_SCHEMA, landed_at))
    )


def _columns_of(schema: StructType, landed_at: dt.datetime) -> list[str]:
    """The schema's columns in order and types, as SQL expressions for one selectExpr (built as
    Columns, each cost several calls into the JVM: 0.1-0.2 s of a small landing); all but source_ts
    and landed_at come as they are. landed_at as PySpark's lit() takes a datetime."""
    derived = {
        "source_ts": "timestamp_millis(`source_ts_ms`)",
        "landed_at": f"timestamp_micros({TimestampType().toInternal(landed_at)})",
    }
    return [
        f"cast({derived.get(field.name, _quoted(field.name))} as {field.dataType.simpleString()}) as {_quoted(field.name)}"
        for field in schema.fields
    ]


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


# The integers a Databend VARIANT holds exactly: int64 and uint64.
_VARIANT_INTEGERS = (-(2**63), 2**64 - 1)
# A JSON string (skipped as it is) or a JSON number.
_JSON_STRING_OR_NUMBER = re.compile(r'"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?')


def fractional_numbers_quoted(text: str | None) -> str | None:
    """'{"amount":140026108793032.65}' -> '{"amount":"140026108793032.65"}'.

    Databend's VARIANT keeps integers of 64 bits exactly (int64 and uint64) but stores other numbers
    as float64 (10000000000000000000000000000000000002 as 1e37); as strings they stay exact, and the
    mirror's cast reads either form. So every number with a fraction or an exponent, and every
    integer beyond 64 bits, is quoted.
    """
    if text is None:
        return None

    def quote(match: re.Match) -> str:
        token = match.group(0)
        if token.startswith('"'):
            return token
        if not any(mark in token for mark in ".eE") and _within_64_bits(token):
            return token
        return f'"{token}"'

    return _JSON_STRING_OR_NUMBER.sub(quote, text)


def _within_64_bits(integer: str) -> bool:
    """Whether an integer's text is an int64 or a uint64 (the length first: int() refuses texts
    of thousands of digits)."""
    digits = len(integer.lstrip("-"))
    if digits != 19 and digits != 20:
        return digits < 19
    return _VARIANT_INTEGERS[0] <= int(integer) <= _VARIANT_INTEGERS[1]


def exact_numbers_for_variant(events: DataFrame, jvm_quoter: str | None = None) -> DataFrame:
    """Raw events for a Databend raw table: fractional numbers of the images as strings.

    jvm_quoter: the registered JVM function that does the same (io.register_jvm_number_quoter);
    without it a Python UDF quotes every image.
    """
    if jvm_quoter:
        return events.withColumns({column: F.call_function(jvm_quoter, column) for column in ("raw_data", "before_data")})
    quote_udf = F.pandas_udf(lambda texts: texts.map(fractional_numbers_quoted, na_action="ignore"), "string")
    return events.withColumns({column: quote_udf(column) for column in ("raw_data", "before_data")})
