"""A source row against the mirror's row, each value compared in the mirror column's type.

The source's values are as the capture writes them (python_jobs/capture: decimals as exact text,
times as ISO-8601 text, MySQL FLOAT as its shortest decimal, ...); the mirror's as the mirror's
engine renders them as JSON (macros/verify.sql). Both are brought to one Python value per mirror
type, the way the mirror's own conversion reads the capture's value: a value that type cannot
hold is null in the mirror (docs/type_mapping.md), and so here; a decimal is rounded half away
from zero to the mirror column's scale, as the mirror's cast rounds it and the checksum reads it
(row_hash.py).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import struct
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation
from functools import lru_cache
from types import SimpleNamespace
from typing import Any, Callable, Iterable, Mapping, Sequence

_NULLABLE = re.compile(r"^nullable\((.*)\)$")
_SCALE = re.compile(r"\(\s*\d+\s*,\s*(\d+)\s*\)")
# A source's declared decimal: numeric(12,4), decimal(12,4) unsigned.
_DECLARED_SCALE = re.compile(r"^\s*(?:numeric|decimal)\s*\(\s*\d+\s*,\s*(\d+)\s*\)", re.IGNORECASE)
# The years of the dates and times a mirror engine holds: Databend's run from 1000 to 9999, and its
# mirror holds null for any other (macros/cdc_columns.sql), as Spark does for a year before 1.
HELD_YEARS = {"databend": (1000, 9999)}


def type_family(engine_type: str) -> str:
    """A mirror column's type, as Spark or Databend names it, as the family its values compare in."""
    name = engine_type.strip().lower()
    nested = _NULLABLE.match(name)
    if nested:
        name = nested.group(1)
    if name.startswith(("decimal", "numeric")):
        return "decimal"
    if name in ("tinyint", "smallint", "int", "integer", "bigint", "long", "short", "byte") or re.match(r"^u?int\d+$", name):
        return "integer"
    if name in ("float", "real", "float32"):
        return "float"
    if name in ("double", "float64", "double precision"):
        return "double"
    if name in ("boolean", "bool"):
        return "boolean"
    if name == "date":
        return "date"
    if name.startswith(("timestamp", "datetime")):
        return "timestamp"
    if name in ("string", "text") or name.startswith(("varchar", "char")):
        return "string"
    return "other"


def decimal_scale(engine_type: str) -> int:
    """The scale of a decimal type as an engine names it (decimal(12,2): 2); 0 when it names none."""
    match = _SCALE.search(engine_type)
    return int(match.group(1)) if match else 0


def narrower_decimals(mirror_columns: Sequence[Sequence[str]], declared: Mapping[str, str]) -> list[str]:
    """A note naming the mirror's decimal columns of a smaller scale than their source columns declare
    (declared: {source column: its type}): compared at the mirror's scale, as the mirror holds them,
    a value that differs only in the digits the mirror's type drops is equal here."""
    mirror_types = {name.lower(): data_type for name, data_type in mirror_columns if not name.startswith("_cdc")}
    narrower = []
    for name, source in source_columns(mirror_types, declared).items():
        scale = _DECLARED_SCALE.search(declared[source])
        mirror_type = mirror_types[name]
        if scale and type_family(mirror_type) == "decimal" and decimal_scale(mirror_type) < int(scale.group(1)):
            narrower.append(f"{name} (source {declared[source]}, mirror {mirror_type})")
    if not narrower:
        return []
    return ["compared at the mirror's scale, smaller than the source's, so values that differ only in the digits the "
            f"mirror's type drops count as equal (its model casts them so: cast to the source's scale to mirror them "
            f"exactly): {', '.join(narrower)}"]


def value_family(engine_type: str) -> str:
    """type_family, with a decimal's scale: 'decimal:2' for decimal(12,2), which comparable rounds to."""
    family = type_family(engine_type)
    return f"decimal:{decimal_scale(engine_type)}" if family == "decimal" else family


# Wide enough for any mirror decimal (Databend's hold 76 digits): the default context's 28 made a
# 30-digit value fail to round, and so compare as null.
_WIDE = Context(prec=100)


