"""A classified batch's counts (counts.sql change_counts) read from rows the driver holds, without a
Spark job.

Observed on the way (an Observation), the counts of a batch kept in the driver cost a Spark job of
their own: the only one left in a small batch's classification once its stored rows are read in
the driver too (stored_keys.py). Each count's condition is a column of a projection instead, which
Spark's optimizer computes over the local relation without a job, and the counts are added up here.
"""

from typing import Any, Dict, List, Sequence

from dbt.adapters.cdc_spark import local_rows

# The aggregates counts.sql change_counts() names: rows; rows where the operand holds; the newest
# value of a timestamp operand, as Spark casts it to a string ('' for none).
AGGREGATES = ("count", "count_if", "max")


def counts_in_driver(rows: Any, counts: Sequence[Sequence[str]]) -> Dict[str, Any]:
    """The counts [name, aggregate, operand] of rows, a frame over a local relation."""
    from pyspark.sql import functions as F

    # At least one column, so that rows are read when every count is a plain count.
    columns: List[Any] = [F.lit(1).alias("_row")]
    for index, (name, aggregate, operand) in enumerate(counts):
        if aggregate not in AGGREGATES:
            raise ValueError(f"count {name}: unknown aggregate {aggregate!r} (one of {', '.join(AGGREGATES)})")
        if aggregate == "count_if":
            columns.append(F.expr(f"coalesce({operand}, false)").alias(f"holds_{index}"))
        elif aggregate == "max":
            # Ordered by the instant, not by its text or a local time.
            columns.append(F.expr(f"unix_micros({operand})").alias(f"order_{index}"))
            columns.append(F.expr(f"cast({operand} as string)").alias(f"text_{index}"))
    projected = rows.select(*columns)
    summaries = local_rows.column_summaries(projected)
    if summaries is not None:  # added up in the JVM (LocalJoins.columnSummaries): no row sent to Python
        return _from_summaries(projected, summaries, counts)
    values = projected.collect()
    found: Dict[str, Any] = {}
    for index, (name, aggregate, _) in enumerate(counts):
        if aggregate == "count":
            found[name] = len(values)
        elif aggregate == "count_if":
            found[name] = sum(1 for row in values if row[f"holds_{index}"])
        else:
            newest = max((row for row in values if row[f"order_{index}"] is not None), key=lambda row: row[f"order_{index}"], default=None)
            found[name] = "" if newest is None else newest[f"text_{index}"]
    return found


def _from_summaries(projected: Any, summaries: List[int], counts: Sequence[Sequence[str]]) -> Dict[str, Any]:
    """The counts from local_rows.column_summaries of the projection counts_in_driver builds."""
    position = {name: index for index, name in enumerate(projected.columns)}
    found: Dict[str, Any] = {}
    for index, (name, aggregate, _) in enumerate(counts):
        if aggregate == "count":
            found[name] = summaries[-1]
        elif aggregate == "count_if":
            found[name] = summaries[position[f"holds_{index}"]]
        else:
            row = summaries[position[f"order_{index}"]]
            text = local_rows.string_at(projected, row, position[f"text_{index}"]) if row >= 0 else None
            found[name] = "" if text is None else text
    return found
