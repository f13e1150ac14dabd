"""The foreign keys whose cascades reach the MariaDB/MySQL capture's tables, as of the binlog position
it reads (mysql_cascades.py reads them from the catalog and acts on them): which parents' changes
cascade into which captured tables, and how the keys change as DDL statements pass in the binlog.

The catalog has the keys of now, which a capture that is behind must not judge older changes by: a
key dropped since would leave its cascades unread. So the keys the capture last knew are kept in its
state with its position. A statement that drops keys (ALTER TABLE ... DROP FOREIGN KEY or DROP
CONSTRAINT, DROP TABLE, DROP DATABASE, CREATE OR REPLACE TABLE) removes them at its place; one that
may add keys (a FOREIGN KEY or REFERENCES clause, a table renamed into a name) has the catalog read
and its keys added to the known ones, with the keys it states (dropped since, the catalog lacks
them; one stated without a name under the name the server gives it). Both err only towards a table
read again that need not be, but for an unnamed key's number in one case (docs/online_snapshots.md).
Tables are compared as the server compares their names (mysql_names.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from python_jobs.capture.mysql_names import EXACT, Table, TableNames
from python_jobs.capture.mysql_statements import emptied_tables, replaced_tables, statement

CASCADING = ("CASCADE", "SET NULL", "SET DEFAULT")


@dataclass(frozen=True)
class ForeignKey:
    """A foreign key of table that references parent, with a rule that cascades (CASCADING)."""

    table: Table
    name: str
    parent: Table
    on_delete: str  # "CASCADE", "SET NULL", "SET DEFAULT", or another rule ("" for none)
    on_update: str
    columns: tuple[str, ...]  # the parent's columns it references


@dataclass(frozen=True)
class Cascade:
    """What changes of one parent table reach captured tables with no rows event."""

    tables: tuple[str, ...]  # the captured tables reached (database.table)
    on_delete: bool
    # The parent's columns (lower case) whose change an UPDATE cascades; None: any update (a parent
    # further up, whose cascade's own updates reach the captured table through a table between them).
    on_update: frozenset[str] | None = frozenset()


def cascades_of(keys: Sequence[ForeignKey], tables: Sequence[str],
                names: TableNames = EXACT) -> dict[Table, list[Cascade]]:
    """The parent tables whose changes cascade into the captured tables (database.table), directly
    or through tables between them, each with what of its changes does; keyed by names.table of the
    parent's name (a rows event's table is looked up so)."""
    by_table: dict[Table, list[ForeignKey]] = {}
    for key in keys:
        by_table.setdefault(names.table(key.table), []).append(key)
    cascades: dict[Table, list[Cascade]] = {}
    for qualified in tables:
        schema, name = qualified.split(".", 1)
        captured = names.table((schema, name))
        reached, direct = [captured], True
        while reached:
            further = []
            for child in reached:
                for key in by_table.get(child, ()):
                    deletes, updates = key.on_delete in CASCADING, key.on_update in CASCADING
                    if not (deletes or updates):
                        continue
                    columns = frozenset(column.lower() for column in key.columns)  # as MariaDB compares names
                    on_update = columns if updates and direct else (None if updates else frozenset())
                    entry = Cascade((qualified,), deletes, on_update)
                    parent = names.table(key.parent)
                    if entry not in cascades.setdefault(parent, []):
                        cascades[parent].append(entry)
                        if parent not in (child, captured):
                            further.append(parent)
            reached, direct = further, False
    return cascades


def cascaded_tables(cascades: Sequence[Cascade], deleted: bool, updated_columns: Any) -> list[str]:
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
            changed = changed if changed is not None else {column.lower() for column in updated_columns()}
            hit = bool(cascade.on_update & changed)
        else:
            hit = False
        if hit:
            reached.extend(table for table in cascade.tables if table not in reached)
    return reached


_NAME = r"(?:`(?:[^`]|``)+`|[^\s`.,;()]+)"
_ALTER = re.compile(rf"^alter\s+(?:online\s+|ignore\s+)*table\s+(?:if\s+exists\s+)?({_NAME}(?:\s*\.\s*{_NAME})?)\s",
                    re.IGNORECASE)
_DROPPED_KEY = re.compile(rf"\bdrop\s+(?:foreign\s+key|constraint)\s+(?:if\s+exists\s+)?({_NAME})", re.IGNORECASE)
_STRING = re.compile(r"'(?:[^'\\]|\\.|'')*'|\"(?:[^\"\\]|\\.|\"\")*\"", re.DOTALL)
_ADDING = re.compile(r"\breferences\b|(?<!\bdrop\s)\bforeign\s+key\b", re.IGNORECASE)
_DROPPING_TABLES = re.compile(r"^(?:drop\s+(?:table|database|schema)|create\s+or\s+replace\s+table)\b", re.IGNORECASE)
_CREATE = re.compile(rf"^create\s+(?:or\s+replace\s+)?table\s+(?:if\s+not\s+exists\s+)?({_NAME}(?:\s*\.\s*{_NAME})?)",
                     re.IGNORECASE)
# A key a statement adds: its CONSTRAINT name, else its index's name (MariaDB names the key so), else
# none: the server names it <table>_ibfk_<n> (added_keys, from the catalog and the known keys).
_ADDED_KEY = re.compile(
    rf"(?:\bconstraint(?:\s+(?!foreign\s+key\b)({_NAME}))?\s+)?\bforeign\s+key\s+(?:if\s+not\s+exists\s+)?"
    rf"(?:({_NAME})\s*)?\([^()]*\)\s*references\s+"
    rf"({_NAME}(?:\s*\.\s*{_NAME})?)\s*\(([^()]*)\)((?:\s+(?:match\s+\w+|on\s+(?:delete|update)\s+"
    rf"(?:set\s+null|set\s+default|no\s+action|\w+)))*)", re.IGNORECASE)
_STATED_RULE = re.compile(r"\bon\s+(delete|update)\s+(set\s+null|set\s+default|no\s+action|\w+)", re.IGNORECASE)


def _unquoted(name: str) -> str:
    return name[1:-1].replace("``", "`") if name.startswith("`") else name


def _table(text: str, default_schema: str, names: TableNames) -> Table:
    parts = [_unquoted(part) for part in re.findall(_NAME, text)]
    return names.table((parts[0], parts[1]) if len(parts) == 2 else (default_schema, parts[0]))


def after_statement(keys: Sequence[ForeignKey], query: str, default_schema: Any, names: TableNames = EXACT,
                    catalog_ibfk: Callable[[Table], int] = lambda table: 0) -> tuple[list[ForeignKey], bool]:
    """The known keys after a statement of the binlog, and whether it may have added keys, which the
    catalog is then read for. A key is removed only by a statement that certainly drops it. Tables
    are compared as names says the server compares them (a statement may name one in any case).
    catalog_ibfk(table): the highest n of the table's keys named <table>_ibfk_<n> in the catalog now,
    asked when an ALTER TABLE adds a key without a name (added_keys)."""
    schema = default_schema.decode() if isinstance(default_schema, bytes) else (default_schema or "")
    text = _STRING.sub("''", statement(query))
    gone: set[tuple[Table, str]] = set()
    if altered := _ALTER.match(text):
        table = _table(altered.group(1), schema, names)
        gone = {(table, _unquoted(name).lower()) for name in _DROPPED_KEY.findall(text[altered.end():])}
    dropped: set[Table] = set()
    if _DROPPING_TABLES.match(text):
        dropped = {names.table(table) for table in emptied_tables(text, schema, {key.table for key in keys}, names)}
    kept = [key for key in keys
            if names.table(key.table) not in dropped and (names.table(key.table), key.name.lower()) not in gone]

    def highest(table: Table) -> int:
        known = (ibfk_number(key.name, table[1]) for key in keys if names.table(key.table) == table)
        return max([catalog_ibfk(table), *known])

    stated = added_keys(text, schema, names, highest)
    return union(kept, stated), bool(_ADDING.search(text) or replaced_tables(text, schema))


def added_keys(text: str, schema: str, names: TableNames = EXACT,
               highest_ibfk: Callable[[Table], int] = lambda table: 0) -> list[ForeignKey]:
    """The keys with a cascading rule that an ALTER TABLE or CREATE TABLE adds, as it states them
    (its tables' names in names.table's form): the catalog read after it has them no more if they
    were dropped since. One without a name gets the one the server gives it, <table>_ibfk_<n>."""
    named = _ALTER.match(text) or _CREATE.match(text)
    if named is None:
        return []
    table, keys = _table(named.group(1), schema, names), []
    number: int | None = None
    for symbol, index, parent, columns, rules in _ADDED_KEY.findall(text[named.end():]):
        if symbol or index:
            name = _unquoted(symbol or index)
        else:
            # The server's: <table>_ibfk_<n>, n one above the highest of the table's keys named so (from 1 in a CREATE).
            number = (highest_ibfk(table) if named.re is _ALTER else 0) if number is None else number
            number += 1
            name = f"{table[1]}_ibfk_{number}"
        stated = {when.upper(): " ".join(rule.upper().split()) for when, rule in _STATED_RULE.findall(rules)}
        stated = {when: rule for when, rule in stated.items() if rule in CASCADING}  # as the catalog's are read
        if stated:
            keys.append(ForeignKey(table, name, _table(parent, schema, names), stated.get("DELETE", ""),
                                   stated.get("UPDATE", ""), tuple(_unquoted(c.strip()) for c in columns.split(","))))
    return keys


def ibfk_number(key: str, table: str) -> int:
    """n of a key the server named <table>_ibfk_<n> (a key added without a name), else 0."""
    prefix = f"{table}_ibfk_".lower()
    number = key[len(prefix):]
    return int(number) if key.lower().startswith(prefix) and number.isdigit() else 0


def union(known: Iterable[ForeignKey], found: Iterable[ForeignKey]) -> list[ForeignKey]:
    """The known keys, then those found that are not among them."""
    return list(dict.fromkeys([*known, *found]))


def keys_to_state(keys: Iterable[ForeignKey]) -> list[dict[str, Any]]:
    """The keys as the state file's JSON keeps them."""
    return [{"table": list(key.table), "name": key.name, "parent": list(key.parent), "on_delete": key.on_delete,
             "on_update": key.on_update, "columns": list(key.columns)} for key in keys]


def keys_from_state(entries: Iterable[Mapping[str, Any]] | None) -> list[ForeignKey]:
    """The keys a state file keeps (none in a state written before it kept them)."""
    return [ForeignKey((entry["table"][0], entry["table"][1]), entry["name"], (entry["parent"][0], entry["parent"][1]),
                       entry.get("on_delete", ""), entry.get("on_update", ""), tuple(entry.get("columns") or ()))
            for entry in entries or ()]