def _decimal_at(scale: int) -> Callable[[Any], Decimal]:
    return lambda value: Decimal(str(value)).quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP, context=_WIDE)


def _float32(value: Any) -> float:
    return struct.unpack("<f", struct.pack("<f", float(value)))[0]


def _boolean(value: Any) -> bool:
    return value if isinstance(value, bool) else str(value).strip().lower() in ("true", "t", "1")


def _timestamp(value: Any) -> dt.datetime:
    parsed = dt.datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
    return parsed.astimezone(dt.timezone.utc).replace(tzinfo=None) if parsed.tzinfo else parsed


def _date(value: Any) -> dt.date:
    text = str(value).strip()
    if text.endswith(" BC"):  # before year 1: null in a mirror (docs/type_mapping.md)
        raise ValueError(text)
    return dt.date.fromisoformat(text[:10])


def _string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


_READERS: dict[str, Callable[[Any], Any]] = {
    "decimal": lambda value: Decimal(str(value)),
    "integer": lambda value: int(Decimal(str(value))),
    "float": _float32,
    "double": float,
    "boolean": _boolean,
    "date": _date,
    "timestamp": _timestamp,
    "string": _string,
    "other": _string,
}


def comparable(value: Any, family: str, engine: str | None = None) -> Any:
    """value as the family's Python value; None for null and for a value the family (on the mirror's
    engine) cannot hold."""
    if value is None:
        return None
    try:
        result = _decimal_at(int(family.split(":")[1]))(value) if family.startswith("decimal:") else _READERS[family](value)
    except (ValueError, TypeError, ArithmeticError, InvalidOperation, OverflowError):
        return None
    if isinstance(result, (float, Decimal)) and not (result == result and abs(result) != float("inf")):
        return None  # NaN and infinities: the capture sends them as null (docs/type_mapping.md)
    if isinstance(result, dt.date) and engine in HELD_YEARS:
        first, last = HELD_YEARS[engine]
        return result if first <= result.year <= last else None
    return result


def source_columns(mirror_columns: Iterable[str], source_columns: Iterable[str]) -> dict[str, str]:
    """{mirror column: the source column it mirrors}: of its own name, else the source column cdc-scaffold
    names so (`two words` as two_words, `order` as order_: scaffold.model_column_names). A mirror column
    of neither (derived, or renamed otherwise) is not in it: it cannot be compared."""
    return dict(_source_columns(tuple(name.lower() for name in mirror_columns), tuple(source_columns)))


@lru_cache(maxsize=64)
def _source_columns(mirror_columns: tuple[str, ...], source_columns: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    from python_jobs.scaffold import model_column_names
    from python_jobs.source_tables import ScaffoldError

    by_name = {name.lower(): name for name in source_columns}
    try:
        table = SimpleNamespace(columns=[SimpleNamespace(name=name) for name in source_columns], primary_key=(),
                                qualified="")
        scaffolded = {mirror.lower(): source for source, mirror in model_column_names(table).items()}
    except ScaffoldError:  # two source columns scaffolded alike: by their own names only
        scaffolded = {}
    return tuple((name, by_name.get(name) or scaffolded[name]) for name in mirror_columns
                 if name in by_name or (name in scaffolded and scaffolded[name].lower() not in mirror_columns))


def differences(source_row: Mapping[str, Any], mirror_row: Mapping[str, Any],
                families: Mapping[str, str], engine: str | None = None) -> dict[str, tuple[Any, Any]]:
    """{column: (source value, mirror value)} of the mirror's columns whose values differ, each against
    its source column (source_columns); a mirror column the source has none for is not compared.
    engine: the mirror's (row_hash.ENGINES), whose limits a value is held in."""
    found, names = {}, source_columns(families, source_row)
    for column, family in families.items():
        source = names.get(column.lower())
        if source is None:
            continue
        expected = comparable(source_row[source], family, engine)
        actual = comparable(mirror_row.get(column), family, engine)
        if expected != actual:
            found[column] = (source_row[source], mirror_row.get(column))
    return found
