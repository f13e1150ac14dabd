"""The captured tables' columns as PostgreSQL's catalog has them, and the columns added while the
capture runs (python_jobs/capture/schema_events.py says why they need an event of their own).

DDL is not in the logical decoding stream, so the capture notices an added column in the catalog,
which it reads for every file. The addition's schema change event must sit after every change
decoded without the column and before the first one with it, for the mirror's rows older than it
take its value. The capture therefore holds the addition until the stream delivers either a
change of the table that carries the column, or a logical message the capture wrote when it
noticed it (pg_logical_emit_message, which is in the log after the ALTER TABLE committed), and
writes the event at the first of the two. A column whose type an ALTER TABLE changed is noticed and
said alike (its event names it in retypedColumns), at the first change that carries it in the new
type or at the message. A primary key an ALTER TABLE changed stops the capture.
Why over 300 lines: the catalog's columns and the additions noticed in them are one reading of the
catalog, compared in one place.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from python_jobs.capture.output import CaptureError
from python_jobs.capture.postgres_events import source_block
from python_jobs.capture.schema_events import AddedColumn, schema_change_event, warn_unknown_values
from python_jobs.formats.wal2json import parse_lsn, snapshot_converter

MESSAGE_PREFIX = "cdc_merge.columns_added"

_CATALOG_SQL = """
select
    a.attnum,
    a.attname,
    case
        when t.typtype = 'd' then (
            -- a domain over a domain: the type under them all, with the modifier its own domain gave it
            with recursive bases (type_oid, type_modifier) as (
                select t.typbasetype, t.typtypmod
                union all
                select inner_domain.typbasetype, inner_domain.typtypmod
                from bases inner join pg_type as inner_domain on inner_domain.oid = bases.type_oid
                where inner_domain.typtype = 'd'
            )
            select format_type(bases.type_oid, bases.type_modifier)
            from bases inner join pg_type as base on base.oid = bases.type_oid
            where base.typtype <> 'd'
        )
        else format_type(a.atttypid, a.atttypmod)
    end,
    -- Not attstorage <> 'p': SET STORAGE PLAIN leaves the values stored out of line where they are.
    a.attlen = -1,
    a.atthasmissing,
    case when a.atthasmissing then (a.attmissingval::text::text[])[1] end,
    a.atthasdef,
    coalesce(a.attnum = any(i.indkey), false),
    t.typtype = 'd'
from pg_attribute as a
inner join pg_type as t on t.oid = a.atttypid
left join pg_index as i on i.indrelid = a.attrelid and i.indisprimary
where a.attrelid = to_regclass(%s) and a.attnum > 0 and not a.attisdropped
order by a.attnum
"""


@dataclass(frozen=True)
class CatalogColumn:
    attnum: int
    name: str
    type_name: str  # format_type(): numeric(10,2), text[], timestamp with time zone, ...; a domain's base type, at any depth
    # Whether the value may be stored out of line, where an update that does not change it leaves it out.
    toastable: bool = False
    # ADD COLUMN with a default the server computed once: every row that existed then has it (pg_attribute.attmissingval).
    has_missing_value: bool = False
    missing_value_text: str | None = None
    has_default: bool = False
    in_primary_key: bool = False
    # Of a domain (create domain ... as boolean): wal2json names the domain, whose values it sends as text.
    domain: bool = False

    def added(self) -> AddedColumn:
        """The column as added to a table with rows: what those rows hold in it."""
        if self.has_missing_value:
            text = self.missing_value_text
            return AddedColumn(self.name, self.type_name, None if text is None else snapshot_converter(self.type_name)(text))
        # A default but no value kept for old rows: the server rewrote the table with a value per row
        # (or the default was set later, when the old rows kept null: said as unknown either way).
        return AddedColumn(self.name, self.type_name, None, known=not self.has_default)


# What the server logs of a table's old rows: the replica identity, and whether it holds the primary key.
_IDENTITY_SQL = """
select
    c.relkind,
    c.relreplident,
    coalesce(primary_key.indimmediate, true),
    coalesce(identity_index.indkey::int2[] @> primary_key.indkey::int2[], false),
    (select string_agg(child.inhrelid::regclass::text, ', ' order by child.inhrelid::regclass::text)
     from pg_inherits as child where child.inhparent = c.oid),
    -- This user, where row level security filters what it reads of the table (not its owner, unless FORCEd).
    case when c.relrowsecurity and not (select rolsuper or rolbypassrls from pg_roles where rolname = current_user)
        and (c.relforcerowsecurity or not pg_has_role(c.relowner, 'USAGE')) then current_user::text end,
    primary_key.indexrelid is null
