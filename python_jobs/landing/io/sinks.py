"""Where landed batches go: the raw and quarantine tables in Iceberg or in Databend, each batch
appended once even when it is retried."""

from __future__ import annotations

import logging
import os
import shutil
from urllib.parse import urlparse
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

from python_jobs import crash_points
from python_jobs.landing.io.checkpoint_table import TableIdentity
from python_jobs.landing.io.errors import LandingError
from python_jobs.landing.io.iceberg_tables import iceberg_table
from pyspark.sql.types import StructField

from python_jobs.landing.schemas import QUARANTINE_SCHEMA, RAW_EVENT_SCHEMA, TRANSACTION_FIELDS

log = logging.getLogger("cdc_merge")

# Iceberg writes snapshot-property.* write options into the snapshot summary.
LANDING_BATCH_PROPERTY = "cdc-merge.landing-batch"


def require_tables(spark: SparkSession, raw_table: str, quarantine_table: str) -> None:
    """The raw and quarantine tables come from dbt's DDL macros; check they match our schemas. A
    raw table created before the transaction columns gets them (null for the events it holds)."""
    for table, schema in ((raw_table, RAW_EVENT_SCHEMA), (quarantine_table, QUARANTINE_SCHEMA)):
        if not spark.catalog.tableExists(table):
            raise LandingError(
                f"table {table} does not exist: create it with "
                "'dbt run-operation create_raw_tables' (make demo does this)"
            )
        actual = [(f.name, f.dataType) for f in spark.table(table).schema.fields]
        expected = [(f.name, f.dataType) for f in schema.fields]
        missing = columns_to_add([name for name, _ in actual])
        if missing:
            columns = ", ".join(f"{field.name} {field.dataType.simpleString()}" for field in missing)
            spark.sql(f"alter table {table} add columns ({columns})")
            log.info("%s: added the columns %s", table, columns)
            actual = [(f.name, f.dataType) for f in spark.table(table).schema.fields]
        if actual != expected:
            raise LandingError(f"table {table} has columns {actual}, expected {expected}")


def columns_to_add(names: list[str]) -> list[StructField]:
    """The transaction columns a raw table created before them lacks: only when it has exactly the
    columns before them, so that any other difference is still reported, not papered over."""
    before = [field.name for field in RAW_EVENT_SCHEMA.fields if field not in TRANSACTION_FIELDS]
    return list(TRANSACTION_FIELDS) if sorted(names) == sorted(before) else []


def append_once(
    df: DataFrame, table: str, batch_tag: str, may_be_retry: bool = True, crash_point: str | None = None
) -> bool:
    """Append df in one Iceberg commit tagged with batch_tag, unless a commit with that tag exists.

    A micro-batch that dies after this commit is run again with the same tag,
    so the tag check is what keeps a file from being landed twice. A batch no earlier run
    tried (may_be_retry false) skips the check, a query of the table's snapshots (0.1-0.2 s).
    crash_point: the name under which python_jobs/crash_points.py may kill the run while the
    data files are written, before the commit.
    """
    spark = df.sparkSession
    if may_be_retry and committed(spark, table, batch_tag):
        log.info("%s: batch %s was committed before; not appending again", table, batch_tag)
        return False
    written = crash_points.crash_when_files_appear(crash_point, _table_folder(spark, table) / "data") if crash_point else None
    df.writeTo(table).option(f"snapshot-property.{LANDING_BATCH_PROPERTY}", batch_tag).append()
    if written is not None:
        written.set()
    return True


def committed(spark: SparkSession, table: str, batch_tag: str) -> bool:
    """Whether table holds a commit tagged with batch_tag (append_once)."""
    return spark.sql(
        f"select 1 from {table}.snapshots where summary['{LANDING_BATCH_PROPERTY}'] = '{batch_tag}' limit 1"
    ).count() > 0


def iceberg_identity(spark: SparkSession, table: str) -> TableIdentity | None:
    """table's Iceberg UUID and whether it has a snapshot, as Spark SQL resolves the name (analysis
    only, no job); None when the name is not an Iceberg table."""
    iceberg = iceberg_table(spark, table)
    if iceberg is None:
        return None
    return TableIdentity(str(iceberg.uuid()), iceberg.currentSnapshot() is not None)


def local_warehouse(spark: SparkSession) -> str | None:
    """The session catalog's warehouse folder on this machine; None on a remote store."""
    catalog = spark.conf.get("spark.sql.defaultCatalog", "lake")
    location = spark.conf.get(f"spark.sql.catalog.{catalog}.warehouse", None)
    if not location or ("://" in location and not location.startswith("file:")):
        return None
    return location.removeprefix("file://").removeprefix("file:")


