"""What DDL in the binlog changes of the MariaDB/MySQL capture's tables (mysql_server.py reads the
binlog; capture is its MysqlCapture): columns an ALTER TABLE added, with the values of the rows that
existed then, and columns it retyped; columns a rows event has that the table's info lacks; and
tables whose rows a statement changes with no rows event, which are read again online."""

from __future__ import annotations

import logging
import re
import time
from dataclasses import replace
from typing import Any, Mapping, MutableMapping

from python_jobs.capture.mysql_columns import (
    added_again_columns, added_columns, altered_table, existing_rows, names_in, read_table_info, renamed_columns,
    retyped_columns, schema_event,
)
from python_jobs.capture.mysql_events import TableInfo
from python_jobs.capture.mysql_pages import check_read_again
from python_jobs.capture.mysql_retypes import charset_converted, converted_columns, ignored_errors, regenerated
from python_jobs.capture.mysql_statements import replaced_tables, repartitioned_tables, statement
from python_jobs.capture.output import CaptureError

log = logging.getLogger("cdc_merge.capture")

_DROP_KEY = re.compile(r"\bdrop\s+primary\s+key\b", re.IGNORECASE)
_ADD_KEY = re.compile(r"\bprimary\s+key\s*\(", re.IGNORECASE)


def key_dropped(ddl: str) -> bool:
    """An ALTER TABLE that drops the primary key and adds none. A capture that reaches it once the key was
    added again on the same columns (stopped or behind meanwhile: the catalog it reads has the key) writes
    the changes between keyed on it, two rows of one key among them: the table is read again."""
    return bool(_DROP_KEY.search(ddl)) and not _ADD_KEY.search(ddl)


def added_columns_event(capture: Any, event: Any, captured: MutableMapping[tuple[str, str], TableInfo], binlog_file: str,
                        start: int) -> tuple[dict[str, Any], dict[str, str]] | None:
    """An ALTER TABLE of a captured table that added, retyped or converted columns: its schema change
    event, with the values the rows that existed then hold in the added ones (mysql_columns.py) and the
    retyped ones' types before, and the table if the server may have changed its rows' values with no
    rows event, to be read again online (mysql_retypes.py), with why; the table's info read again. One that
    changed the primary key stops the capture; one that dropped it, met with the key back on the same
    columns, has the table read again (key_dropped)."""
    ddl = statement(event.query)
    named = altered_table(ddl, event.schema)
    table = captured.get(named) if named else None
    if table is None:
        return None
    qualified = f"{table.schema}.{table.name}"
    refreshed = read_table_info(capture.connection, qualified)
    logged_key = tuple(capture.known_keys.get(qualified) or table.primary_key)
    if set(refreshed.primary_key) != set(logged_key):
        # The mirror is keyed on the old key, which may no longer tell the rows apart.
        raise CaptureError(
            f"{qualified} is keyed on ({', '.join(refreshed.primary_key)}) since {event.query[:200]!r} at "
            f"{binlog_file}:{start} (or an ALTER TABLE after it), not on ({', '.join(logged_key)}) as captured: change "
            "its mirror's unique_key and its key under tables: in the landing config to "
            f"[{', '.join(refreshed.primary_key)}], then run the capture once with --resnapshot")
    capture.tables[qualified] = captured[named] = refreshed
    # A renamed column's rows hold its value under the new name with no rows event: read again.
    moved = renamed_columns(capture.known_columns.get(qualified, ()), refreshed, ddl)
    # So do a column's rows dropped and added again under its name (its new default in every row).
    again = added_again_columns(capture.known_columns.get(qualified, ()), refreshed, ddl)
    added, capture.known_columns[qualified] = added_columns(capture.known_columns.get(qualified, ()), refreshed, ddl)
    known_types = capture.known_types.setdefault(qualified, {column.name: column.column_type for column in table.columns})
    before = dict(known_types)
    retyped = retyped_columns(known_types, refreshed, ddl)
    named = names_in(ddl)
    known_types.update({column.name: column.column_type for column in refreshed.columns
                        if column.name.lower() in named or column.name not in known_types})
    # Told by the statement too: the catalog may have a later ALTER's types (a capture far behind).
    changed = converted_columns(before, {column.name: column.column_type for column in refreshed.columns}, retyped, ddl)
    converted = charset_converted(ddl)
    computed = regenerated(ddl)
    ignored = ignored_errors(ddl, getattr(event, "sql_mode", None))
    unkeyed = key_dropped(ddl)
    if not (added or retyped or changed or converted or computed or ignored or moved or again or unkeyed):
        return None
    zone = getattr(event, "time_zone", None)  # the ALTER's session's, when not the server's
    values = existing_rows(capture.connection, refreshed, added, ddl, zone.decode() if zone else None) if added else []
    # Added columns whose older rows' values no event carries (a generated column, an expression or
    # AUTO_INCREMENT default): the rows are read again, as after a lossy retype.
    unknown = [value.name for value in values if not value.known]
    read_again = {}
    if changed or converted or computed or unknown or ignored or moved or again or unkeyed:
        how = (f"retyping {', '.join(changed)}" if changed else "converting character sets" if converted else
               "computing a generated column again" if computed else ignored or
               (f"adding {', '.join(unknown)} with a value per row" if unknown else
                f"renaming to {', '.join(moved)}" if moved else
                f"dropping and adding again {', '.join(again)}" if again else "dropping the primary key"))
        check_read_again(capture, f"{event.query[:200]!r} at {binlog_file}:{start} ({how})", qualified)
        read_again = {qualified: f"ALTER TABLE {how}"}
    # The columns the log has after it: not the catalog's newest, when the capture reads far behind.
    logged = replace(refreshed, columns=tuple(c for c in refreshed.columns if c.name in capture.known_columns[qualified]))
    return schema_event(logged, values, binlog_file, start, event.timestamp * 1000, event.query, int(time.time() * 1000),
                        retyped), read_again


