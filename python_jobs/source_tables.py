"""The source tables cdc-scaffold and cdc-init model: their columns and primary keys as
PostgreSQL's or MySQL/MariaDB's catalog gives them, read by the capture's least-privileged user, and
the names as the captures take them (scaffold.py writes the models from them)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

# A name a mirror keys on and SQL reads without quotes.
PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ScaffoldError(RuntimeError):
    """The scaffold cannot be written; the message says what to fix."""


@dataclass(frozen=True)
class SourceColumn:
    name: str
    data_type: str  # information_schema.columns.data_type
    precision: int | None
    scale: int | None
    unsigned: bool = False


@dataclass(frozen=True)
class SourceTable:
    schema: str
    name: str
    columns: tuple[SourceColumn, ...]
    primary_key: tuple[str, ...]

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.name}"

    @property
    def model_name(self) -> str:
        return re.sub(r"[^a-z0-9_]", "_", f"{self.schema}_{self.name}".lower())


def postgres_tables(dsn: str, names: Sequence[str]) -> list[SourceTable]:
    import psycopg2

    from python_jobs.capture.postgres_columns import identity_problems
    from python_jobs.capture.postgres_connection import dsn_settings, dsn_without_secrets

    if "password" in dsn_settings(dsn):
        raise ScaffoldError("--postgres holds a password: remove it and set PGPASSWORD (or use ~/.pgpass); "
                            "a command line is visible to every user of the machine")
    try:
        connection = psycopg2.connect(dsn)
    except psycopg2.Error as error:
        raise ScaffoldError(f"cannot connect to PostgreSQL ({dsn_without_secrets(dsn)}): {' '.join(str(error).split())}; "
                            "check --postgres, and the password in PGPASSWORD (or ~/.pgpass)") from None
    try:
        with connection.cursor() as cursor:
            tables = [_read_table(cursor, postgres_name(cursor, qualified), _POSTGRES_COLUMNS, _POSTGRES_KEY,
                                  _POSTGRES_UNREADABLE)
                      for qualified in names]
        # A table the capture would refuse (a DEFERRABLE key, REPLICA IDENTITY NOTHING, ...) gets no model
        # either, refused with the capture's own words: a model would wait for changes that never land.
        problems = identity_problems(connection, [table.qualified for table in tables])
        if problems:
            raise ScaffoldError(f"{problems[0]} (cdc-capture-postgres refuses such a table, so it gets no model)")
        return tables
    finally:
        connection.close()


def mysql_tables(host: str, port: int, user: str, password: str, names: Sequence[str]) -> list[SourceTable]:
    import pymysql

    from python_jobs.capture.mysql_connection import access_denied_hint

    try:
        connection = pymysql.connect(host=host, port=port, user=user, password=password, charset="utf8mb4")
    except pymysql.Error as error:
        raise ScaffoldError(f"cannot connect to {user}@{host}:{port}: {error}; check --mysql and the password in "
                            f"MYSQL_PWD{access_denied_hint(error)}") from None
    try:
        with connection.cursor() as cursor:
            return [_read_table(cursor, qualified, _MYSQL_COLUMNS, _MYSQL_KEY) for qualified in names]
    finally:
        connection.close()


# PostgreSQL's bit(n) is its text of 0s and 1s as the capture writes it ("bit string", not MySQL's
# number); information_schema gives a negative numeric scale (numeric(5,-2)) as 2048 plus it, and a
# domain over a domain as USER-DEFINED: its columns as information_schema gives the type under them all.
_POSTGRES_COLUMNS = """
select column_name, case when data_type = 'bit' then 'bit string' else data_type end, numeric_precision,
    case when data_type = 'numeric' and numeric_scale > 1000 then numeric_scale - 2048 else numeric_scale end, false
