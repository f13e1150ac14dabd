"""Columns the source added with a value for the rows it already had (ALTER TABLE ... ADD COLUMN
... DEFAULT 0): the captures' schema change events carry that value (raw_data's "existing_rows",
python_jobs/capture/schema_events.py), and a mirror's rows older than the event take it in the
columns the mirror has (macros/materializations/cdc_merge/column_defaults.sql renders the SQL).

An event older than the addition cannot carry the column, and a row whose newest event is older
than it held the value from then on; an event after it carries the column itself. So every mirror
row older than the event gets the value, whatever the order in which the mirror learned of the
column: in the chunk that holds the event, after the chunk's batches, or when the mirror's model
adds the column later, after its backfill.

An event older than the addition can also land after it (a late or re-landed file, an online
snapshot's page read before the ALTER): the chunk that applies it holds no schema event, yet its row
is older than the addition. So a chunk looks at every such event of its table in the raw log newer
than its oldest event (`chunk_column_defaults`): for each column only the newest addition counts
(the value the source's rows older than it hold now); one in the chunk sets every older row, one
outside it only the older rows this chunk wrote (the others took it when it was applied).

A column whose type the source changed from a 32-bit float to a double (raw_data's "retyped_columns",
{field: type before}) is alike: the server widened the value each row held then exactly (a `real`
1.1 is 1.100000023841858 as a `double precision`), while the events written before it carry the
float's shortest digits ("1.1"), which a mirror's double column reads as 1.1. So a mirror's double
column gets, in its rows older than the event, the float its value is (`float_retypes`); that
changes only values read from those older events, whenever the mirror read them.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable, Mapping, Sequence

from python_jobs.apply.column_names import scaffolded_name
from python_jobs.formats.records import RejectedRecord, object_members

EXISTING_ROWS = "existing_rows"
RETYPED_COLUMNS = "retyped_columns"
# A 32-bit float's type as PostgreSQL (format_type) and MariaDB/MySQL (column_type) name it.
_SINGLE_PRECISION = re.compile(r"(real|float4|float)(\(\d+(,\d+)?\))?( unsigned)?( zerofill)?")
_DOUBLE = {"double", "double precision", "float64", "float8"}


def column_defaults(events: Sequence[Sequence[Any]], mirror_columns: Iterable[str],
                    renamed: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """events: (seq, raw_data) of schema events; renamed: {model column: JSON field} of the columns the
    model reads from a field of another name. Returns, in seq order, each event that sets columns the
    mirror has: {'seq', 'columns': [{'name': the mirror's column, 'field': the source's, 'image':
    '{"<field>":<exact JSON value>}'}]} (an image the column's cdc_value() conversion reads by its field,
    so the value is typed as the model types it)."""
    mirror = {str(name).lower(): str(name) for name in mirror_columns}
    by_field = {field: column.lower() for column, field in (renamed or {}).items() if column.lower() in mirror}
    plan = []
    for seq, raw_data in sorted((str(seq), raw_data) for seq, raw_data in events if raw_data):
        columns = [{"name": mirror[name], "field": field, "image": "{" + json.dumps(field) + ":" + value_text + "}"}
                   for field, value_text in existing_rows(raw_data)
                   if (name := by_field.get(field) or mirror_name(field, mirror)) is not None]
        if columns:
            plan.append({"seq": seq, "columns": columns})
    return plan


def chunk_column_defaults(events: Sequence[Sequence[Any]], chunk_seqs: Iterable[str], mirror_columns: Iterable[str],
                          renamed: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """events: (seq, raw_data) of the table's schema events newer than a chunk's oldest event, the
    chunk's own among them (chunk_seqs). As column_defaults, each column at its newest event only, and
    each event with 'in_chunk': whether the chunk holds it (else it sets only the rows the chunk wrote)."""
    newest = {}
    for event in column_defaults(events, mirror_columns, renamed):
        for column in event["columns"]:
            newest[column["name"]] = (event["seq"], column)
    in_chunk = {str(seq) for seq in chunk_seqs}
    plan: dict[str, list[dict[str, Any]]] = {}
    for seq, column in newest.values():
        plan.setdefault(seq, []).append(column)
    return [{"seq": seq, "columns": columns, "in_chunk": seq in in_chunk} for seq, columns in sorted(plan.items())]


def mirror_name(field: str, mirror: dict[str, str]) -> str | None:
    """The mirror's column (lower-cased key of mirror) of a source field: the field itself in any case
    (NewCol as newcol), or the name cdc-scaffold gives a field that is not plain or is a keyword ("sp
    ace" as sp_ace, order as order_, 2fa as _2fa, read through json_fields)."""
    for name in (field.lower(), scaffolded_name(field).lower()):
        if name in mirror:
            return name
    return None


def existing_rows(raw_data: str) -> list[tuple[str, str]]:
    """(field, exact JSON text of its value) of a schema event's existing_rows; none when it has none."""
    try:
        members = object_members(raw_data, 0, "raw_data")
        value, _, start = members.get(EXISTING_ROWS, (None, None, 0))
        if not isinstance(value, dict):
            return []
        return [(field, text) for field, (_, text, _) in object_members(raw_data, start, EXISTING_ROWS).items()]
    except RejectedRecord:
        return []


def float_retypes(events: Sequence[Sequence[Any]], column_types: Mapping[str, str]) -> list[dict[str, Any]]:
    """events: (seq, raw_data) of schema events; column_types: {mirror column: type}. Returns, in seq
    order, each event that retyped a 32-bit float the mirror holds as a double: {'seq', 'columns': [the
    mirror's columns]}."""
    mirror = {str(name).lower(): str(name) for name in column_types}
    doubles = {name.lower() for name, type_name in column_types.items() if _bare_type(type_name) in _DOUBLE}
    plan = []
    for seq, raw_data in sorted((str(seq), raw_data) for seq, raw_data in events if raw_data):
        columns = [mirror[name] for field, before in retyped_columns(raw_data).items()
                   if _SINGLE_PRECISION.fullmatch(before.strip().lower())
                   and (name := mirror_name(field, mirror)) is not None and name in doubles]
        if columns:
            plan.append({"seq": seq, "columns": columns})
    return plan


def retyped_columns(raw_data: str) -> dict[str, str]:
    """{field: its type before} of a schema event's retyped_columns; none when it has none."""
    if RETYPED_COLUMNS not in raw_data:
        return {}
    try:
        value = json.loads(raw_data).get(RETYPED_COLUMNS)
    except (ValueError, AttributeError):
        return {}
    return {field: before for field, before in value.items() if isinstance(before, str)} if isinstance(value, dict) else {}


def _bare_type(type_name: str) -> str:
    """A column type without Databend's nullability: Nullable(Float64), DOUBLE NULL -> float64, double."""
    bare = str(type_name).strip().lower()
    bare = re.sub(r"^nullable\((.*)\)$", r"\1", bare)
    return re.sub(r"\s+(not\s+)?null$", "", bare)
