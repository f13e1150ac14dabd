"""A captured MariaDB/MySQL table's columns, as information_schema has them (read_table_info), and the
columns changed: which columns an ALTER TABLE in the binlog added, and the value the rows that existed then hold in
them (python_jobs/capture/schema_events.py says why that needs an event of its own), and which it
retyped. The binlog has the ALTER TABLE at its exact place, so the schema change event is written
there."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from typing import Any, Mapping, Sequence

from python_jobs.capture.mysql_ddl_defaults import added_column_defaults
from python_jobs.capture.mysql_events import Column, TableInfo, json_value
from python_jobs.capture.mysql_retypes import _clauses
from python_jobs.capture.output import CaptureError
from python_jobs.capture.schema_events import AddedColumn, schema_change_event

_ALTER = re.compile(r"^\s*alter\s+(?:online\s+|ignore\s+)*table\s+(?:if\s+exists\s+)?(?:`?([^`.\s]+)`?\.)?`?([^`.\s]+)`?",
                    re.IGNORECASE)
_INTEGER_TYPES = {"tinyint", "smallint", "mediumint", "int", "integer", "bigint"}
_BINARY_TYPES = {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"}
_TEXT_TYPES = {"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "json"}
_ID = r"(?:`(?:[^`]|``)*`|[^`\s,()]+)"  # a column's name in a statement, backquoted or not
_ENUM_MEMBER = re.compile(r"'((?:[^']|'')*)'")
# A default that is a literal: a number, a quoted string, or a bit or hex literal.
_LITERAL = re.compile(r"^(?:[-+]?\d+(?:\.\d*)?(?:e[-+]?\d+)?|'(?:[^']|'')*'|b'[01]*'|0x[0-9a-f]+)$", re.IGNORECASE)


def altered_table(query: str, default_schema: Any) -> tuple[str, str] | None:
    """(database, table) of an ALTER TABLE statement, else None."""
    match = _ALTER.match(query)
    if match is None:
        return None
    schema = match.group(1) or (default_schema.decode() if isinstance(default_schema, bytes) else default_schema)
    return schema, match.group(2)


def names_in(ddl: str) -> set[str]:
    """Every name a statement may give a column, lower-cased: its words (`Straße` too) and its
    backquoted names (`two words`, `a``b`)."""
    quoted = re.compile(r"`(?:[^`]|``)*`")
    return {_unquoted(name) for name in quoted.findall(ddl)} | {word.lower() for word in re.findall(r"[\w$]+", quoted.sub(" ", ddl))}


def _unquoted(name: str) -> str:
    return (name[1:-1].replace("``", "`") if name.startswith("`") else name).lower()


# A RENAME COLUMN's or a CHANGE's name before and after (IF EXISTS is no name).
_RENAMES = re.compile(rf"\b(?:rename\s+column\s+(?:if\s+exists\s+)?({_ID})\s+to|change\s+(?:column\s+)?"
                      rf"(?:if\s+exists\s+)?({_ID}))\s+({_ID})", re.IGNORECASE)


def _renamed_into(ddl: str) -> set[str]:
    """The names, lower-cased, a RENAME COLUMN or a CHANGE gives columns (a CHANGE's may be its own)."""
    return {_unquoted(new) for _, _, new in _RENAMES.findall(ddl)}


def _moved_into(ddl: str) -> set[str]:
    """The names, lower-cased, a RENAME COLUMN or a CHANGE gives a column that had another name."""
    return {_unquoted(new) for renamed, changed, new in _RENAMES.findall(ddl)
            if _unquoted(renamed or changed) != _unquoted(new)}


def renamed_columns(known: Sequence[str], after: TableInfo, ddl: str) -> list[str]:
    """The columns an ALTER TABLE renamed: of after, under a name the log did not have (known) that
    the statement renames a column to, or under a name another column had before it (columns that
    swap names: neither name is new, and each row holds the other's value under it)."""
    renamed, moved, old = _renamed_into(ddl), _moved_into(ddl), set(known)
    return [column.name for column in after.columns
            if (column.name not in old and column.name.lower() in renamed) or column.name.lower() in moved]


# A DROP clause's first word that names no column: DROP INDEX, DROP PRIMARY KEY, DROP PARTITION, ...
_NOT_DROPPED_COLUMNS = {"index", "key", "primary", "foreign", "constraint", "partition", "check", "system", "period",
                        "unique", "fulltext", "spatial", "if"}
_DROP = re.compile(rf"^\s*drop\s+(?:(column)\s+)?(?:if\s+exists\s+)?({_ID})", re.IGNORECASE)


def added_again_columns(known: Sequence[str], after: TableInfo, ddl: str) -> list[str]:
    """The columns an ALTER TABLE dropped that the table has after it, under a name the log had (known):
    added again (DROP COLUMN a, ADD COLUMN a ... DEFAULT 5; or a later statement's ADD, read by a
    capture far behind), every row holding the new column's value with no rows event."""
    dropped = set()
    for clause in _clauses(ddl):
        match = _DROP.match(clause)
        if match is not None and (match.group(1) or match.group(2).startswith("`")
                                  or _unquoted(match.group(2)) not in _NOT_DROPPED_COLUMNS):
            dropped.add(_unquoted(match.group(2)))
    old = set(known)
    return [column.name for column in after.columns if column.name in old and column.name.lower() in dropped]


def added_columns(known: Sequence[str], after: TableInfo, ddl: str) -> tuple[list[Column], list[str]]:
    """The columns an ALTER TABLE added: those of after that the log did not have (known), that the
    statement names and did not rename into being; and the columns the log has after it. Only the
    columns the statement names count: a capture far behind reads the table's newest columns."""
    named = names_in(ddl)
    renamed = _renamed_into(ddl)
    old = set(known)
    added = [column for column in after.columns
             if column.name not in old and column.name.lower() in named and column.name.lower() not in renamed]
    return added, [column.name for column in after.columns if column.name in old or column.name.lower() in named]


def retyped_columns(old: Mapping[str, str], after: TableInfo, ddl: str) -> dict[str, str]:
    """The columns an ALTER TABLE changed the type of ({name: type before}): with their types as the
    log had them before it (old) and the catalog's after it, named by the statement (a capture far
    behind reads the table's newest columns)."""
    named = names_in(ddl)
    return {column.name: old[column.name] for column in after.columns
            if column.name in old and old[column.name] != column.column_type and column.name.lower() in named}


def existing_rows(connection: Any, table: TableInfo, columns: Sequence[Column], ddl: str = "",
                  time_zone: str | None = None) -> list[AddedColumn]:
    """What the rows that existed before the columns were added hold in them: the literal default the
    adding statement (ddl) gives, which a later ALTER may have changed in the catalog since
    (mysql_ddl_defaults.py), else the catalog's default. time_zone: the adding session's (its binlog
    event's, when not the server's), in which a TIMESTAMP's literal is the time it stores."""
    stated = added_column_defaults(ddl)
    with connection.cursor() as cursor:
        cursor.execute("select version()")
        mariadb = "mariadb" in cursor.fetchone()[0].lower()
        cursor.execute(
            "select column_name, column_default, is_nullable, extra from information_schema.columns "
            "where table_schema = %s and table_name = %s", (table.schema, table.name))
        catalog = {row[0]: row[1:] for row in cursor.fetchall()}
        added = []
        for column in columns:
            default, nullable, extra = catalog.get(column.name, (None, "YES", ""))
            literal = stated.get(column.name.lower())
            zone = None  # the catalog shows a TIMESTAMP's default in this session's time zone
            if literal is not None and "generated" not in (extra or "").lower():
                default = ("NULL" if literal.lower() == "null" else literal) if mariadb else _catalog_text(column, literal, default)
                zone = time_zone
            added.append(_existing_value(cursor, column, default, nullable == "YES", (extra or "").lower(), mariadb, zone))
    return added


def _existing_value(cursor: Any, column: Column, default: str | None, nullable: bool, extra: str, mariadb: bool,
                    time_zone: str | None = None) -> AddedColumn:
    def known(value: Any) -> AddedColumn:
        return AddedColumn(column.name, column.column_type, json_value(column, value))

    if "generated" in extra or "auto_increment" in extra:  # computed or numbered per row
        return AddedColumn(column.name, column.column_type, known=False)
    if default is None or (mariadb and default == "NULL"):
        return known(None) if nullable else known(_implicit_default(column))
    literal = default if mariadb else _mysql_literal(column, default)
    if not _LITERAL.match(literal):  # current_timestamp(), uuid(), ...: computed when the rows were changed
        return AddedColumn(column.name, column.column_type, known=False)
    if column.data_type == "timestamp":
        return known(_stored_timestamp(cursor, literal, time_zone))
    cast = _cast_type(column)
    cursor.execute(f"select cast({literal} as {cast})" if cast else f"select {literal} + 0")
    value = cursor.fetchone()[0]
    if column.data_type == "binary" and isinstance(value, bytes):
        value = value.ljust(_length(column), b"\0")
    return known(value)


def _stored_timestamp(cursor: Any, literal: str, time_zone: str | None) -> dt.datetime | None:
    """A TIMESTAMP literal as the UTC time the column stores: read in the writing session's time zone
    (this session's when None); the zero timestamp as None, as the captures write it."""
    if time_zone:
        cursor.execute("select @@session.time_zone")
        (own,) = cursor.fetchone()
        cursor.execute("set session time_zone = %s", (time_zone,))
    try:
        cursor.execute(f"select unix_timestamp(cast({literal} as datetime(6)))")
        (epoch,) = cursor.fetchone()
    finally:
        if time_zone:
            cursor.execute("set session time_zone = %s", (own,))
    if not epoch:
        return None
    return dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=int(Decimal(epoch) * 1_000_000))


