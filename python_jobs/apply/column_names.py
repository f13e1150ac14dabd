"""Mirror column names an engine's SQL reads as a keyword where the mirror's statements name a column
unquoted (`select order from ...`): Databend's, found by naming a column each of 3,783 SQL keywords
in the embedded engine (python_jobs/devtools/databend_keywords.py prints them). Spark reads them as
names. cdc-scaffold gives such a column a name with an underscore (order_), read from its field; a
hand-written model is told to do the same before any SQL runs (validate.sql)."""

from __future__ import annotations

from typing import Iterable, Optional

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
