"""Bulk data for the benchmarks, generated inside Spark (spark.range + expressions).

One benchmark source table, `bench.items` (key `id`), whose row for key k at version v is a
pure function of (k, v), so the raw log, the mirror and every baseline agree without Python
loops:

    id bigint, customer_id bigint, status string, amount decimal(18,2), updated_at timestamp, note string

- snapshot_events(): the initial snapshot (op 'read', all at one position, phase 0), in the raw
  table's schema (python_jobs/landing/schemas.py RAW_EVENT_SCHEMA).
- mirror_rows(): the mirror that applying that snapshot gives (the cdc_merge mirror layout:
  model columns + _cdc_key, _cdc_seq, _cdc_source_ts).
- batch_events(): a batch of streamed changes: 90% "primary" events on distinct keys
  (20% inserts of new keys, 10% deletes, 70% updates of existing keys spread over the whole key
  space, or with clustered=True over the newest 1% of it, at least 4x the batch's keys) and 10%
  later updates of keys already updated in the batch, so dedup matters.
- write_debezium_files(): Debezium JSON lines (Postgres connector, as python_jobs/demo/generate.py
  writes them) for the landing-throughput benchmark, from string templates (fast).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from python_jobs.landing.schemas import RAW_EVENT_SCHEMA

SOURCE_TABLE = "bench.items"
COLUMNS = [
    ("id", "bigint"),
    ("customer_id", "bigint"),
    ("status", "string"),
    ("amount", "decimal(18,2)"),
    ("updated_at", "timestamp"),
    ("note", "string"),
]
BASE_EPOCH_S = 1_767_225_600  # 2026-01-01T00:00:00Z
SNAPSHOT_LSN = 1_000_000
PRIME = 2_654_435_761  # multiplicative hash: distinct j < T give distinct keys (T not a multiple)
LANDED_AT = dt.datetime(2026, 1, 2)


def _seq(lsn: Column, phase: int) -> Column:
    """The raw table's seq for a Postgres LSN (docs/ordering.md)."""
    return F.concat(F.lpad(lsn.cast("string"), 20, "0"), F.lit("." + "0" * 20 + "." + "0" * 10 + f".{phase}"))


def _row(k: Column, v: Column) -> dict[str, Column]:
    """The source row of key k at version v."""
    return {
        "id": k,
        "customer_id": (k * 31 + v) % 1_000_003,
        "status": F.element_at(F.array(*[F.lit(s) for s in ("placed", "paid", "shipped", "cancelled")]), ((k + v) % 4 + 1).cast("int")),
        "amount": ((k * 37 + v * 11) % 10_000_000 / 100).cast("decimal(18,2)"),
        "updated_at": F.timestamp_seconds(F.lit(BASE_EPOCH_S) + v * 60 + k % 86_400),
        "note": F.concat(F.lit("item "), k.cast("string"), F.lit(" v"), v.cast("string"), F.lit(" lorem ipsum dolor sit amet")),
    }


def _json(row: dict[str, Column]) -> Column:
    """The row as Debezium would send it: numbers bare, timestamps as ISO-8601 UTC strings."""
    return F.to_json(F.struct(*[
        (F.date_format(value, "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'") if name == "updated_at" else value).alias(name)
        for name, value in row.items()
    ]))


def _key(k: Column) -> Column:
    return F.concat(F.lit('["'), k.cast("string"), F.lit('"]'))


