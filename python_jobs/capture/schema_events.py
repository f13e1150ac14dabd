"""Columns added to a captured table, as the captures write them: a Debezium schema change event
at the addition's place in the log, carrying the value the rows that existed then have.

`ALTER TABLE ... ADD COLUMN c ... DEFAULT 0` gives every existing row c = 0 without writing a row
change, in PostgreSQL and MySQL alike, so the log alone would leave those rows null in a mirror.
The event's `tableChanges[].existingRows` (an addition to Debezium's format, which readers of
Debezium ignore) is an image of the added columns as those rows hold them; the landing keeps it in
the schema event's `raw_data` and a mirror applies it to its rows older than the event
(macros/materializations/cdc_merge/column_defaults.sql, docs/schema_changes.md).

A column whose type the source changed (`real` to `double precision`, `int` to `bigint`) is named in
`tableChanges[].retypedColumns` ({column: its type before}), another addition of ours: the server
converted the rows it had without a row change, so a mirror that widens the column keeps those rows'
stored values, widened as the server widened them, rather than computing them again from events
written in the old type (a `real` sent as `1.1` is `1.100000023841858` as a `double precision`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

log = logging.getLogger("cdc_merge.capture")


@dataclass(frozen=True)
class AddedColumn:
    name: str
    type_name: str
    # The value every row that existed before the addition has, as the capture writes values.
    existing_value: Any = None
    # False when those rows got values the log cannot know (a volatile default such as random()).
    known: bool = True


def schema_change_event(
    *, source: Mapping[str, Any], table_id: str, columns: Sequence[tuple[str, str]], primary_key: Sequence[str],
    added: Sequence[AddedColumn], processed_ms: int, ddl: str | None = None, retyped: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Debezium's schema change event of one table: its columns after the change ([(name, type)]),
    existingRows, the added columns' values in the rows that existed before it, and retypedColumns,
    the columns whose type it changed ({name: type before}), when there are any."""
    change: dict[str, Any] = {
        "type": "ALTER",
        "id": table_id,
        "table": {
            "primaryKeyColumnNames": list(primary_key),
            "columns": [{"name": name, "typeName": type_name, "position": position}
                        for position, (name, type_name) in enumerate(columns, start=1)],
        },
        "existingRows": {column.name: column.existing_value for column in added if column.known},
    }
    if retyped:
        change["retypedColumns"] = dict(retyped)
    return {
        "source": source,
        "ts_ms": processed_ms,
        "databaseName": source.get("db"),
        "schemaName": source.get("schema"),
        "ddl": ddl,
        "tableChanges": [change],
    }


def warn_unknown_values(table: str, added: Sequence[AddedColumn], remedy: str) -> None:
    """The added columns whose values in existing rows the log cannot carry: said once, with what to do."""
    unknown = [column.name for column in added if not column.known]
    if unknown:
        log.warning("columns %s added to %s: the server keeps no value of theirs for the rows that existed then (a "
                    "default computed for each row or at the time of the change, such as random(), current_timestamp() "
                    "or a generated column, or one a later rewrite of the table made each row's), and no change event "
                    "carries those values, so until they are read again their mirror rows show null in these columns; %s",
                    ", ".join(unknown), table, remedy)
