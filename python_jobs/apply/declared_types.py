"""Whether a column type a model declares in cdc_columns() or cdc_column() is one the engines know,
checked when the model compiles: a typo ('bigitn') reached the engine and failed there with a
syntax error that named neither the column nor the type (docs/type_mapping.md)."""

from __future__ import annotations

import difflib
import re
from typing import Optional

# The first word of a type either engine takes (Spark SQL, Databend), aliases included.
KNOWN_TYPES = frozenset({
    "array", "bigint", "binary", "bitmap", "blob", "bool", "boolean", "byte", "char", "character", "date", "datetime", "dec",
    "decimal", "double", "float", "float32", "float64", "geography", "geometry", "int", "int16", "int32", "int64",
    "int8", "integer", "interval", "json", "long", "map", "numeric", "real", "short", "smallint", "string", "struct",
    "text", "timestamp", "timestamp_ltz", "timestamp_ntz", "tinyint", "tuple", "uint16", "uint32", "uint64", "uint8",
    "varbinary", "varchar", "variant",
})

_FIRST_WORD = re.compile(r"[a-z_][a-z0-9_]*")


def declared_type_problem(model: str, column: str, data_type: object) -> Optional[str]:
    """The error for a declared type whose first word no engine knows, naming the model, the column and
    the closest known type; None when it is known."""
    text = str(data_type or "").strip().lower()
    match = _FIRST_WORD.match(text)
    first = match.group(0) if match else ""
    if first in KNOWN_TYPES:
        return None
    close = difflib.get_close_matches(first, sorted(KNOWN_TYPES), n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return (f"cdc_columns() in model '{model}': column '{column}' is declared as '{data_type}', which is not a type{hint}. "
            "Declare it as one of string, bigint, int, decimal(p,s), double, boolean, date or timestamp "
            "(docs/type_mapping.md says which holds each source type).")
