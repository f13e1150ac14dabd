"""Landing job: append new CDC JSON files to the raw table, bad lines to quarantine.

    cdc-land --config landing.yml
    spark-submit --jars <iceberg jar>,python_jobs/jars/cdc-merge-parsers.jar python_jobs/landing/land.py --config landing.yml

Over 300 lines: a batch's three ways to its commits (the JVM fast path, parsed in the driver, by
Python workers) share their retry and counting rules, so they stay side by side here.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import logging
import sys
import time
from collections import Counter
from pathlib import Path

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.storagelevel import StorageLevel

from python_jobs import crash_points, run_locks
from python_jobs.formats import records
from python_jobs.formats.transactions import ACTION_TX_END
from python_jobs.landing import dbt_target, io, small_batch
from python_jobs.landing.config import ConfigError, LandingConfig, load_config
from python_jobs.landing.schemas import QUARANTINE_SCHEMA
from python_jobs.landing.summary import CHANGED_FILES, TX_ENDS, LandingSummary
from python_jobs.landing.transforms import (
    PARSED_LINES_SCHEMA,
    BatchPlace,
    events_parsed_in_jvm,
    exact_numbers_for_variant,
    landed_events,
    left_for_python,
    lines_in_driver,
    parse_cdc_lines,
    parsed_lines,
    parse_in_jvm,
    parsed_in_jvm,
    quarantined_records,
    split_lines,
)
from python_jobs.status.registry import REGISTRY

log = logging.getLogger("cdc_merge")
# The formats whose lines the JVM fast path may take: Debezium's, and the PostgreSQL capture's
# record lines (captured_wal2json) among them (io.register_jvm_parser).
JVM_PARSED_FORMATS = ("auto", "debezium")
# The lines the JVM fast path leaves (other formats, tombstones, lines to quarantine) are parsed
# in the driver up to this many: a Python worker's job costs more than parsing them there.
MAX_LINES_PARSED_IN_DRIVER = 2_000
# Where python_jobs/crash_points.py may kill the landing: while the raw table's data files are written.
RAW_WRITE = "landing-raw-write"


def land_files(
    files: DataFrame, config: LandingConfig, sink, batch_tag: str, place: BatchPlace, summary: LandingSummary,
    jvm_parser: str | None, jvm_quoter: str | None = None, may_be_retry: bool = True,
) -> None:
    """Parse one micro-batch of files; append its events, and its rejected or ignored lines.

    Into Iceberg with the JVM fast path, the events it parses are appended as it parses them, in
    one commit; the lines it leaves, if any, are parsed in Python and appended in a second one;
    a small batch is parsed whole in the driver instead (small_batch.py). Otherwise the batch's
    events are one commit. Every commit is tagged with the batch, so a
    retried batch (may_be_retry) never appends a line twice. place: the batch's place in the order
    of landed files, which orders the events of formats without a log position.
    """
    append_once = functools.partial(sink.append_once, may_be_retry=may_be_retry)
    started = time.monotonic()
    landed_at = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    counts: Counter = Counter()
    cached: list[DataFrame] = []
    try:
        jvm_path = bool(jvm_parser) and config.format in JVM_PARSED_FORMATS and sink.tags_each_commit
        batch_bytes = small_batch.local_bytes(place.listed_ms)
        if jvm_path and small_batch.parse_in_driver(batch_bytes, batch_tag, may_be_retry,
                                                    functools.partial(sink.committed, config.raw_table)):
            # Read here, not by a Spark job, unless a file is elsewhere or not UTF-8 (split_lines marks its lines).
            lines = io.lines_of_local_files(place.listed_ms)
            parsed = _parsed_in_python(split_lines(files), config, counts, cached, in_driver=True, driver_lines=lines)
            file_count = len(place.listed_ms)
            notes = _changed_file_notes(files.sparkSession, place, landed_at, counts)
            _append_parsed(parsed, counts, config, append_once, batch_tag, place, [], landed_at, jvm_quoter, notes)
        elif jvm_path:
            file_count, left = _append_events_parsed_in_jvm(
                files, config, append_once, batch_tag, place, jvm_parser, landed_at, counts
            )
            if left != 0:
                lines = left_for_python(parse_in_jvm(split_lines(files), jvm_parser))
                left_counts: Counter = Counter()
                parsed = _parsed_in_python(lines.where(F.col("line_text") != ""), config, left_counts, cached,
                                           in_driver=left is not None and left <= MAX_LINES_PARSED_IN_DRIVER)
                _append_parsed(parsed, left_counts, config, append_once, batch_tag, place, [], landed_at, jvm_quoter)
                counts.update(left_counts)
            notes = _changed_file_notes(files.sparkSession, place, landed_at, counts)
            if notes is not None:
                append_once(notes, config.quarantine_table, f"{batch_tag}/files", [])
        else:
            parsed, batch_files = _parse_batch(files, config, jvm_parser, counts, cached)
            file_count = len(batch_files)
            notes = _changed_file_notes(files.sparkSession, place, landed_at, counts)
            _append_parsed(parsed, counts, config, append_once, batch_tag, place, batch_files, landed_at, jvm_quoter,
                           notes)
    finally:
        for df in cached:
            df.unpersist()
    # Committed to the raw table; the streaming checkpoint records the batch after this returns.
    crash_points.crash_point("landing-before-checkpoint")
    elapsed = time.monotonic() - started
    summary.batches += 1
    summary.files += file_count
    summary.bytes += batch_bytes or 0
    summary.counts.update(counts)
    summary.seconds += elapsed
    log.info(
        "batch %s: %d files, %d events, %d quarantined, %d not row changes, %d tombstones, %.1f s",
        batch_tag, file_count, counts[records.STATUS_EVENT], counts[records.STATUS_REJECTED],
        counts[records.STATUS_IGNORED], counts[records.STATUS_TOMBSTONE], elapsed,
    )


def _append_events_parsed_in_jvm(
    files: DataFrame, config: LandingConfig, append_once, batch_tag: str, place: BatchPlace, jvm_parser: str,
    landed_at, counts: Counter,
) -> tuple[int, int | None]:
    """Append the events the JVM fast path parses, in one pass over the files and one commit
    (append_once: the sink's, see land_files).

    Adds what it appended to counts; returns (files, lines left for the Python parsers), both
    unknown (0 files, None lines) when an earlier try of this batch made the commit.
    """
    seen_files, seen_lines, seen_events = Observation("files"), Observation("lines"), Observation("events")
    lines = split_lines(files.observe(seen_files, F.count(F.lit(1)).alias("files"))).observe(
        seen_lines, F.count(F.lit(1)).alias("lines"), F.count_if(F.col("line_text") == "").alias("blank")
    )
    events = events_parsed_in_jvm(lines, jvm_parser).observe(
        seen_events, F.count(F.lit(1)).alias("events"), F.count_if(F.col("action") == ACTION_TX_END).alias("tx_ends")
    )
    tag = batch_tag + small_batch.JVM_COMMIT_SUFFIX
    if not append_once(landed_events(events, landed_at, place), config.raw_table, tag, [], crash_point=RAW_WRITE):
        return 0, None
    line_counts = seen_lines.get
    event_counts = seen_events.get
    counts.update({records.STATUS_EVENT: event_counts["events"], TX_ENDS: event_counts["tx_ends"],
                   records.STATUS_BLANK: line_counts["blank"]})
    return seen_files.get["files"], line_counts["lines"] - line_counts["blank"] - event_counts["events"]


def _parse_batch(
    files: DataFrame, config: LandingConfig, jvm_parser: str | None, counts: Counter, cached: list[DataFrame]
) -> tuple[DataFrame, list[str]]:
    """(parsed lines, input files) of one batch to append in one commit; counts per status go to counts.

    The input is read and parsed once: with the JVM fast path, only the lines it leaves go
    through the Python parsers. Results are cached (appended to cached) for the writes.
    """
    lines = split_lines(files)
    if not jvm_parser or config.format not in JVM_PARSED_FORMATS:
        parsed = _parsed_in_python(lines, config, counts, cached)
        return parsed, [row["landed_file"] for row in files.select("landed_file").collect()]
    with io.uncompressed_cache(files.sparkSession):
        marked = parse_in_jvm(lines, jvm_parser).persist(StorageLevel.MEMORY_AND_DISK)
        cached.append(marked)
        tally = marked.agg(
            F.count("in_jvm").alias("events"),
            F.count_if(F.col("in_jvm.action") == ACTION_TX_END).alias("tx_ends"),
            F.count_if(F.col("line_text") == "").alias("blank"),
            F.count_if(F.col("line_text") != "").alias("left"),
            F.collect_set("landed_file").alias("files"),
        ).first()
    parsed = parsed_in_jvm(marked)
    counts.update({records.STATUS_EVENT: tally["events"], TX_ENDS: tally["tx_ends"], records.STATUS_BLANK: tally["blank"]})
    if tally["left"]:
        lines = left_for_python(marked).where(F.col("line_text") != "")
        in_driver = tally["left"] <= MAX_LINES_PARSED_IN_DRIVER
        parsed = parsed.unionByName(_parsed_in_python(lines, config, counts, cached, in_driver))
    return parsed, sorted(tally["files"])


def _parsed_in_python(
    lines: DataFrame, config: LandingConfig, counts: Counter, cached: list[DataFrame], in_driver: bool = False,
    driver_lines: list[tuple] | None = None,
) -> DataFrame:
    """The lines parsed by the Python parsers, cached (or, in_driver: a few lines, parsed in the
    driver: driver_lines when given, else lines collected); their counts per status go to counts."""
    if in_driver:
        rows = parsed_lines(lines_in_driver(lines) if driver_lines is None else driver_lines, config.key_columns, config.format)
        status, action = (PARSED_LINES_SCHEMA.fieldNames().index(name) for name in ("status", "action"))
        counts.update(row[status] for row in rows)
        counts[TX_ENDS] += sum(row[status] == records.STATUS_EVENT and row[action] == ACTION_TX_END for row in rows)
        return io.local_relation(lines.sparkSession, rows, PARSED_LINES_SCHEMA)
    with io.uncompressed_cache(lines.sparkSession):
        parsed = parse_cdc_lines(lines, config.key_columns, config.format).persist(StorageLevel.MEMORY_AND_DISK)
        cached.append(parsed)
        tx_end = F.coalesce((F.col("status") == records.STATUS_EVENT) & (F.col("action") == ACTION_TX_END), F.lit(False))
        for row in parsed.groupBy("status", tx_end.alias("tx_end")).count().collect():
            counts[row["status"]] += row["count"]
            counts[TX_ENDS] += row["count"] if row["tx_end"] else 0
    return parsed


def _append_parsed(
    parsed: DataFrame, counts: Counter, config: LandingConfig, append_once, batch_tag: str, place: BatchPlace,
    batch_files: list[str], landed_at, jvm_quoter: str | None, notes: DataFrame | None = None,
) -> None:
    """Append the events of parsed to the raw table and its rejected or ignored lines to the
    quarantine with append_once (the sink's, see land_files); counts are parsed's counts per
    status, set to 0 for a commit an earlier try of the batch made; jvm_quoter: see
    exact_numbers_for_variant; notes: quarantine rows of changed files, appended with the lines."""
    if counts[records.STATUS_EVENT]:
        events = landed_events(parsed, landed_at, place)
        if config.sink == "databend":
            events = exact_numbers_for_variant(events, jvm_quoter)
        if not append_once(events, config.raw_table, batch_tag, batch_files, crash_point=RAW_WRITE):
            counts[records.STATUS_EVENT] = counts[TX_ENDS] = 0
    if counts[records.STATUS_REJECTED] or counts[records.STATUS_IGNORED] or notes is not None:
        quarantined = quarantined_records(parsed, landed_at)
        if notes is not None:
            quarantined = quarantined.unionByName(notes)
        if not append_once(quarantined, config.quarantine_table, batch_tag, batch_files):
            counts[records.STATUS_REJECTED] = counts[records.STATUS_IGNORED] = 0


def _changed_file_notes(spark: SparkSession, place: BatchPlace, landed_at, counts: Counter) -> DataFrame | None:
    """Quarantine rows (line 0, no text) for the batch's files that went away or changed after
    they were listed, so a file whose lines were not all landed is never silent; None if none."""
    changed = io.files_changed_since_listed(place)
    if not changed:
        return None
    for name, why in changed:
        log.warning("%s: %s", name, why)
    counts[CHANGED_FILES] += len(changed)
    return spark.createDataFrame([(name, 0, None, why, landed_at) for name, why in changed], QUARANTINE_SCHEMA)


def run(config: LandingConfig, warehouse: str | None = None, spark: SparkSession | None = None,
        databend_dsn: str | None = None) -> LandingSummary:
    started = time.monotonic()
    io.require_readable_folder(config.input_dir)  # before Spark, which would fail with a stack trace
    # One landing per checkpoint at a time (python_jobs/run_locks.py): a second waits, then lands what
    # is left. Taken before Spark starts, so a landing that finds another running stops without a JVM.
    checkpoint = [(run_locks.lock_file("landing", str(config.checkpoint_dir), "checkpoint"),
                   f"the landing checkpoint {config.checkpoint_dir}")]
    try:
        with run_locks.holding(checkpoint):
            spark = spark or io.spark_session("cdc_merge_landing", warehouse)
            sink = io.sink_for(config, spark, databend_dsn)
            io.claim_checkpoint(config.checkpoint_dir, sink.destination(config.raw_table))
            io.finish_moves(config.checkpoint_dir, config.landed_dir)
            sink.require_tables(config.raw_table, config.quarantine_table)
            io.claim_raw_table(config.checkpoint_dir, config.raw_table, sink.identity(config.raw_table))
            jvm_parser = io.register_jvm_parser(spark, config.key_columns, config.format)
            jvm_quoter = io.register_jvm_number_quoter(spark) if config.sink == "databend" else None
            summary = LandingSummary()
            files = io.read_new_files(spark, config.input_dir, config.max_files_per_batch, config.file_glob)
            warehouse = io.local_warehouse(spark) if config.sink != "databend" else None
            # The raw table's maintenance (macros/maintenance/maintain.sql) waits for a later run meanwhile.
            table = [] if warehouse is None else [
                (run_locks.lock_file("table", warehouse, config.raw_table.lower()), f"table {config.raw_table}")]
            landed: list[str] = []

            def land_batch(batch, tag, place, may_be_retry) -> None:
                land_files(batch, config, sink, tag, place, summary, jvm_parser, jvm_quoter, may_be_retry)
                landed.extend(place.listed_ms)

            with run_locks.holding(table):
                io.run_available_batches(files, config.checkpoint_dir, land_batch)
            # Every batch is in the checkpoint now: its files may leave the input folder.
            if config.landed_dir is not None:
                io.move_landed_files(landed, config.landed_dir, config.checkpoint_dir)
    except run_locks.LockBusy as busy:
        raise io.LandingError(str(busy)) from None
    input_files = io.input_file_count(config.input_dir)
    if config.landed_dir is None:
        io.warn_of_a_long_listing(config.input_dir, input_files, config.source_file)
    log.info("%s", summary.line())
    REGISTRY.observe_landing(summary.files, summary.counts[records.STATUS_EVENT],
                             summary.counts[records.STATUS_REJECTED] + summary.counts[records.STATUS_IGNORED], summary.bytes,
                             seconds=time.monotonic() - started, input_files=input_files,
                             transaction_ends=summary.counts[TX_ENDS])
    return summary


def run_for_dbt(spark: SparkSession, config_path: str, raw_table: str, quarantine_table: str) -> LandingSummary:
    """The landing model (models/landing/raw_events.py): land into the tables dbt names.

    The standalone job reads the same config file, so it must name the same tables.
    """
    config = load_config(config_path)
    for setting, from_dbt in (("raw_table", raw_table), ("quarantine_table", quarantine_table)):
        if getattr(config, setting).lower() != from_dbt.lower():
            raise ConfigError(
                f"{config.source_file}: field '{setting}' is {getattr(config, setting)} but the dbt landing "
                f"model writes {from_dbt}; make them the same so spark-submit and dbt land into one table"
            )
    target = dbt_target.current()
    if target is not None and config.sink != target.sink:
        raise ConfigError(
            f"{config.source_file}: field 'sink' is {config.sink} but the dbt target ({target.name}) reads its raw "
            f"log from {target.sink}: give that target a landing config of its own with sink: {target.sink} (and a "
            "checkpoint of its own), e.g. +landing_config in dbt_project.yml chosen by target (docs/your_project.md)"
        )
    return run(config, spark=spark, databend_dsn=target.databend_dsn if target is not None else None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Land CDC JSON files into the raw Iceberg table.")
    parser.add_argument("--config", required=True, help="landing config YAML (see landing.yml)")
    parser.add_argument("--input", help="folder of CDC JSON files (overrides 'input')")
    parser.add_argument("--checkpoint", help="checkpoint folder (overrides 'checkpoint')")
    parser.add_argument("--warehouse", help="Iceberg warehouse folder (default $CDC_MERGE_WAREHOUSE or ./warehouse)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    try:
        overrides = {
            name: str(Path(value).resolve()) if value else None
            for name, value in (("input", args.input), ("checkpoint", args.checkpoint))
        }
        config = load_config(args.config, overrides)
        run(config, args.warehouse)
    except (ConfigError, io.LandingError) as error:
        print(f"cdc-land: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
