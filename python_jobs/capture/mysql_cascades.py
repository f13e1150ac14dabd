"""Foreign keys whose cascades change captured MariaDB/MySQL tables (ON DELETE/UPDATE CASCADE, SET
NULL, SET DEFAULT): the server changes the child rows inside the storage engine and writes no rows
event for them, only for the parent's row. So a parent's rows event that may cascade has the
captured tables it reaches read again online (mysql_pages.py), which brings their mirrors back to
the source's rows, the removed ones too."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any, Sequence

from python_jobs.capture.mysql_pages import check_read_again

log = logging.getLogger("cdc_merge.capture")

_CASCADING = ("CASCADE", "SET NULL", "SET DEFAULT")


@dataclass(frozen=True)
class Cascade:
    """What changes of one parent table reach captured tables with no rows event."""

    tables: tuple[str, ...]  # the captured tables reached (database.table)
    on_delete: bool
    # The parent's columns whose change an UPDATE cascades; None: any update (a parent further up,
    # whose cascade's own updates reach the captured table through a table between them).
    on_update: frozenset[str] | None = frozenset()


# A foreign key's line in SHOW CREATE TABLE, and its rules: information_schema.referential_constraints
# has them too, but shows a user with only SELECT on the tables none of its rows.
_CONSTRAINT = re.compile(r"^\s*CONSTRAINT `((?:[^`]|``)+)` FOREIGN KEY .*$", re.MULTILINE)
_RULE = re.compile(r"\bON (DELETE|UPDATE) (CASCADE|SET NULL|SET DEFAULT)\b")


def _foreign_keys(connection: Any, schema: str, name: str) -> list[tuple[str, str, str, str, str, list[str]]]:
    """(constraint, parent database, parent table, delete rule, update rule, parent columns) of a table's
    foreign keys whose rules cascade."""
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
        keys: dict[str, tuple[str, str, str, str, str, list[str]]] = {}
        for constraint, parent_schema, parent, column in cursor.fetchall():
            rule = rules.get(constraint) or {}
            if rule:
                keys.setdefault(constraint, (constraint, parent_schema, parent, rule.get("DELETE", ""),
                                             rule.get("UPDATE", ""), []))[5].append(column)
    return list(keys.values())


def read_cascades(connection: Any, tables: Sequence[str], warn: bool = True) -> dict[tuple[str, str], list[Cascade]]:
    """The parent tables whose changes cascade into the captured tables, directly or through tables
    between them, each with what of its changes does; with warn, a warning for each direct one."""
    cascades: dict[tuple[str, str], list[Cascade]] = {}
    for qualified in tables:
        schema, name = qualified.split(".", 1)
        reached, direct = [(schema, name)], True
        while reached:
            further = []
            for child in reached:
                for constraint, parent_schema, parent, on_delete, on_update, columns in _foreign_keys(connection, *child):
                    deletes, updates = on_delete in _CASCADING, on_update in _CASCADING
                    if not (deletes or updates):
                        continue
                    if direct and warn:
                        rules = [f"ON {when} {rule}" for when, rule in (("DELETE", on_delete), ("UPDATE", on_update))
                                 if rule in _CASCADING]
                        log.warning("foreign key %s of %s (%s from %s): the binlog has no rows for what it changes, so "
                                    "the capture reads %s again online after each change of %s that may cascade (it "
                                    "needs the signal table: docs/online_snapshots.md)", constraint, qualified,
                                    ", ".join(rules), parent, qualified, parent)
                    key = (parent_schema, parent)
                    entry = Cascade((qualified,), deletes, frozenset(columns) if updates and direct else (None if updates else frozenset()))
                    if entry not in cascades.setdefault(key, []):
                        cascades[key].append(entry)
                        if key != child and key != (schema, name):
                            further.append(key)
            reached, direct = further, False
    return cascades


def cascaded_tables(cascades: list[Cascade], deleted: bool, updated_columns: Any) -> list[str]:
    """The captured tables a parent's rows event may have changed with no rows event of theirs.
    updated_columns(): the parent's columns an UPDATE changed in any row, asked only if needed."""
    reached: list[str] = []
    changed: set[str] | None = None
    for cascade in cascades:
        if deleted:
            hit = cascade.on_delete
        elif cascade.on_update is None:
            hit = True
        elif cascade.on_update:
            changed = changed if changed is not None else updated_columns()
            hit = bool(cascade.on_update & changed)
        else:
            hit = False
        if hit:
            reached.extend(table for table in cascade.tables if table not in reached)
    return reached


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