def tables_read_again(capture: Any, event: Any, captured: MutableMapping[tuple[str, str], TableInfo], where: str) -> list[str]:
    """The captured tables whose rows the statement changes with no rows event, to be read again
    online: partitions truncated, dropped or exchanged, or a table renamed into a captured name (an
    online schema change's swap, whose columns are read again here; a different key stops the capture)."""
    repartitioned = captured_among(repartitioned_tables(event.query, event.schema), captured)
    replaced = captured_among(replaced_tables(event.query, event.schema), captured)
    if not (repartitioned or replaced):
        return []
    for table in replaced:
        qualified = f"{table.schema}.{table.name}"
        swapped_in = read_table_info(capture.connection, qualified)
        logged_key = tuple(capture.known_keys.get(qualified) or table.primary_key)
        if swapped_in.primary_key != logged_key:
            raise CaptureError(
                f"{event.query[:200]!r} at {where} puts a table keyed on ({', '.join(swapped_in.primary_key)}) in "
                f"the place of {qualified}, keyed on ({', '.join(logged_key)}): change its mirror's unique_key and "
                f"its key under tables: in the landing config to [{', '.join(swapped_in.primary_key)}], then run the "
                "capture once with --resnapshot")
        capture.tables[qualified] = captured[(table.schema, table.name)] = swapped_in
        capture.known_keys[qualified] = list(swapped_in.primary_key)
        capture.known_columns[qualified] = [column.name for column in swapped_in.columns]
        capture.known_types[qualified] = {column.name: column.column_type for column in swapped_in.columns}
    check_read_again(capture, f"{event.query[:200]!r} at {where}", table_names(repartitioned + replaced))
    return [f"{table.schema}.{table.name}" for table in repartitioned + replaced]

def table_as_logged(capture: Any, table: TableInfo, event: Any) -> TableInfo:
    """The table's info, read again when the rows event's columns differ from it (ALTER TABLE since).
    Once per table and columns: read behind an ALTER, the catalog is ahead of every event before it,
    and is read again only after the next ALTER the binlog gives (which makes table another)."""
    columns = frozenset(column.name for column in event.columns)
    if columns == set(table.types):
        return table
    qualified = f"{table.schema}.{table.name}"
    read_for, read = capture.catalog_read_for.get(qualified, (None, None))
    if read is table and read_for == columns:
        return table
    refreshed = read_table_info(capture.connection, qualified)
    capture.tables[qualified] = refreshed
    capture.catalog_read_for[qualified] = (columns, refreshed)
    log.info("columns of %s changed: now %s", qualified, ", ".join(column.name for column in refreshed.columns))
    return refreshed


def captured_among(names: list, captured: Mapping[tuple[str, str], TableInfo]) -> list[TableInfo]:
    """The captured tables among names ((database, table) pairs; None left out)."""
    return [captured[name] for name in names if name in captured]


def table_names(tables: list) -> str:
    return ", ".join(f"{table.schema}.{table.name}" if isinstance(table, TableInfo) else ".".join(table)
                     for table in tables)


def versioning_error(query: str, where: str, tables: list[TableInfo]) -> CaptureError:
    return CaptureError(
        f"{query[:200]!r} at {where} makes {table_names(tables)} system-versioned, whose binlog rows then include "
        "its history rows as inserts, which the mirror would take for its rows: alter it to drop system versioning "
        "(or leave it out of --tables), then run the capture once with --resnapshot")
