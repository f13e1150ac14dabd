"""Landing job: append new CDC JSON files to the raw table, bad lines to quarantine.

    cdc-land --config landing.yml
    spark-submit --jars <iceberg jar> python_jobs/land.py --config landing.yml
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.storagelevel import StorageLevel

from python_jobs import io, records
from python_jobs.config import ConfigError, LandingConfig, load_config
from python_jobs.transforms import (
    exact_numbers_for_variant,
    landed_events,
    parse_cdc_lines,
    quarantined_records,
    split_lines,
)

log = logging.getLogger("cdc_merge")


@dataclass
class LandingSummary:
    batches: int = 0
    files: int = 0
    counts: Counter = field(default_factory=Counter)
    seconds: float = 0.0

    def status(self) -> str:
        """One short line for dbt's run log."""
        return (
            f"landed {self.counts[records.STATUS_EVENT]} events, quarantined "
            f"{self.counts[records.STATUS_REJECTED] + self.counts[records.STATUS_IGNORED]} lines"
        )

    def line(self) -> str:
        events = self.counts[records.STATUS_EVENT]
        rate = events / self.seconds if self.seconds else 0.0
        return (
            f"landed {events} events from {self.files} files in {self.batches} batches "
            f"({rate:,.0f} events/s); quarantined {self.counts[records.STATUS_REJECTED]} bad lines and "
            f"{self.counts[records.STATUS_IGNORED]} records that are not row changes; "
            f"skipped {self.counts[records.STATUS_TOMBSTONE]} tombstones"
        )


def land_files(files: DataFrame, config: LandingConfig, sink, batch_tag: str, summary: LandingSummary) -> None:
    """Parse one micro-batch of files; append events, and rejected or ignored lines, each in one commit."""
    started = time.monotonic()
    landed_at = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    parsed = parse_cdc_lines(split_lines(files), config.key_columns, config.format)
    parsed = parsed.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        counts = Counter({row["status"]: row["count"] for row in parsed.groupBy("status").count().collect()})
        batch_files = [row["landed_file"] for row in files.select("landed_file").collect()]
        file_count = len(batch_files)
        if counts[records.STATUS_EVENT]:
            events = landed_events(parsed, landed_at)
            if config.sink == "databend":
                events = exact_numbers_for_variant(events)
            sink.append_once(events, config.raw_table, batch_tag, batch_files)
        if counts[records.STATUS_REJECTED] or counts[records.STATUS_IGNORED]:
            sink.append_once(quarantined_records(parsed, landed_at), config.quarantine_table, batch_tag, batch_files)
    finally:
        parsed.unpersist()
    elapsed = time.monotonic() - started
    summary.batches += 1
    summary.files += file_count
    summary.counts.update(counts)
    summary.seconds += elapsed
    log.info(
        "batch %s: %d files, %d events, %d quarantined, %d not row changes, %d tombstones, %.1f s",
        batch_tag, file_count, counts[records.STATUS_EVENT], counts[records.STATUS_REJECTED],
        counts[records.STATUS_IGNORED], counts[records.STATUS_TOMBSTONE], elapsed,
    )


def run(config: LandingConfig, warehouse: str | None = None, spark: SparkSession | None = None) -> LandingSummary:
    spark = spark or io.spark_session("cdc_merge_landing", warehouse)
    sink = io.sink_for(config, spark)
    sink.require_tables(config.raw_table, config.quarantine_table)
    summary = LandingSummary()
    files = io.read_new_files(spark, config.input_dir, config.max_files_per_batch, config.file_glob)
    io.run_available_batches(
        files, config.checkpoint_dir, lambda batch, tag: land_files(batch, config, sink, tag, summary)
    )
    log.info("%s", summary.line())
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
    return run(config, spark=spark)


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
