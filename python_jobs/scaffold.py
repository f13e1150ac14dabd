"""cdc-scaffold: mirror models (SQL + YAML) for source tables, from PostgreSQL's or MySQL/MariaDB's
information_schema, in the project's style (dbt-codegen's generate_base_model as the convention:
one import CTE, a final CTE, every column named and typed).

    cdc-scaffold --postgres "host=... dbname=..." --tables shop.items,shop.orders --out models/mirrors
    cdc-scaffold --mysql root@127.0.0.1:3306 --tables shop.items --out models/mirrors

Each table gets models/mirrors/<schema>_<table>.sql; the YAML entries (columns with descriptions
and tests) are printed, or appended to the folder's YAML with --yaml.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from python_jobs.apply.column_names import DATABEND_KEYWORDS


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


_INTEGERS = {"smallint": "int", "integer": "int", "int": "int", "tinyint": "int", "mediumint": "int", "bigint": "bigint",
             "year": "int"}
_FLOATS = {"real": "float", "float": "float", "double precision": "double", "double": "double"}
_TIMESTAMPS = {"timestamp with time zone", "timestamp without time zone", "timestamp", "datetime"}


# The widest decimal Spark holds (a model serves either engine): a wider value cast to it would be null.
SPARK_MAX_PRECISION = 38


def model_type(column: SourceColumn) -> str:
    """The type cdc_columns() casts the column's JSON value to, as the capture commands write values."""
    data_type = column.data_type.lower()
    if data_type == "bigint" and column.unsigned:
        return "decimal(20,0)"
    if data_type in _INTEGERS:
        return "bigint" if column.unsigned and data_type == "int" else _INTEGERS[data_type]
    if data_type in ("numeric", "decimal"):
        if column.precision is None:
            return "string"  # unbounded: kept as its exact text
        # PostgreSQL's scale may exceed the precision (numeric(3,5): 0.00123) or be negative (numeric(5,-2):
        # 12300), which no mirror's decimal takes: the decimal that holds every such value.
        scale = column.scale or 0
        precision = max(column.precision, scale) - min(scale, 0)
        if precision > SPARK_MAX_PRECISION:
            return "string"  # wider than a mirror's decimal holds: kept as its exact text
        return f"decimal({precision},{max(scale, 0)})"
    if data_type in _FLOATS:
        return _FLOATS[data_type]
    if data_type == "boolean":
        return "boolean"
    if data_type in _TIMESTAMPS:
        return "timestamp"
    if data_type == "date":
        return "date"
    if data_type == "bit":  # its bits as an unsigned number
        return "decimal(20,0)" if (column.precision or 1) > 63 else "bigint"
    return "string"


# A column name the mirror's SQL takes as it is.
_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def model_column_names(table: SourceTable) -> dict[str, str]:
    """{source column: mirror column}: a name that is not plain ("two words", "price-eur", "café") becomes
    one (two_words, price_eur, caf), and a reserved word one with an underscore (order_), read from its
    JSON field by cdc_columns()' json_fields."""
    names = {column.name: column.name if _PLAIN_NAME.match(column.name) else
             (re.sub(r"[^A-Za-z0-9_]+", "_", column.name).strip("_") or "column") for column in table.columns}
    names = {source: f"{name}_" if name.lower() in DATABEND_KEYWORDS and source not in table.primary_key else name
             for source, name in names.items()}
    names = {source: name if not name[0].isdigit() else f"_{name}" for source, name in names.items()}
    taken = [name for name in names.values() if list(names.values()).count(name) > 1]
    if taken:
        raise ScaffoldError(f"table {table.qualified}: two columns would be mirrored as {taken[0]}; "
                            "write the model's cdc_columns() yourself")
    return names


def model_sql(table: SourceTable) -> str:
    key = table.primary_key[0] if len(table.primary_key) == 1 else list(table.primary_key)
    names = model_column_names(table)
    columns = "\n".join(f"            {names[column.name]!r}: '{model_type(column)}'," for column in table.columns)
    renamed = {name: source for source, name in names.items() if name != source}
    json_fields = ", {" + ", ".join(f"{name!r}: {source!r}" for name, source in renamed.items()) + "}" if renamed else ""
    return f"""{{{{
    config(
        unique_key={key!r},
        source_table='{table.qualified}',
    )
}}}}

with

events as (

    select * from {{{{ cdc_merge.cdc_events(ref('raw_events')) }}}}

),

final as (

    select
        {{{{ cdc_merge.cdc_columns({{
{columns}
        }}{json_fields}) }}}},
        {{{{ cdc_merge.cdc_metadata_columns() }}}}
    from events

)

select * from final
"""


def model_yaml(table: SourceTable) -> str:
    """The model's entry for the folder's YAML `models:` list."""
    lines = [
        f"  - name: {table.model_name}",
        f"    description: Mirror of {table.qualified}.",
        "    data_tests:",
        "      - cdc_merge.cdc_mirror_matches_log:",
        "          arguments:",
        f"            source_table: {table.qualified}",
        "            raw_relation: ref('raw_events')",
        "      - cdc_merge.cdc_unmapped_columns:",
        "          arguments:",
        f"            source_table: {table.qualified}",
        "            raw_relation: ref('raw_events')",
        "      - cdc_merge.cdc_lag_within:",
        "          arguments:",
        "            max_lag_seconds: 3600",
        f"            source_table: {table.qualified}",
        "            raw_relation: ref('raw_events')",
        "          config: {severity: warn}",
    ]
    if len(table.primary_key) > 1:
        lines += ["      - cdc_merge.cdc_unique_combination:", "          arguments:", f"            columns: [{', '.join(table.primary_key)}]"]
    lines.append("    columns:")
    names = model_column_names(table)
    for column in table.columns:
        lines.append(f"      - name: {names[column.name]}")
        described = f"{column.name} ({column.data_type}{' unsigned' if column.unsigned else ''} in the source)."
        lines.append(f"        description: {json.dumps(described, ensure_ascii=False)}")
        if table.primary_key == (column.name,):
            lines.append("        data_tests: [unique, not_null]")
        elif column.name in table.primary_key:
            lines.append("        data_tests: [not_null]")
    return "\n".join(lines) + "\n"