def _catalog_text(column: Column, literal: str, catalog_default: str | None) -> str | None:
    """A statement's literal default as MySQL's information_schema writes it (unquoted: _mysql_literal
    quotes it again); the catalog's where the two forms are not the same kind."""
    numeric = column.data_type in _INTEGER_TYPES | {"decimal", "float", "double", "year"}
    if literal.lower() == "null":
        return None
    if literal.startswith("'") and not numeric and column.data_type != "bit":
        return literal[1:-1].replace("''", "'")
    if numeric and literal[0] in "+-0123456789" and not literal.lower().startswith("0x"):
        return literal
    return catalog_default


def _mysql_literal(column: Column, default: str) -> str:
    """MySQL's information_schema has a literal default unquoted."""
    if column.data_type in _INTEGER_TYPES | {"decimal", "float", "double", "year"} or column.data_type == "bit":
        return default
    return "'" + default.replace("\\", "\\\\").replace("'", "''") + "'"


def _cast_type(column: Column) -> str | None:
    data_type = column.data_type
    if data_type in _INTEGER_TYPES or data_type == "year":
        return "unsigned" if "unsigned" in column.column_type else "signed"
    if data_type == "decimal":
        return re.sub(r"\s+(unsigned|zerofill)", "", column.column_type)
    if data_type in ("float", "double"):
        return "double"
    if data_type == "date":
        return "date"
    if data_type in ("datetime", "timestamp"):
        return "datetime(6)"
    if data_type == "time":
        return "time(6)"
    if data_type == "bit":
        return None
    if data_type in _BINARY_TYPES:
        return "binary"
    return "char"