from (
    select c.ordinal_position, c.column_name, coalesce(base.data_type, c.data_type) as data_type,
        coalesce(base.numeric_precision, c.numeric_precision) as numeric_precision,
        coalesce(base.numeric_scale, c.numeric_scale) as numeric_scale
    from information_schema.columns as c
    left join lateral (
        with recursive bases (type_oid, type_modifier) as (
            select outer_domain.typbasetype, outer_domain.typtypmod from pg_type as outer_domain
            where c.data_type = 'USER-DEFINED' and outer_domain.typtype = 'd'
                and outer_domain.oid = to_regtype(quote_ident(c.domain_schema) || '.' || quote_ident(c.domain_name))
            union all
            select inner_domain.typbasetype, inner_domain.typtypmod
            from bases inner join pg_type as inner_domain on inner_domain.oid = bases.type_oid
            where inner_domain.typtype = 'd'
        )
        select
            case when t.typelem <> 0 and t.typlen = -1 then 'ARRAY'
                when t.typnamespace = 'pg_catalog'::regnamespace then format_type(t.oid, null)
                else 'USER-DEFINED' end as data_type,
            information_schema._pg_numeric_precision(t.oid, bases.type_modifier) as numeric_precision,
            information_schema._pg_numeric_scale(t.oid, bases.type_modifier) as numeric_scale
        from bases inner join pg_type as t on t.oid = bases.type_oid
        where t.typtype <> 'd'
    ) as base on true
    where c.table_schema = %s and c.table_name = %s
) as columns
order by ordinal_position
"""
# From pg_catalog: information_schema's constraint views list only the tables the user owns or may
# change, and the capture's user may only read them.
_POSTGRES_KEY = (
    "select a.attname from pg_index i join pg_attribute a on a.attrelid = i.indrelid and a.attnum = any(i.indkey) "
    "where i.indisprimary and i.indrelid = to_regclass(format('%%I.%%I', %s, %s)) "
    "order by array_position(i.indkey::int2[], a.attnum)"
)
# A table information_schema hides is one that exists but the user may not read (it shows the columns
# of tables the user has a privilege on); the user, for the grant to name.
_POSTGRES_UNREADABLE = (
    "select current_user from pg_class as c join pg_namespace as n on n.oid = c.relnamespace "
    "where n.nspname = %s and c.relname = %s and not has_table_privilege(c.oid, 'select')"
)
_MYSQL_COLUMNS = (
    "select column_name, data_type, numeric_precision, numeric_scale, column_type like '%%unsigned%%' "
    "from information_schema.columns where table_schema = %s and table_name = %s order by ordinal_position"
)
_MYSQL_KEY = (
    "select column_name from information_schema.key_column_usage "
    "where constraint_name = 'PRIMARY' and table_schema = %s and table_name = %s order by ordinal_position"
)


def _read_table(cursor, qualified: str, columns_sql: str, key_sql: str, unreadable_sql: str | None = None) -> SourceTable:
    if qualified.count(".") != 1:
        raise ScaffoldError(f"table {qualified!r} is not schema-qualified (schema.table, or database.table for MySQL)")
    schema, name = qualified.split(".")
    cursor.execute(columns_sql, (schema, name))
    rows = cursor.fetchall()
    if not rows and unreadable_sql is not None:
        cursor.execute(unreadable_sql, (schema, name))
        unreadable = cursor.fetchone()
        if unreadable is not None:
            raise ScaffoldError(f"table {qualified} exists, but user {unreadable[0]} may not read it: grant select on "
                                f"{qualified} to {unreadable[0]} (and usage on its schema; docs/your_project.md), then "
                                "run this again")
    if not rows:
        raise ScaffoldError(f"table {qualified} does not exist (or the user cannot see it)")
    cursor.execute(key_sql, (schema, name))
    key = tuple(row[0] for row in cursor.fetchall())
    if not key:
        raise ScaffoldError(f"table {qualified} has no primary key: a mirror needs one to merge on; add one, or "
                            "leave the table out of --tables")
    odd_keys = [column for column in key if not PLAIN_NAME.match(column)]
    if odd_keys:
        raise ScaffoldError(f"table {qualified}: primary key column {odd_keys[0]!r} is not a plain name (letters, "
                            "digits, _); a mirror keys on its columns by name: rename it in the source")
    columns = tuple(
        SourceColumn(row[0], row[1], int(row[2]) if row[2] is not None else None,
                     int(row[3]) if row[3] is not None else None, bool(row[4]))
        for row in rows
    )
    return SourceTable(schema, name, columns, key)


def postgres_name(cursor, qualified: str) -> str:
    """The table cdc-capture-postgres captures for the name: in lower case, as PostgreSQL reads an
    unquoted name; a table whose name needs quotes (upper case) it cannot capture, so it is refused here."""
    folded = qualified.lower()
    if '"' in qualified:
        raise ScaffoldError(f"table {qualified}: cdc-capture-postgres reads --tables as unquoted names, in lower case, "
                            "and cannot capture a table whose name needs quotes: rename it in the source "
                            "(alter schema/table ... rename to a lower-case name), or capture a lower-case table")
    if folded != qualified and qualified.count(".") == 1:
        cursor.execute("select to_regclass(format('%%I.%%I', %s, %s)) is not null, to_regclass(format('%%I.%%I', %s, %s)) "
                       "is not null", (*qualified.split("."), *folded.split(".")))
        quoted, unquoted = cursor.fetchone()
        if quoted and not unquoted:
            raise ScaffoldError(f"table {qualified}: cdc-capture-postgres reads --tables as unquoted names, in lower case "
                                f"({folded}), and cannot capture a table whose name needs quotes: rename it in the source "
                                "(alter schema/table ... rename to a lower-case name), or capture a lower-case table")
    return folded