from pg_class as c
left join pg_index as primary_key on primary_key.indrelid = c.oid and primary_key.indisprimary
left join pg_index as identity_index on identity_index.indrelid = c.oid and identity_index.indisreplident
where c.oid = to_regclass(%s)
"""


def identity_problem(table: str, kind: str, replica_identity: str, primary_key_immediate: bool,
                     identity_index_holds_key: bool, children: str | None = None,
                     filtered_for: str | None = None, keyless: bool = False) -> str | None:
    """Why the server's log of table (pg_class relkind, relreplident) would lose changes of a mirror
    keyed on its primary key, as a message saying what to change; None when it would not. The
    server logs an update's or delete's old row by the table's replica identity: without the
    primary key's values there, wal2json sends no such change, or one the mirror cannot key."""
    if filtered_for:
        # The snapshot and the online reads would see only the rows the policies show this user, while the
        # log has every row's changes: the mirror would lack the others, and cdc-verify, as this user, too.
        return (f"table {table} has ROW LEVEL SECURITY, which shows the capture's user {filtered_for} only the rows "
                f"its policies allow: the mirror would lack the others; as a superuser, run: alter role "
                f"{filtered_for} bypassrls")
    if kind == "p":
        return None  # nothing of its own is logged: its leaf partitions are checked (postgres_partitions.py)
    if kind == "f":
        return (f"partition {table} is a foreign table: its rows live on another server, whose changes this "
                "server does not log; leave its partitioned table out of --tables")
    if children:
        # Not its partitions: tables made with INHERITS, whose rows a read of the table shows (the
        # snapshot's) and whose changes the log names by their own tables (never the mirror's).
        return (f"table {table} is inherited by {children} (INHERITS): a read of it shows their rows, whose "
                "changes the log names by their own tables, so its mirror would keep them as first read; make "
                f"them partitions of a partitioned table, or leave {table} out of --tables (each table that "
                "inherits it can be captured as a table of its own)")
    if keyless:
        # Dropped while captured (the start checks it too): two rows may now share the mirror's key, which would
        # merge them, and wal2json sends no update or delete of it (without FULL), whose mirror rows would stay.
        return (f"table {table} has no primary key since an ALTER TABLE: a mirror needs one to merge on, and the "
                "server logs its updates and deletes without one; add it again, or if its rows are keyed on other "
                "columns now, add those as its primary key, change its mirror's unique_key and its key under tables: "
                "in the landing config to them, and run the capture once with --resnapshot")
    if replica_identity == "n":
        return (f"table {table} has REPLICA IDENTITY NOTHING: the server logs no old key of its updates and "
                f"deletes, so they would be lost; run: alter table {table} replica identity default")
    if not primary_key_immediate:
        # Checked at the end of a statement or transaction, such a key may be held by two rows until
        # then (update ... set id = id + 1): the changes of that key would contradict each other.
        # Nor can it be the replica identity: without FULL the old keys would not be logged at all.
        return (f"the primary key of table {table} is DEFERRABLE: two rows may hold one key until the "
                "statement or transaction ends, and the log's changes of that key cannot be ordered; "
                "recreate the key without DEFERRABLE, or leave the table out of --tables")
    if replica_identity == "i" and not identity_index_holds_key:
        return (f"table {table}'s REPLICA IDENTITY is an index without every primary key column: its deletes and "
                f"key changes would be logged without their old key; run: alter table {table} replica identity "
                "default")
    return None