def _implicit_default(column: Column) -> Any:
    """What ADD COLUMN ... NOT NULL without a default gives existing rows."""
    data_type = column.data_type
    if data_type in _INTEGER_TYPES | {"decimal", "float", "double", "year", "bit"}:
        return 0.0 if data_type in ("float", "double") else 0
    if data_type == "enum":
        members = _ENUM_MEMBER.findall(column.column_type)
        return members[0].replace("''", "'") if members else ""
    if data_type == "binary":
        return b"\0" * _length(column)
    if data_type in _BINARY_TYPES:
        return b""
    if data_type == "time":
        return dt.timedelta(0)
    if data_type in ("date", "datetime", "timestamp"):
        return None  # the zero date, which the captures write as null
    return ""


def _length(column: Column) -> int:
    match = re.search(r"\((\d+)\)", column.column_type)
    return int(match.group(1)) if match else 0


def schema_event(table: TableInfo, added: Sequence[AddedColumn], binlog_file: str, position: int, ts_ms: int | None,
                 ddl: str, processed_ms: int, retyped: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The schema change event at the ALTER TABLE's place in the binlog."""
    source = {"connector": "mysql", "name": "cdc_merge", "db": table.schema, "table": table.name,
              "file": binlog_file, "pos": position, "row": 0, "ts_ms": ts_ms, "snapshot": "false"}
    return schema_change_event(
        source=source, table_id=f'"{table.schema}"."{table.name}"',
        columns=[(column.name, column.column_type) for column in table.columns], primary_key=table.primary_key,
        added=added, processed_ms=processed_ms, ddl=ddl, retyped=retyped,
    )


def read_table_info(connection: Any, qualified: str, missing_ok: bool = False) -> TableInfo | None:
    """A table's columns and primary key from information_schema (missing_ok: None if it has none)."""
    schema, name = qualified.split(".")
    with connection.cursor() as cursor:
        cursor.execute(
            "select column_name, data_type, column_type, column_key from information_schema.columns "
            "where table_schema = %s and table_name = %s order by ordinal_position",
            (schema, name),
        )
        rows = cursor.fetchall()
    if not rows:
        if missing_ok:
            return None
        raise CaptureError(f"table {qualified} does not exist (or the user cannot see it)")
    # An ENUM's or SET's members as defined: values are written in the members' own case ('Read', 'Õ').
    columns = tuple(Column(row[0], row[1].lower(), row[2] if row[1].lower() in ("enum", "set") else row[2].lower())
                    for row in rows)
    primary_key = tuple(row[0] for row in rows if row[3] == "PRI")
    if not primary_key:
        raise CaptureError(f"table {qualified} has no primary key: a mirror needs one to merge on")
    compressed = [column.name for column in columns if "compressed" in column.column_type]
    if compressed:
        raise CaptureError(f"column {compressed[0]} of table {qualified} is COMPRESSED, whose binlog values the "
                           "capture cannot decode: alter it to a column without COMPRESSED, or leave the table out")
    # MariaDB 5.3's DATETIME(n), TIME(n) and TIMESTAMP(n) (mysql56_temporal_format OFF): the binlog has
    # neither their type nor their length.
    old = [column.name for column in columns if "mariadb-5.3" in column.column_type and "(" in column.column_type]
    if old:
        raise CaptureError(f"column {old[0]} of table {qualified} has MariaDB 5.3's format of fractional seconds "
                           "(created while mysql56_temporal_format was OFF), whose binlog values the capture cannot "
                           f"read: with mysql56_temporal_format=ON, ALTER TABLE {qualified} FORCE converts it")
    with connection.cursor() as cursor:
        cursor.execute("select table_type from information_schema.tables where table_schema = %s and table_name = %s",
                       (schema, name))
        (table_type,) = cursor.fetchone() or ("",)
    if table_type.upper() == "SYSTEM VERSIONED":
        raise CaptureError(f"table {qualified} is system-versioned: the binlog logs its history rows as inserts of "
                           "the table; leave it out of --tables, or alter it to drop system versioning")
    return TableInfo(schema, name, columns, primary_key)
