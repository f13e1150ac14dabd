"""Mirror column names an engine's SQL reads as a keyword where the mirror's statements name a column
unquoted (`select order from ...`): Databend's, found by naming a column each of 3,783 SQL keywords
in the embedded engine (python_jobs/devtools/databend_keywords.py prints them). Spark reads them as
names. cdc-scaffold gives such a column a name with an underscore (order_), read from its field; a
hand-written model is told to do the same before any SQL runs (validate.sql)."""

from __future__ import annotations

import re
from typing import Iterable, Optional

_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

DATABEND_KEYWORDS = frozenset("""
    all analyze and anti any array as asc attach between both case cast connection create cross
    current_timestamp desc distinct div do else end except false for format from full function grant group
    having identifier in inner intersect into is join lateral leading left like limit masking natural not
    notification null of offset on or order over partition pipe pivot policy qualify range regexp right rlike
    rows select semi share shares some stage stream task then to top trailing transaction true union unpivot
    using when where window with xor
""".split())


def keyword_column_problem(columns: Iterable[str], key_columns: Iterable[str], model: str) -> Optional[str]:
    """What to change when a model's column is one of Databend's keywords, or None."""
    keys = {str(key).lower() for key in key_columns}
    for column in columns:
        name = str(column).lower()
        if name not in DATABEND_KEYWORDS:
            continue
        if name in keys:
            return (f"cdc_merge model '{model}': unique_key column {column} is a word Databend reads as SQL where the "
                    "mirror's statements name a column, and a key column keeps its source's name: mirror this table "
                    "on Spark + Iceberg, or rename the column in the source.")
        return (f"cdc_merge model '{model}': column {column} is a word Databend reads as SQL where the mirror's "
                f"statements name a column: select it as {name}_ and read it from its field, "
                f"cdc_columns({{..., '{name}_': <type>}}, json_fields={{'{name}_': '{column}'}}) (cdc-scaffold names it so).")
    return None


def scaffolded_name(field: str, in_key: bool = False) -> str:
    """The mirror column cdc-scaffold names a source column (read from its field by json_fields): a name
    that is not plain ("two words", "price-eur", "café") made one (two_words, price_eur, caf), a
    Databend keyword given an underscore (order_; a key column keeps its name), a leading digit an
    underscore before it (_2fa)."""
    name = field if _PLAIN_NAME.match(field) else (re.sub(r"[^A-Za-z0-9_]+", "_", field).strip("_") or "column")
    if name.lower() in DATABEND_KEYWORDS and not in_key:
        name = f"{name}_"
    return f"_{name}" if name[0].isdigit() else name