def identity_problems(connection: Any, tables: Iterable[str]) -> list[str]:
    """identity_problem of each table that exists."""
    problems = []
    with connection.cursor() as cursor:
        for table in tables:
            cursor.execute(_IDENTITY_SQL, (table,))
            row = cursor.fetchone()
            problem = row and identity_problem(table, *row)
            if problem:
                problems.append(problem)
    return problems


def read_catalog(connection: Any, tables: Iterable[str]) -> dict[str, list[CatalogColumn]]:
    """Each table's columns, in order; a table that does not exist is missing from the result."""
    found = {}
    with connection.cursor() as cursor:
        for table in tables:
            cursor.execute(_CATALOG_SQL, (table,))
            rows = cursor.fetchall()
            if rows:
                found[table] = [CatalogColumn(*row) for row in rows]
    return found


@dataclass
class ColumnAdditions:
    """Which columns of each table the written log has (the state's "columns": {table: {attnum: name}}),
    and the additions noticed in the catalog but not written yet."""

    known: dict[str, dict[str, str]] = field(default_factory=dict)
    pending: dict[str, dict[str, CatalogColumn]] = field(default_factory=dict)
    catalog: dict[str, list[CatalogColumn]] = field(default_factory=dict)
    # The types the written log has ({table: {attnum: type}}; the state's "column_types"), and the
    # columns whose type changed in the catalog but not yet in a written event ({table: {name: (type before, column)}}).
    types: dict[str, dict[str, str]] = field(default_factory=dict)
    retyped: dict[str, dict[str, tuple[str, CatalogColumn]]] = field(default_factory=dict)
    # Each table's primary key as the written log has it (the state's "keys").
    keys: dict[str, list[str]] = field(default_factory=dict)
    # The columns the last notice found renamed ({table: ["old -> new", ...]}).
    renamed: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> ColumnAdditions:
        return cls(known={table: dict(columns) for table, columns in (state.get("columns") or {}).items()},
                   types={table: dict(types) for table, types in (state.get("column_types") or {}).items()},
                   keys={table: list(key) for table, key in (state.get("keys") or {}).items()})

    def state(self) -> dict[str, dict[str, str]]:
        return {table: dict(columns) for table, columns in self.known.items()}

    def types_state(self) -> dict[str, dict[str, str]]:
        return {table: dict(types) for table, types in self.types.items()}

    def keys_state(self) -> dict[str, list[str]]:
        return {table: list(key) for table, key in self.keys.items()}

    def notice(self, catalog: Mapping[str, list[CatalogColumn]]) -> dict[str, list[str]]:
        """Compare the catalog with the log; returns the tables with newly noticed additions, and their
        columns, for the capture's logical message. A table not known yet (a new capture or state) is
        taken as it is; a renamed or dropped column only changes what is known."""
        self.catalog = dict(catalog)
        self.renamed = {}
        noticed: dict[str, list[str]] = {}
        for table, columns in catalog.items():
            key = [column.name for column in columns if column.in_primary_key]
            logged_key = self.keys.get(table)
            if not logged_key:  # a table new to the log (or a state without keys, or no key yet): as it is now
                self.keys[table] = key
            elif key and set(key) != set(logged_key):
                # The mirror is keyed on the old key, which may no longer tell the rows apart.
                raise CaptureError(
                    f"{table} is keyed on ({', '.join(key)}) since an ALTER TABLE, not on ({', '.join(logged_key)}) as "
                    f"captured: change its mirror's unique_key and its key under tables: in the landing config to "
                    f"[{', '.join(key)}], then run the capture once with --resnapshot")
            by_attnum = {str(column.attnum): column for column in columns}
            types = self.types.setdefault(table, {})
            if table not in self.known:
                self.known[table] = {attnum: column.name for attnum, column in by_attnum.items()}
                types.update({attnum: column.type_name for attnum, column in by_attnum.items()})
                continue
            known = self.known[table]
            for attnum in [attnum for attnum in known if attnum not in by_attnum]:
                del known[attnum]
                types.pop(attnum, None)
            for attnum, column in by_attnum.items():
                if attnum in known:
                    if known[attnum] != column.name:
                        self.renamed.setdefault(table, []).append(f"{known[attnum]} -> {column.name}")
                    known[attnum] = column.name
                    before = types.setdefault(attnum, column.type_name)  # a state without types: as it is now
                    if before != column.type_name and column.name not in self.retyped.get(table, {}):
                        self.retyped.setdefault(table, {})[column.name] = (before, column)
                        noticed.setdefault(table, []).append(column.name)
                elif column.name not in self.pending.get(table, {}):
                    self.pending.setdefault(table, {})[column.name] = column
                    types[attnum] = column.type_name
                    noticed.setdefault(table, []).append(column.name)
        return noticed

    def is_pending(self, table: str, column: str) -> bool:
        return column in self.pending.get(table, {})

    def observes_rows(self) -> bool:
        """Whether a row change can carry an addition or a retype: only while one is pending."""
        return bool(self.pending or self.retyped)

    def before_change(self, change: Mapping[str, Any], commit_lsn: int, database: str,
                      processed_ms: int) -> list[dict[str, Any]]:
        """The schema change events to write before a wal2json change (of the transaction committed at
        commit_lsn): the pending additions its table's insert or update carries, or that the capture's
        message names."""
        if not (self.pending or self.retyped):  # nothing waits (as almost always): no change carries one
            return []
        if change.get("action") == "M":
            if change.get("prefix") != MESSAGE_PREFIX:
                return []
            named = json.loads(change.get("content") or "{}")
            return [event for table, columns in named.items()
                    for event in self._written(table, columns, change, commit_lsn, database, processed_ms)]
        table = f"{change.get('schema')}.{change.get('table')}"
        if (table not in self.pending and table not in self.retyped) or change.get("action") not in ("I", "U"):
            return []
        carried = {column.get("name"): column.get("type") for column in change.get("columns") or ()}
        # A retyped column is carried in its new type by a change decoded after the ALTER TABLE.
        names = [name for name in self.pending.get(table, {}) if name in carried] + [
            name for name, (_, column) in self.retyped.get(table, {}).items() if carried.get(name) == column.type_name]
        return self._written(table, names, change, commit_lsn, database, processed_ms)

    def _written(self, table: str, names: list[str], change: Mapping[str, Any], commit_lsn: int, database: str,
                 processed_ms: int) -> list[dict[str, Any]]:
        waiting = self.pending.get(table, {})
        columns = [waiting.pop(name) for name in names if name in waiting]
        if not waiting:
            self.pending.pop(table, None)
        waiting_retypes = self.retyped.get(table, {})
        retyped = {name: waiting_retypes.pop(name) for name in names if name in waiting_retypes}
        if not waiting_retypes:
            self.retyped.pop(table, None)
        if not (columns or retyped):
            return []
        for column in columns:
            self.known.setdefault(table, {})[str(column.attnum)] = column.name
        for _, column in retyped.values():
            self.types.setdefault(table, {})[str(column.attnum)] = column.type_name
        added = [column.added() for column in columns]
        warn_unknown_values(table, added, "the capture reads the table again online when the ALTER TABLE rewrote it "
                                          "(it says so), which fills them; a constant default is said so too when an "
                                          "ALTER TABLE the capture had not decoded yet rewrote the table (the catalog "
                                          "then keeps no value for old rows); if no re-read is said, run the capture "
                                          "once with --resnapshot")
        schema, name = table.split(".")
        catalog = self.catalog.get(table, columns)
        return [schema_change_event(
            source=source_block(database, table, parse_lsn(change["lsn"]), commit_lsn), table_id=f'"{schema}"."{name}"',
            columns=[(column.name, column.type_name) for column in catalog],
            primary_key=[column.name for column in catalog if column.in_primary_key],
            added=added, processed_ms=processed_ms, retyped={name: before for name, (before, _) in retyped.items()},
        )]

