"""A column the source retyped to values its mirror column cannot hold (apply_chunk.sql).

`ALTER TABLE ... ALTER COLUMN balance TYPE numeric(16,4)` leaves a model that casts balance to
decimal(12,2) running: 1.2345 lands as 1.23 and 123456789012.3456 as null, and every data test
passes. The captures name the retyped columns in their schema change events (raw_data's
"retyped_columns", with the columns' types after it in "columns"), so a chunk that holds one whose
mirror column is an integer or a decimal too narrow for the new type stops before its batches are
applied, naming the column and what to change. A mirror column of text or a floating type is the
model's own choice and is left alone.
"""

from __future__ import annotations

import json
import re
from fractions import Fraction
from typing import Any, Mapping, Optional, Sequence

from python_jobs.apply.column_defaults import mirror_name, retyped_columns

# Integer types by the values they hold (PostgreSQL, MySQL/MariaDB, Spark, Databend names): by digits alone,
# an int column was taken to hold an int unsigned's values, and a decimal(10,0)'s.
_INTEGER_RANGES = {
    **dict.fromkeys(("tinyint", "int8"), (-2 ** 7, 2 ** 7 - 1)),
    **dict.fromkeys(("smallint", "int2", "int16"), (-2 ** 15, 2 ** 15 - 1)),
    "mediumint": (-2 ** 23, 2 ** 23 - 1),
    **dict.fromkeys(("int", "integer", "int4", "int32"), (-2 ** 31, 2 ** 31 - 1)),
    **dict.fromkeys(("bigint", "int64"), (-2 ** 63, 2 ** 63 - 1)),
    **dict.fromkeys(("tinyint unsigned", "uint8"), (0, 2 ** 8 - 1)),
    **dict.fromkeys(("smallint unsigned", "uint16"), (0, 2 ** 16 - 1)),
    "mediumint unsigned": (0, 2 ** 24 - 1),
    **dict.fromkeys(("int unsigned", "integer unsigned", "uint32"), (0, 2 ** 32 - 1)),
    **dict.fromkeys(("bigint unsigned", "uint64"), (0, 2 ** 64 - 1)),
}
_DECIMAL = re.compile(r"^(?:numeric|decimal)\s*\(\s*(\d+)\s*(?:,\s*(-?\d+)\s*)?\)(\s+unsigned)?(\s+zerofill)?$")
_UNBOUNDED = {"numeric", "decimal"}


def _bare(type_name: str) -> str:
    """A type without Databend's nullability and with single spaces, lower case."""
    bare = re.sub(r"\s+", " ", str(type_name).strip().lower())
    bare = re.sub(r"^nullable\((.*)\)$", r"\1", bare)
    bare = re.sub(r"^((?:tiny|small|medium|big)?int(?:eger)?)\s*\(\d+\)", r"\1", bare)  # MySQL's display width
    return re.sub(r" (not )?null$", "", bare).replace(" zerofill", "")


# (lowest value, highest value, fractional digits) of an integer or decimal type; UNBOUNDED for a numeric without a precision.
Bounds = tuple[Fraction, Fraction, int]
UNBOUNDED: Bounds = (Fraction(-1), Fraction(-1), -1)


def _bounds(type_name: str) -> Optional[Bounds]:
    """The values an integer or decimal type holds; None for another type."""
    bare = _bare(type_name)
    if bare in _INTEGER_RANGES:
        low, high = _INTEGER_RANGES[bare]
        return Fraction(low), Fraction(high), 0
    if bare in _UNBOUNDED:
        return UNBOUNDED
    match = _DECIMAL.match(bare)
    if match is None:
        return None
    precision, scale = int(match.group(1)), int(match.group(2) or 0)
    high = Fraction(10 ** precision - 1) / Fraction(10) ** scale
    return (Fraction(0) if match.group(3) else -high), high, max(scale, 0)


def _holds(mirror_type: str, source_type: str) -> bool:
    """Whether every value of source_type fits mirror_type, as far as both are integers or decimals."""
    mirror, source = _bounds(mirror_type), _bounds(source_type)
    if mirror is None or source is None or mirror == UNBOUNDED:
        return True
    if source == UNBOUNDED:
        return False
    return mirror[0] <= source[0] and mirror[1] >= source[1] and mirror[2] >= source[2]


def _since(seq: str, raw_data: str) -> str:
    """Where the source changed the type: its DDL when the event carries it (a user knows the
    statement, not the seq), and the seq, which finds the event in the raw log."""
    ddl = json.loads(raw_data).get("ddl")
    if not isinstance(ddl, str) or not ddl.strip():
        return f"the schema change at seq {seq}"
    ddl = " ".join(ddl.split())
    return f"{ddl if len(ddl) <= 200 else ddl[:197] + '...'!r} (seq {seq})"


def retype_problem(events: Sequence[Sequence[Any]], column_types: Mapping[str, str], source_table: str,
                   model: str, history: bool = False) -> Optional[str]:
    """events: (seq, raw_data) of the chunk's schema events; column_types: {mirror column: type}. What
    to change where a retyped column's new type holds values its mirror column cannot, else None.
    history: the model is a cdc_history, whose table keeps the types it was built with."""
    mirror = {str(name).lower(): str(name) for name in column_types}
    types = {str(name).lower(): str(type_name) for name, type_name in column_types.items()}
    for seq, raw_data in sorted((str(seq), raw_data) for seq, raw_data in events if raw_data):
        before = retyped_columns(raw_data)
        if not before:
            continue
        after = {str(column.get("name")): str(column.get("type")) for column in json.loads(raw_data).get("columns") or []
                 if isinstance(column, dict)}
        for field, old_type in before.items():
            name = mirror_name(field, mirror)
            new_type = after.get(field)
            if name is None or new_type is None or _holds(types[name], new_type):
                continue
            since = _since(seq, raw_data)
            if history:
                return (f"cdc_history model '{model}': {source_table}.{field} is {new_type} at the source since {since} (it "
                        f"was {old_type}), and the history's column {mirror[name]} ({_bare(types[name])}) cannot hold its "
                        "values: its versions would hold them rounded or null. Change the column's type in the model "
                        "(cdc-scaffold --overwrite writes it), then run the history again: a widening (int to bigint, a "
                        "decimal's precision at its scale) is widened in place; another (a decimal's scale) needs a "
                        f"rebuild from the raw log: dbt run --full-refresh --select {model}. Nothing of this chunk was "
                        "applied.")
            return (f"cdc_merge model '{model}': {source_table}.{field} is {new_type} at the source since {since} (it was "
                    f"{old_type}), and the mirror's column {mirror[name]} ({_bare(types[name])}) cannot hold its values: "
                    "they would be rounded or null. Change the column's type in the model (cdc-scaffold --overwrite "
                    "writes it), then run the model again, with --full-refresh where the mirror cannot widen the "
                    "column in place (a decimal's scale); nothing of this chunk was applied.")
    return None
