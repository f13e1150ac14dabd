"""The mirror side of a range check (ranges.py): the mirror's keys sampled, its segments' row counts and
checksums computed by its engine (Spark or Databend; row_hash.py), and a range's rows read. The
statements come from macros/verify.sql with placeholders this module fills: the range condition,
the segment expression, the row digest and the sample size."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any, Callable, Sequence

from python_jobs.verify.compare import type_family
from python_jobs.verify.in_flight import SNAPSHOT
from python_jobs.verify.ranges import Key, KeyRange, SegmentStats
from python_jobs.verify.row_hash import (
    STAGED_FLOAT_ENGINES, as_double_sql, digest_number_sql, row_digest_sql, staged_float_sql, value_sql,
)

RANGE = "__CDC_MERGE_RANGE__"
SEGMENT = "__CDC_MERGE_SEGMENT__"
DIGEST = "__CDC_MERGE_DIGEST__"
NUMBER = "__CDC_MERGE_NUMBER__"
LIMIT = "__CDC_MERGE_LIMIT__"
# Where the statements name the mirror: filled with the engine's time travel to the pinned snapshot.
AT = "__CDC_MERGE_AT__"
STAGES = "__CDC_MERGE_STAGES__"


def stages_sql(steps: list[list[str]]) -> str:
    """The CTEs from the live rows to the staged rows: a step each that computes columns."""
    ctes, source = [], "live"
    for number, columns in enumerate((columns for columns in steps if columns), start=1):
        ctes.append(f"step_{number} as (select *, {', '.join(columns)} from {source}),")
        source = f"step_{number}"
    return "\n".join([*ctes, f"staged as (select * from {source}),"])


def engine_literal(engine: str, string_literal: Callable[[str], str], text: str) -> str:
    """A string as the engine's literal. On Spark no `$` is left in it: Spark substitutes `${...}` in a
    statement's text before parsing it (spark.sql.variable.substitute), so `$` is written as the
    literal's escape \\u0024, which the parser turns back into `$`."""
    literal = string_literal(text)
    return literal.replace("$", "\\u0024") if engine == "spark" else literal


def keyed_rows(pairs: Any) -> tuple[dict[str, Any], dict[str, int]]:
    """(key, row) pairs as rows by key, and the keys held by more than one row with how many: a dict
    by key would keep one of a key's copies and show the mirror equal."""
    rows: dict[str, Any] = {}
    counts: dict[str, int] = {}
    for key, row in pairs:
        rows[str(key)] = row
        counts[str(key)] = counts.get(str(key), 0) + 1
    return rows, {key: count for key, count in counts.items() if count > 1}


def ranged_key(mirror_key: Sequence[str], source_key: Sequence[str]) -> list[str]:
    """The mirror's key columns in the source's key order, which both sides range and the capture pages
    in, whatever order the model's unique_key lists them in (the same columns; else the mirror's own)."""
    names = [name.lower() for name in mirror_key]
    ordered = [name.lower() for name in source_key]
    return ordered if sorted(ordered) == sorted(names) else names