def _table_folder(spark: SparkSession, table: str) -> Path:
    """Where the Hadoop catalog keeps table (the crash point watches its data files)."""
    return Path(local_warehouse(spark) or "").joinpath(*table.split("."))


class IcebergSink:
    """The raw and quarantine tables in the Spark session's Iceberg catalog."""

    # Each commit carries its own tag, so one batch may land in several commits.
    tags_each_commit = True

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark

    def destination(self, raw_table: str) -> str:
        """Where events land, as a landing checkpoint records it (input_files.claim_checkpoint)."""
        catalog = self.spark.conf.get("spark.sql.defaultCatalog", "lake")
        where = self.spark.conf.get(f"spark.sql.catalog.{catalog}.warehouse", None) or self.spark.conf.get(
            f"spark.sql.catalog.{catalog}.uri", None) or catalog
        return f"iceberg table {raw_table.lower()} in {where}"

    def require_tables(self, raw_table: str, quarantine_table: str) -> None:
        require_tables(self.spark, raw_table, quarantine_table)

    def identity(self, raw_table: str) -> TableIdentity | None:
        """The Iceberg table behind the name (checkpoint_table.py); None when it is not one."""
        return iceberg_identity(self.spark, raw_table)

    def append_once(
        self, df: DataFrame, table: str, batch_tag: str, batch_files: list[str], may_be_retry: bool = True,
        crash_point: str | None = None,
    ) -> bool:
        return append_once(df, table, batch_tag, may_be_retry, crash_point)

    def committed(self, table: str, batch_tag: str) -> bool:
        return committed(self.spark, table, batch_tag)


class DatabendSink:
    """The raw and quarantine tables in Databend, loaded in bulk.

    Spark writes a batch as Parquet into a folder the server can read, and one COPY INTO
    per table loads it atomically. The input files of a batch land together or not at
    all, so a batch whose files are already in the table was committed before: a retried
    micro-batch is not loaded twice.
    """

    # A load is known by its input files: one batch must be one load per table.
    tags_each_commit = False

    def __init__(self, dsn_env: str, stage_dir: Path, target_dsn: str | None = None) -> None:
        import databend_driver

        dsn = os.environ.get(dsn_env) or target_dsn
        if not dsn:
            raise LandingError(
                f"sink databend: set {dsn_env} to the Databend DSN, e.g. databend://root:@localhost:8000/?sslmode=disable"
            )
        try:
            self.connection = databend_driver.BlockingDatabendClient(dsn).get_conn()
        except Exception as error:
            raise LandingError(f"sink databend: cannot connect with ${dsn_env}: {error}") from None
        self.stage_dir = stage_dir
        address = urlparse(dsn)
        self.server = f"{address.hostname}:{address.port}"

    def destination(self, raw_table: str) -> str:
        """Where events land, as a landing checkpoint records it (input_files.claim_checkpoint)."""
        return f"databend table {raw_table.lower()} at {self.server}"

    def identity(self, raw_table: str) -> TableIdentity | None:
        """The Databend table behind the name (checkpoint_table.py): its table_id, which a table
        dropped and made again (or replaced) does not keep, and whether it has a snapshot; None when
        the name is no table."""
        database, name = (part.replace("'", "''") for part in raw_table.split("."))
        row = self.connection.query_row(
            f"select table_id from system.tables where database = '{database}' and name = '{name}'"
        )
        if row is None:
            return None
        (snapshots,) = self.connection.query_row(
            f"select count(*) from fuse_snapshot('{database}', '{name}')"
        ).values()
        return TableIdentity(f"databend table_id {row.values()[0]}", int(snapshots) > 0)

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
            missing = columns_to_add(actual)
            for field in missing:
                self.connection.exec(f"alter table {table} add column {field.name} {field.dataType.simpleString()} null")
            if missing:
                log.info("%s: added the columns %s", table, ", ".join(field.name for field in missing))
                actual = sorted(actual + [field.name for field in missing])
            if actual != sorted(field.name for field in schema.fields):
                raise LandingError(f"table {table} has columns {actual}, expected {schema.fieldNames()}")

    def append_once(
        self, df: DataFrame, table: str, batch_tag: str, batch_files: list[str], may_be_retry: bool = True,
        crash_point: str | None = None,
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


def sink_for(config, spark: SparkSession, databend_dsn: str | None = None) -> IcebergSink | DatabendSink:
    """The config's sink; databend_dsn: the dbt target's server, when the config's DSN variable is unset."""
    if config.sink == "databend":
        return DatabendSink(config.databend_dsn_env, config.databend_stage_dir, databend_dsn)
    return IcebergSink(spark)