def postgres_tables(dsn: str, names: Sequence[str]) -> list[SourceTable]:
    import psycopg2

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
        from python_jobs.scaffold_project import postgres_name

        with connection.cursor() as cursor:
            return [_read_table(cursor, postgres_name(cursor, qualified), _POSTGRES_COLUMNS, _POSTGRES_KEY)
                    for qualified in names]
    finally:
        connection.close()


def mysql_tables(host: str, port: int, user: str, password: str, names: Sequence[str]) -> list[SourceTable]:
    import pymysql

    try:
        connection = pymysql.connect(host=host, port=port, user=user, password=password, charset="utf8mb4")
    except pymysql.Error as error:
        raise ScaffoldError(f"cannot connect to {user}@{host}:{port}: {error}; check --mysql and the password in "
                            "MYSQL_PWD") from None
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
_MYSQL_COLUMNS = (
    "select column_name, data_type, numeric_precision, numeric_scale, column_type like '%%unsigned%%' "
    "from information_schema.columns where table_schema = %s and table_name = %s order by ordinal_position"
)
_MYSQL_KEY = (
    "select column_name from information_schema.key_column_usage "
    "where constraint_name = 'PRIMARY' and table_schema = %s and table_name = %s order by ordinal_position"
)


def _read_table(cursor, qualified: str, columns_sql: str, key_sql: str) -> SourceTable:
    if qualified.count(".") != 1:
        raise ScaffoldError(f"table {qualified!r} is not schema-qualified (schema.table, or database.table for MySQL)")
    schema, name = qualified.split(".")
    cursor.execute(columns_sql, (schema, name))
    rows = cursor.fetchall()
    if not rows:
        raise ScaffoldError(f"table {qualified} does not exist (or the user cannot see it)")
    cursor.execute(key_sql, (schema, name))
    key = tuple(row[0] for row in cursor.fetchall())
    if not key:
        raise ScaffoldError(f"table {qualified} has no primary key: a mirror needs one to merge on; add one, or "
                            "leave the table out of --tables")
    odd_keys = [column for column in key if not _PLAIN_NAME.match(column)]
    if odd_keys:
        raise ScaffoldError(f"table {qualified}: primary key column {odd_keys[0]!r} is not a plain name (letters, "
                            "digits, _); a mirror keys on its columns by name: rename it in the source")
    columns = tuple(
        SourceColumn(row[0], row[1], int(row[2]) if row[2] is not None else None,
                     int(row[3]) if row[3] is not None else None, bool(row[4]))
        for row in rows
    )
    return SourceTable(schema, name, columns, key)


def write(tables: Sequence[SourceTable], out: Path, yaml_file: Path | None, overwrite: bool) -> list[Path]:
    """The models' SQL files under out; their YAML appended to yaml_file, or returned for printing."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for table in tables:
        path = out / f"{table.model_name}.sql"
        if path.exists() and not overwrite:
            raise ScaffoldError(f"{path} exists: remove it or pass --overwrite")
        path.write_text(model_sql(table))
        written.append(path)
    if yaml_file is not None:
        from python_jobs.scaffold_project import write_model_yaml

        write_model_yaml(yaml_file, tables)
    return written


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    """The source catalog's options, shared with cdc-init."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--postgres", metavar="DSN", help="libpq connection string of the source database")
    source.add_argument("--mysql", metavar="USER@HOST:PORT", help="MySQL/MariaDB server (password from MYSQL_PWD)")
    parser.add_argument("--tables", required=True, help="comma-separated schema.table (database.table) names")


def source_tables(args: argparse.Namespace) -> list[SourceTable]:
    """The tables named by add_source_arguments' options, read from the source's information_schema."""
    names = [name.strip() for name in args.tables.split(",") if name.strip()]
    if args.postgres:
        return postgres_tables(args.postgres, names)
    match = re.fullmatch(r"(?:([^@]+)@)?([^:]+)(?::(\d+))?", args.mysql)
    if match is None:
        raise ScaffoldError(f"--mysql {args.mysql!r} is not USER@HOST:PORT")
    return mysql_tables(match.group(2), int(match.group(3) or 3306), match.group(1) or "root",
                        os.environ.get("MYSQL_PWD", ""), names)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="cdc-scaffold", description=__doc__.split("\n\n")[0])
    add_source_arguments(parser)
    parser.add_argument("--out", type=Path, default=Path("models/mirrors"), help="folder of the model files")
    parser.add_argument("--yaml", type=Path, help="append the models' YAML to this file instead of printing it")
    parser.add_argument("--overwrite", action="store_true", help="replace model files that exist")
    parser.add_argument("--no-landing", action="store_true",
                        help="leave the project's landing configs as they are (default: add each table that is "
                             "not under their tables: with its key columns)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        tables = source_tables(args)
        written = write(tables, args.out, args.yaml, args.overwrite)
        if not args.no_landing:
            from python_jobs.scaffold_project import add_to_project_landing

            written += add_to_project_landing(args.out, tables)
    except ScaffoldError as error:
        print(f"cdc-scaffold: {error}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path}" if isinstance(path, Path) else path, file=sys.stderr)
    if args.yaml is None:
        print("\n".join(model_yaml(table) for table in tables))
    return 0


if __name__ == "__main__":
    sys.exit(main())
