"""What each source table's mirror needs to know of a raw range before applying it, in one pass
for all the source tables of the range (docs/apply_design.md).

Per source table: its keyed events, their key range (hex, as bucket_plan_sql gives it), how many
carry TOAST placeholders, its newest truncate (as chunk_truncate_sql gives it), its schema events
that say what added columns hold in older rows (as chunk_column_defaults_sql gives them), and the
fields of its row images (as unmapped.sql samples them), its online snapshot pages' key ranges, and
its oldest event's seq (a late row's bound, column_defaults.sql).
A mirror otherwise runs three statements over the range for these; here one Spark job answers them
for every mirror that reads the range, or none where the range is held in the driver
(LocalRawRanges.java computes them there from its rows, local_rows.py).
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping

# Debezium's value for a TOAST column an update did not change (dedup.sql unavailable_marker).
UNAVAILABLE_MARKER = "__debezium_unavailable_value"
# Events that are the table's, not a key's: applied before the chunk's batches (truncate.sql).
TABLE_ACTIONS = ("truncate", "schema", "range")
IMAGE_ACTIONS = ("insert", "update", "read")

PLAN_COLUMNS = ("events", "min_key_hex", "max_key_hex", "placeholder_events", "truncate_seq", "truncate_source_ts",
                "column_defaults", "snapshot_ranges", "fields", "oldest_seq")
# A schema event of a capture's added columns carries their values in older rows (column_defaults.sql).
EXISTING_ROWS_MEMBER = '"existing_rows":'



def empty_plan() -> Dict[str, Any]:
    """The plan of a source table with no event in the range."""
    return {"events": 0, "min_key_hex": "", "max_key_hex": "", "placeholder_events": 0,
            "truncate_seq": "", "truncate_source_ts": "", "column_defaults": [], "snapshot_ranges": [], "fields": [],
            "oldest_seq": ""}


def range_plan_frame(events: Any) -> Any:
    """DataFrame -> DataFrame: one row per table_name of a range's raw events (raw_ranges.py) with
    the PLAN_COLUMNS."""
    from pyspark.sql import functions as F

    action = F.col("action")
    keyed = ~action.isin(*TABLE_ACTIONS)
    truncate = action == F.lit("truncate")
    placeholder = F.coalesce(F.col("raw_data"), F.lit("")).contains(UNAVAILABLE_MARKER)
    image = action.isin(*IMAGE_ACTIONS) & F.col("raw_data").isNotNull()
    defaults = (action == F.lit("schema")) & F.coalesce(F.col("raw_data"), F.lit("")).contains(EXISTING_ROWS_MEMBER)
    return (
        events.where(F.col("_change_type") == F.lit("INSERT"))
        .groupBy("table_name")
        .agg(
            F.count(F.when(keyed, F.lit(1))).alias("events"),
            F.coalesce(F.hex(F.min(F.when(keyed, F.col("key")))), F.lit("")).alias("min_key_hex"),
            F.coalesce(F.hex(F.max(F.when(keyed, F.col("key")))), F.lit("")).alias("max_key_hex"),
            F.count(F.when(keyed & placeholder, F.lit(1))).alias("placeholder_events"),
            F.coalesce(F.max(F.when(truncate, F.col("seq"))), F.lit("")).alias("truncate_seq"),
            F.coalesce(F.max(F.when(truncate, F.col("source_ts"))).cast("string"), F.lit("")).alias("truncate_source_ts"),
            F.collect_list(F.when(defaults, F.array(F.col("seq"), F.col("raw_data")))).alias("column_defaults"),
            F.collect_list(F.when(action == F.lit("range"), F.array(F.col("seq"), F.col("raw_data")))).alias("snapshot_ranges"),
            # Rows of one table mostly share one set of fields: distinct sets are few.
            F.array_distinct(F.flatten(F.collect_set(F.when(image, F.json_object_keys(F.col("raw_data")))))).alias("fields"),
            F.coalesce(F.min(F.col("seq")), F.lit("")).alias("oldest_seq"),
        )
    )


def plans_by_table(rows: List[Any]) -> Dict[str, Dict[str, Any]]:
    """The collected rows of range_plan_frame, by source table."""
    return {row["table_name"]: _plan(row.asDict()) for row in rows}


def plan_from_query(columns: List[str], values: List[Any]) -> Dict[str, Any]:
    """The row of raw_log.sql spark__chunk_plan_sql, which a Thrift server's session answers with the
    lists as JSON text, as plans_by_table gives a table's plan."""
    row = dict(zip(columns, values))
    for name in ("column_defaults", "snapshot_ranges", "fields"):
        row[name] = json.loads(row[name]) if row[name] else []
    return _plan(row)


def plans_from_json(text: str) -> Dict[str, Dict[str, Any]]:
    """The plans computed in the driver (LocalRawRanges.plansJson: JSON from table name to its
    PLAN_COLUMNS), as plans_by_table gives them."""
    return {table: _plan(values) for table, values in json.loads(text).items()}


def _plan(values: Mapping[str, Any]) -> Dict[str, Any]:
    plan = {name: values[name] for name in PLAN_COLUMNS}
    plan["fields"] = sorted(field for field in (plan["fields"] or []) if field is not None)
    plan["column_defaults"] = sorted([seq, raw_data] for seq, raw_data in plan["column_defaults"] or [])
    plan["snapshot_ranges"] = sorted([seq, raw_data] for seq, raw_data in plan["snapshot_ranges"] or [])
    return plan
