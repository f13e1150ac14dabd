"""Foreign keys whose cascades change captured MariaDB/MySQL tables (ON DELETE/UPDATE CASCADE, SET
NULL, SET DEFAULT): the server changes the child rows inside the storage engine and writes no rows
event for them, only for the parent's row. So a parent's rows event that may cascade has the
captured tables it reaches read again online (mysql_pages.py), which brings their mirrors back to
the source's rows, the removed ones too. The keys are those of the binlog position the capture reads,
kept in its state and changed as DDL passes (mysql_foreign_keys.py); the catalog adds to them."""

from __future__ import annotations

import logging
import re
from typing import Any, Iterable, Sequence

from python_jobs.capture.mysql_foreign_keys import (
    CASCADING, Cascade, ForeignKey, after_statement, cascaded_tables, cascades_of, ibfk_number, keys_from_state, union,
)
from python_jobs.capture.mysql_names import EXACT, Table, TableNames
from python_jobs.capture.mysql_pages import check_read_again

log = logging.getLogger("cdc_merge.capture")

__all__ = ["Cascade", "cascaded_tables", "cascade_reads_again", "follow_statement", "read_cascades", "resume_cascades"]

# A foreign key's line in SHOW CREATE TABLE, and its rules: information_schema.referential_constraints
# has them too, but shows a user with only SELECT on the tables none of its rows.
_CONSTRAINT = re.compile(r"^\s*CONSTRAINT `((?:[^`]|``)+)` FOREIGN KEY .*$", re.MULTILINE)
_RULE = re.compile(r"\bON (DELETE|UPDATE) (CASCADE|SET NULL|SET DEFAULT)\b")


def _foreign_keys(connection: Any, schema: str, name: str) -> list[ForeignKey]:
    """A table's foreign keys whose rules cascade, as the catalog has them now."""
    import pymysql

    with connection.cursor() as cursor:
        try:
            cursor.execute(f"show create table `{schema.replace('`', '``')}`.`{name.replace('`', '``')}`")
        except pymysql.Error:  # a table between the parent and a captured one that the user may not read
            return []
        ddl = cursor.fetchone()[1]
        rules = {match.group(1).replace("``", "`"): dict(_RULE.findall(match.group(0))) for match in _CONSTRAINT.finditer(ddl)}
        if not any(rules.values()):
            return []
        cursor.execute(
            "select constraint_name, referenced_table_schema, referenced_table_name, referenced_column_name "
            "from information_schema.key_column_usage where table_schema = %s and table_name = %s "
            "and referenced_table_name is not null order by constraint_name, ordinal_position", (schema, name))
        keys: dict[str, tuple[Table, dict[str, str], list[str]]] = {}
        for constraint, parent_schema, parent, column in cursor.fetchall():
            if rule := rules.get(constraint):
                keys.setdefault(constraint, ((parent_schema, parent), rule, []))[2].append(column)
    return [ForeignKey((schema, name), constraint, parent, rule.get("DELETE", ""), rule.get("UPDATE", ""), tuple(columns))
            for constraint, (parent, rule, columns) in keys.items()]


def _highest_ibfk(connection: Any, table: Table) -> int:
    """The highest n of the table's foreign keys (any rule) the server named <table>_ibfk_<n>, in the catalog now."""
    with connection.cursor() as cursor:
        cursor.execute("select distinct constraint_name from information_schema.key_column_usage where table_schema = %s "
                       "and table_name = %s and referenced_table_name is not null", table)
        return max((ibfk_number(row[0], table[1]) for row in cursor.fetchall()), default=0)


def read_foreign_keys(connection: Any, tables: Sequence[str], known: Iterable[ForeignKey] = (),
                      names: TableNames = EXACT) -> list[ForeignKey]:
    """The known keys and the catalog's of the captured tables and of the tables their keys (known or
    the catalog's) reference, directly or through tables between them (names compared as names says)."""
    known = list(known)
    found: list[ForeignKey] = []
    reached = [names.table((schema, name)) for schema, name in (table.split(".", 1) for table in tables)]
    visited: set[Table] = set()
    while reached:
        child = reached.pop(0)
        if child in visited:
            continue
        visited.add(child)
        keys = _foreign_keys(connection, *child)
        found.extend(keys)
        reached.extend(names.table(key.parent) for key in [*keys, *known]
                       if names.table(key.table) == child and names.table(key.parent) not in visited)
    return union(known, found)


def read_cascades(connection: Any, tables: Sequence[str],
                  names: TableNames = EXACT) -> tuple[list[ForeignKey], dict[Table, list[Cascade]]]:
    """The catalog's foreign keys that cascade into the captured tables, and their cascades; a warning
    for each of a captured table."""
    keys = read_foreign_keys(connection, tables, names=names)
    for key in keys:
        qualified = ".".join(key.table)
        if qualified in tables and (rules := [f"ON {when} {rule}" for when, rule in (("DELETE", key.on_delete),
                                                                                      ("UPDATE", key.on_update))
                                              if rule in CASCADING]):
            log.warning("foreign key %s of %s (%s from %s): the binlog has no rows for what it changes, so the capture "
                        "reads %s again online after each change of %s that may cascade (it needs the signal table: "
                        "docs/online_snapshots.md)", key.name, qualified, ", ".join(rules), key.parent[1], qualified,
                        key.parent[1])
    return keys, cascades_of(keys, tables, names)


def resume_cascades(capture: Any, entries: Any) -> None:
    """The keys of the state's position (entries: its foreign_keys) with those known now: a key dropped
    since still cascades the changes before its drop. A state without them keeps the catalog's."""
    if entries is None:
        return
    kept = keys_from_state(entries)
    tables = capture.config.tables
    unknown = set(kept) - set(capture.foreign_keys)
    keys = read_foreign_keys(capture.connection, tables, kept, capture.names) if unknown else kept
    capture.foreign_keys = union(keys, capture.foreign_keys)
    capture.cascades = cascades_of(capture.foreign_keys, tables, capture.names)


def follow_statement(capture: Any, event: Any, query: str) -> None:
    """The keys after a DDL statement of the binlog (query: its text in upper case): those it drops go,
    and the catalog's are added when it may have added some."""
    if not query.startswith(("ALTER", "CREATE", "DROP", "RENAME")):
        return
    keys, adding = after_statement(capture.foreign_keys, event.query, event.schema, capture.names,
                                   lambda table: _highest_ibfk(capture.connection, table))
    if adding:
        keys = read_foreign_keys(capture.connection, capture.config.tables, keys, capture.names)
    if keys != capture.foreign_keys:
        capture.foreign_keys = keys
        capture.cascades = cascades_of(keys, capture.config.tables, capture.names)


def cascade_reads_again(capture: Any, current: Any, event: Any, cascades: list, where: str) -> None:
    """The captured tables a parent's rows event may have changed by a cascade, to be read again online."""
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent

    if not isinstance(event, (DeleteRowsEvent, UpdateRowsEvent)):
        return
    deleted = isinstance(event, DeleteRowsEvent)
    reached = cascaded_tables(cascades, deleted, lambda: {
        name for row in event.rows for name, value in row["before_values"].items() if row["after_values"].get(name) != value})
    if reached:
        parent = f"{event.schema}.{event.table}"
        check_read_again(capture, f"a {'delete' if deleted else 'update'} of {parent} at {where} (a foreign key's cascade)",
                         ", ".join(reached))
        for table in reached:
            current.read_again.setdefault(table, f"a cascade from {parent}")