def _partitions(rows: int, per_partition: int = 1_000_000) -> int:
    return max(2, -(-rows // per_partition))


def _raw(df: DataFrame) -> DataFrame:
    """df in the raw table's columns; the ones it lacks (the transaction columns) null."""
    return df.select(*[(F.col(f.name) if f.name in df.columns else F.lit(None)).cast(f.dataType).alias(f.name)
                       for f in RAW_EVENT_SCHEMA.fields])


def snapshot_events(spark: SparkSession, target_rows: int, table_name: str = SOURCE_TABLE) -> DataFrame:
    k = F.col("id")
    row = _row(k, F.lit(0))
    return _raw(
        spark.range(0, target_rows, 1, _partitions(target_rows)).select(
            F.lit(table_name).alias("table_name"),
            _key(k).alias("key"),
            F.lit("read").alias("action"),
            _json(row).alias("raw_data"),
            F.lit(None).alias("before_data"),
            _seq(F.lit(SNAPSHOT_LSN), 0).alias("seq"),
            row["updated_at"].alias("source_ts"),
            F.concat(F.lit("bench://snapshot/part-"), (k / 100_000).cast("bigint").cast("string")).alias("landed_file"),
            (k % 100_000 + 1).alias("landed_line"),
            F.lit(LANDED_AT).alias("landed_at"),
        )
    )


def mirror_rows(spark: SparkSession, target_rows: int) -> DataFrame:
    """What applying snapshot_events() gives, in the cdc_merge mirror's column order."""
    k = F.col("id")
    row = _row(k, F.lit(0))
    return spark.range(0, target_rows, 1, _partitions(target_rows)).select(
        *[value.cast(dtype).alias(name) for (name, dtype), value in zip(COLUMNS, row.values())],
        _key(k).alias("_cdc_key"),
        _seq(F.lit(SNAPSHOT_LSN), 0).alias("_cdc_seq"),
        row["updated_at"].alias("_cdc_source_ts"),
    )


def batch_events(spark: SparkSession, target_rows: int, events: int, batch_number: int, clustered: bool = False) -> DataFrame:
    """Streamed changes after the snapshot; batch_number orders batches (later = newer seq).

    clustered: updates and deletes hit only the newest keys (the highest ids), as where recent
    rows change most; otherwise keys spread over the whole table."""
    primary = max(10, int(events * 0.9))
    if primary >= target_rows:
        raise ValueError(f"a batch of {events} events needs a target of more than {primary} rows")
    i = F.col("id")
    is_primary = i < primary
    d = i - primary
    # Duplicates re-update an update-type primary event's key (j % 10 >= 3), later in the log.
    dup_j = F.lit(10) * ((d * 7919) % F.lit(max(1, primary // 10))) + 3 + d % 7
    j = F.when(is_primary, i).otherwise(dup_j)
    kind = j % 10
    span = min(target_rows, max(4 * primary, target_rows // 100)) if clustered else target_rows
    existing_key = F.lit(target_rows - span) + (j * F.lit(PRIME)) % F.lit(span)
    k = F.when(kind < 2, F.lit(target_rows) + j).otherwise(existing_key)
    action = F.when(~is_primary, "update").when(kind < 2, "insert").when(kind == 2, "delete").otherwise("update")
    version = F.when(~is_primary, 2).when(kind < 2, 0).otherwise(1)
    lsn = F.lit(batch_number * 10**12) + i * 10
    row = _row(k, version)
    return _raw(
        spark.range(0, events, 1, max(2, -(-events // 500_000))).select(
            F.lit(SOURCE_TABLE).alias("table_name"),
            _key(k).alias("key"),
            action.alias("action"),
            F.when(action != "delete", _json(row)).alias("raw_data"),
            F.when(action == "delete", F.concat(F.lit('{"id":'), k.cast("string"), F.lit("}"))).alias("before_data"),
            _seq(lsn, 1).alias("seq"),
            F.timestamp_seconds(F.lit(BASE_EPOCH_S + 86_400 * batch_number) + i / 1000).alias("source_ts"),
            F.concat(F.lit(f"bench://batch-{batch_number}/part-"), (i / 100_000).cast("bigint").cast("string")).alias("landed_file"),
            (i % 100_000 + 1).alias("landed_line"),
            F.lit(LANDED_AT).alias("landed_at"),
        )
    )


def expected_batch_counts(events: int) -> dict[str, int]:
    """Keys changed by batch_events() after dedup: inserted, updated, deleted."""
    primary = max(10, int(events * 0.9))

    def residues(*rs: int) -> int:
        return sum(primary // 10 + (1 if primary % 10 > r else 0) for r in rs)

    inserts, deletes = residues(0, 1), residues(2)
    return {"keys": primary, "inserted": inserts, "deleted": deletes, "updated": primary - inserts - deletes}


# --- Debezium JSON files for the landing benchmark ------------------------------------------------

_STATUSES = ("placed", "paid", "shipped", "cancelled")


def write_debezium_files(folder: Path, events: int, lines_per_file: int = 20_000) -> int:
    """Debezium (Postgres connector, no schema) lines for bench.items: creates, updates, deletes.

    The same envelope python_jobs/demo/generate.py writes; returns the number of files.
    """
    folder.mkdir(parents=True, exist_ok=True)
    files = 0
    ts0 = BASE_EPOCH_S * 1000
    source_tail = '"version":"2.7.3.Final","connector":"postgresql","name":"bench","snapshot":"false","db":"benchdb","table":"items","schema":"bench"'
    for start in range(0, events, lines_per_file):
        lines = []
        for i in range(start, min(events, start + lines_per_file)):
            k = i // 3
            op = "c" if i % 3 == 0 else ("u" if i % 10 else "d")
            ts = ts0 + i
            after = (
                f'{{"id":{k},"customer_id":{(k * 31 + i) % 1_000_003},"status":"{_STATUSES[i % 4]}",'
                f'"amount":{(k * 37 + i) % 10_000_000 / 100:.2f},"updated_at":"2026-01-01T00:00:{i % 60:02d}.000Z",'
                f'"note":"item {k} v{i} lorem ipsum dolor sit amet"}}'
            )
            before, after = (f'{{"id":{k}}}', "null") if op == "d" else ("null", after)
            lines.append(
                f'{{"before":{before},"after":{after},"source":{{{source_tail},"ts_ms":{ts},"txId":{1000 + i},'
                f'"lsn":{SNAPSHOT_LSN + 100 * i}}},"op":"{op}","ts_ms":{ts + 250},"transaction":null}}'
            )
        (folder / f"part-{files:05d}.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
        files += 1
    return files