class MirrorRanges:
    def __init__(self, engine: str, mirror: dict[str, Any], key: Sequence[str], in_checksum: Sequence[str],
                 rows: Callable[[str], list[Sequence[Any]]], string_literal: Callable[[str], str]) -> None:
        self.engine, self.mirror, self.key = engine, mirror, [name.lower() for name in key]
        self._rows = rows
        self._string_literal = lambda text: engine_literal(engine, string_literal, text)
        types = {name.lower(): data_type for name, data_type in mirror["columns"]}
        # Decimal keys are sampled as their texts (verify_row_json), read back as numbers.
        self.decimal_key = {name for name in self.key if name in types and type_family(types[name]) == "decimal"}
        self.values = {name: value_sql(engine, name, types[name]) or "null" for name in in_checksum}
        # The steps of the floats' texts as columns of their own, where the engine's planner needs it.
        steps: list[list[str]] = [[], [], []]
        for index, name in enumerate(in_checksum):
            double = as_double_sql(engine, name, types[name]) if engine in STAGED_FLOAT_ENGINES else None
            if double is not None:
                stages, self.values[name] = staged_float_sql(engine, double, f"f{index}")
                for step, columns in zip(steps, stages):
                    step.extend(columns)
        self.stages = stages_sql(steps)
        self.in_checksum = list(in_checksum)
        self.excluded: list[str] = []
        self.excluded_view: str | None = None
        self.at = ""
        # The keys the last rows() found more than once, with their rows' count.
        self.repeated: dict[str, int] = {}

    def pin(self, snapshot: str | None) -> None:
        """Read the mirror as of one of its snapshots (None: as it is when each query runs)."""
        self.at = self.mirror["at_snapshot_sql"].replace(SNAPSHOT, snapshot) if snapshot else ""

    def exclude(self, canonical_keys: Sequence[str], view: str | None = None) -> None:
        """Leave these keys (the mirror's _cdc_key) out of every later query: rows in flight
        (in_flight.py); named by the session view that holds them when there is one."""
        self.excluded, self.excluded_view = list(canonical_keys), view

    def _statement(self, name: str, key_range: KeyRange) -> str:
        return self.mirror[name].replace(AT, self.at).replace(RANGE, self._where(key_range))

    def _literal(self, value: Any) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, (int, Decimal)):
            return str(value)
        return self._string_literal(str(value))

    def _compare(self, key: Key, operator: str) -> str:
        """Keys compared in order, in a form every engine reads (no row comparison in Databend)."""
        strict = operator[0]
        terms = []
        for index, name in enumerate(self.key):
            last = index == len(self.key) - 1
            equal = [f"{self.key[before]} = {self._literal(key[before])}" for before in range(index)]
            terms.append(" and ".join([*equal, f"{name} {operator if last else strict} {self._literal(key[index])}"]))
        return "(" + " or ".join(f"({term})" for term in terms) + ")"

    def _where(self, key_range: KeyRange) -> str:
        conditions = ["1 = 1"]
        if self.excluded and self.excluded_view:
            conditions.append(f"_cdc_key not in (select key from {self.excluded_view})")
        elif self.excluded:
            conditions.append(f"_cdc_key not in ({', '.join(self._string_literal(key) for key in self.excluded)})")
        if key_range.after is not None:
            conditions.append(self._compare(key_range.after, ">"))
        if key_range.through is not None:
            conditions.append(self._compare(key_range.through, "<="))
        return " and ".join(conditions)

    def sample_keys(self, key_range: KeyRange, count: int) -> list[Key]:
        statement = self._statement("range_keys_sql", key_range).replace(LIMIT, str(int(count)))
        keys = []
        for (text,) in self._rows(statement):
            values = json.loads(text, parse_float=Decimal, strict=False)
            keys.append(tuple(Decimal(values[name]) if name in self.decimal_key and isinstance(values[name], str) else values[name]
                              for name in self.key))
        return keys

    def segment_stats(self, key_range: KeyRange, points: Sequence[Key],
                      columns: Sequence[str] | None = None) -> dict[int, SegmentStats]:
        digest = row_digest_sql(self.engine, [self.values[name] for name in columns or self.in_checksum])
        conditions = [self._compare(point, "<=") for point in points]
        segment = ("case " + " ".join(f"when {condition} then {index}" for index, condition in enumerate(conditions))
                   + f" else {len(conditions)} end") if conditions else "0"
        statement = (self._statement("range_stats_sql", key_range).replace(STAGES, self.stages).replace(SEGMENT, segment)
                     .replace(DIGEST, digest).replace(NUMBER, digest_number_sql(self.engine, "_cdc_digest")))
        return {int(Decimal(str(segment))): SegmentStats(int(Decimal(str(count))), int(Decimal(str(total or 0))))
                for segment, count, total in self._rows(statement)}

    def rows(self, key_range: KeyRange) -> dict[str, dict[str, Any]]:
        statement = self._statement("range_rows_sql", key_range)
        rows, self.repeated = keyed_rows((key, json.loads(row, parse_float=Decimal, strict=False))
                                         for key, row in self._rows(statement))
        return rows
