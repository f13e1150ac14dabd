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
from pathlib import Path
from typing import Sequence

from python_jobs.apply.column_names import scaffolded_name
from python_jobs.scaffold_project import add_to_project_landing, write_model_yaml
from python_jobs.source_tables import (  # noqa: F401 - the tables and errors cdc-scaffold works with, as its callers name them
    PLAIN_NAME, ScaffoldError, SourceColumn, SourceTable, mysql_tables, postgres_tables,
)


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


def model_column_names(table: SourceTable) -> dict[str, str]:
    """{source column: mirror column}: a name that is not plain ("two words", "price-eur", "café") becomes
    one (two_words, price_eur, caf), and a reserved word one with an underscore (order_), read from its
    JSON field by cdc_columns()' json_fields."""
    names = {column.name: scaffolded_name(column.name, column.name in table.primary_key) for column in table.columns}
    taken = [name for name in names.values() if list(names.values()).count(name) > 1]
    if taken:
        raise ScaffoldError(f"table {table.qualified}: two columns would be mirrored as {taken[0]}; "
                            "write the model's cdc_columns() yourself")
    return names


# The configs cdc-scaffold writes from the source's catalog; a model's others are the user's (kept_configs).
SCAFFOLDED_CONFIGS = ("unique_key", "source_table")
_OPENING, _CLOSING = "([{", ")]}"


def kept_configs(model_text: str) -> list[str]:
    """The entries of a model's config(...) that cdc-scaffold does not write (consistency_group='shop',
    deletes='soft', ...), as written: --overwrite keeps them. None without a config(...) call it can read.
    The model's YAML entry is written anew all the same."""
    start = model_text.find("config(")
    if start < 0:
        return []
    entries, depth, quote, current = [], 0, "", ""
    for character in model_text[start + len("config("):]:
        if quote:
            quote = "" if character == quote else quote
        elif character in "'\"":
            quote = character
        elif character in _OPENING:
            depth += 1
        elif character in _CLOSING:
            if depth == 0:
                entries.append(current)
                break
            depth -= 1
        elif character == "," and depth == 0:
            entries.append(current)
            current = ""
            continue
        current += character
    else:
        return []  # no closing parenthesis: not a call it can read
    kept = [entry.strip() for entry in entries if entry.strip()]
    return [entry for entry in kept if entry.split("=", 1)[0].strip() not in SCAFFOLDED_CONFIGS]


def model_sql(table: SourceTable, kept: Sequence[str] = ()) -> str:
    """kept: configs of the model it replaces, written after the scaffolded ones (kept_configs)."""
    key = table.primary_key[0] if len(table.primary_key) == 1 else list(table.primary_key)
    names = model_column_names(table)
    columns = "\n".join(f"            {names[column.name]!r}: '{model_type(column)}'," for column in table.columns)
    renamed = {name: source for source, name in names.items() if name != source}
    json_fields = ", {" + ", ".join(f"{name!r}: {source!r}" for name, source in renamed.items()) + "}" if renamed else ""
    configs = "".join(f"        {entry},\n" for entry in kept)
    return f"""{{{{
    config(
        unique_key={key!r},
        source_table='{table.qualified}',
{configs}    )
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


def write(tables: Sequence[SourceTable], out: Path, yaml_file: Path | None, overwrite: bool) -> list[Path]:
    """The models' SQL files under out; their YAML appended to yaml_file, or returned for printing."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for table in tables:
        path = out / f"{table.model_name}.sql"
        if path.exists() and not overwrite:
            raise ScaffoldError(f"{path} exists: remove it or pass --overwrite")
        kept = kept_configs(path.read_text()) if path.exists() else []
        if kept:
            # A consistency group, a deletes mode: dropped silently, the mirror left its group or changed mode.
            print(f"cdc-scaffold: {path} keeps its configs {', '.join(kept)}", file=sys.stderr)
        path.write_text(model_sql(table, kept))
        written.append(path)
    if yaml_file is not None:
        write_model_yaml(yaml_file, [(table.model_name, model_yaml(table)) for table in tables])
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
