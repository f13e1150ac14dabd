"""The source side of a range check (ranges.py): a PostgreSQL or MariaDB/MySQL table's keys sampled,
its segments' row counts and checksums computed by the database (row_hash.py), and a range's rows
read as the capture writes them (sources.py). Keys are compared in the order the online snapshot
pages them, which is the mirrors' order (docs/online_snapshots.md)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Mapping, Sequence

from python_jobs.capture.mysql_snapshot import quoted
from python_jobs.verify.compare import source_columns, type_family
from python_jobs.verify.ranges import Key, KeyRange, SegmentStats
from python_jobs.verify.row_hash import digest_number_sql, row_digest_sql, value_sql

# Key families a range can be compared in alike on every side.
RANGE_KEY_FAMILIES = ("integer", "decimal", "string")
# Source key types a mirror may hold as a number (PostgreSQL's type names start so; MySQL's data types).
_PG_NUMBER_TYPES = ("smallint", "integer", "bigint", "numeric", "real", "double precision", "oid")
# Families whose checksum text may be null for a value that is not (row_hash.py); a string's, an integer's
# and a boolean's never are, so a table without these columns costs no query.
_MAY_RENDER_NULL = ("decimal", "float", "double", "date", "timestamp")
_MYSQL_NUMBER_TYPES = ("tinyint", "smallint", "mediumint", "int", "bigint", "decimal", "float", "double", "bit", "year")


class RangesUnsupported(Exception):
    """The table cannot be checked by ranges (the message says why); it is sampled instead."""


class KeyRetyped(Exception):
    """A key column the source holds as text (or another non-number) that the mirror's model types as a
    number: the sides neither order nor write its values alike, so no check of it would be true."""


def retyped_key(column: str, source_type: str, mirror_type: str) -> KeyRetyped:
    return KeyRetyped(f"key column {column} is {source_type} at the source and {mirror_type} in the mirror (its model "
                      f"casts it): its keys are not ordered or written alike, so the mirror is not compared. Type it as the "
                      f"source does (a string) in the model to verify it")


def checked_columns(mirror_columns: Sequence[Sequence[str]]) -> list[tuple[str, str]]:
    return [(name.lower(), data_type) for name, data_type in mirror_columns if not name.lower().startswith("_cdc")]


def _segments(conditions: Sequence[str]) -> str:
    """Segment i: the first condition (key <= points[i]) that holds; the last: none holds."""
    if not conditions:
        return "0"
    return "case " + " ".join(f"when {condition} then {index}" for index, condition in enumerate(conditions)) \
        + f" else {len(conditions)} end"


def _stats(rows: Sequence[Sequence[Any]]) -> dict[int, SegmentStats]:
    return {int(segment): SegmentStats(int(count), int(total or 0)) for segment, count, total in rows}


def _uncarried(cursor: Any, relation: str, rendered: Sequence[Sequence[str]], values: Mapping[str, str]) -> dict[str, int]:
    """Per checksummed column, the source's rows whose value is not null but whose checksum text is: values
    the mirror holds as null because the log or the mirror's type cannot carry them (NaN, infinities,
    dates outside the engine's years, MySQL's zero dates: row_hash.py). The sides agree on them, so no
    comparison can see them; only the source's own values can."""
    columns = [(name, quoted_name) for name, quoted_name, mirror_type, *_ in rendered
               if name in values and type_family(mirror_type) in _MAY_RENDER_NULL]
    if not columns:
        return {}
    counts = ", ".join(f"sum(case when {quoted_name} is not null and ({values[name]}) is null then 1 else 0 end)"
                       for name, quoted_name in columns)
    cursor.execute(f"select {counts} from {relation}")
    return {name: int(count) for (name, _), count in zip(columns, cursor.fetchone()) if count}


class PostgresRanges:
    def __init__(self, source: Any, table: str, mirror_columns: Sequence[Sequence[str]]) -> None:
        from python_jobs.capture.postgres_columns import read_catalog
        from python_jobs.capture.postgres_pages import _TEXT_TYPES, _ordered, _ordered_text, _typed_parameter
        from python_jobs.capture.postgres_snapshot import quote_identifier

        self.source, self.table = source, table
        catalog = {column.name.lower(): column for column in read_catalog(source.connection, [table]).get(table) or ()}
        self.key = [column for column in catalog.values() if column.in_primary_key]
        self.key_names = [column.name for column in self.key]
        mirror_types = dict(checked_columns(mirror_columns))
        for column in self.key:
            family = type_family(mirror_types.get(column.name.lower(), ""))
            if family not in RANGE_KEY_FAMILIES:
                raise RangesUnsupported(f"key column {column.name} ({column.type_name}) is not compared by ranges")
            if family != "string" and not column.type_name.startswith(_PG_NUMBER_TYPES):
                raise retyped_key(column.name, column.type_name, mirror_types[column.name.lower()])
        # A key mirrored as a string whose type is not text (numeric, enum, money, inet, interval, uuid)
        # is ranged by its written text, byte by byte, as the mirror orders it: read and compared as that text.
        as_text = [type_family(mirror_types.get(column.name.lower(), "")) == "string"
                   and not column.type_name.startswith(_TEXT_TYPES) for column in self.key]
        # A bytea's text is the mirror's, its hex without the leading \x: sampled points, the ranges
        # that differ and the keys in flight are the mirror's keys, compared with it and asked of the capture.
        written = [f"encode({quote_identifier(column.name)}, 'hex')" if column.type_name == "bytea"
                   else f"format('%%s', {quote_identifier(column.name)})" for column in self.key]
        self.selected = ", ".join(text if as_text else quote_identifier(column.name)
                                  for column, text, as_text in zip(self.key, written, as_text))
        # Ranged as the capture's pages are: by UTF-8 bytes also in a database of another encoding.
        with source.connection.cursor() as cursor:
            cursor.execute("select current_setting('server_encoding')")
            (encoding,) = cursor.fetchone()
        self.ordered = "(" + ", ".join(_ordered_text(text, encoding) if as_text else _ordered(column, encoding)
                                       for column, text, as_text in zip(self.key, written, as_text)) + ")"
        self.typed = "(" + ", ".join(_ordered_text("%s::text", encoding) if text else _typed_parameter(column, encoding)
                                     for column, text in zip(self.key, as_text)) + ")"
        self.source_names = [column.name for column in catalog.values()]
        sources = {name: catalog[source.lower()] for name, source in source_columns(mirror_types, self.source_names).items()}
        self.rendered = [(name, quote_identifier(sources[name].name), mirror_type, sources[name].type_name)
                         for name, mirror_type in mirror_types.items() if name in sources]
        self.render_for("")
        self.excluded: list[list[str]] = []

    def render_for(self, mirror_engine: str) -> None:
        """The checksum's texts as the mirror's engine holds each value (row_hash.value_sql)."""
        self.values = {name: text for name, *column in self.rendered
                       if (text := value_sql("postgres", *column, mirror_engine=mirror_engine))}
        self.in_checksum = list(self.values)

    def exclude(self, keys: Sequence[Sequence[str]]) -> None:
        """Leave these keys (each its values as text) out of every later query: rows in flight (in_flight.py)."""
        self.excluded = [list(key) for key in keys]

    def _where(self, key_range: KeyRange) -> tuple[str, list[Any]]:
        from python_jobs.capture.postgres_snapshot import quote_identifier

        conditions, parameters = ["true"], []
        if self.excluded:
            # not exists, which PostgreSQL runs as a hash anti join: NOT IN's subplan is hashed only
            # while the keys fit work_mem, and otherwise scans them for every row.
            matches = " and ".join((f"decode(excluded_.k{index}, 'hex')" if column.type_name == "bytea"
                                    else f"excluded_.k{index}::{column.type_name}") + f" = {self.table}.{quote_identifier(column.name)}"
                                   for index, column in enumerate(self.key))
            arrays = ", ".join(["%s::text[]"] * len(self.key))
            names = ", ".join(f"k{index}" for index in range(len(self.key)))
            conditions.append(f"not exists (select 1 from unnest({arrays}) as excluded_({names}) where {matches})")
            parameters.extend([key[index] for key in self.excluded] for index in range(len(self.key)))
        if key_range.after is not None:
            conditions.append(f"{self.ordered} > {self.typed}")
            parameters.extend(str(value) for value in key_range.after)
        if key_range.through is not None:
            conditions.append(f"{self.ordered} <= {self.typed}")
            parameters.extend(str(value) for value in key_range.through)
        return " and ".join(conditions), parameters

    def sample_keys(self, key_range: KeyRange, count: int) -> list[Key]:
        where, parameters = self._where(key_range)
        with self.source.connection.cursor() as cursor:
            cursor.execute(f"select {self.selected} from {self.table} where {where} order by random() limit {int(count)}",
                           parameters)
            return [tuple(row) for row in cursor.fetchall()]

    def segment_stats(self, key_range: KeyRange, points: Sequence[Key],
                      columns: Sequence[str] | None = None) -> dict[int, SegmentStats]:
        where, parameters = self._where(key_range)
        segment = _segments([f"{self.ordered} <= {self.typed}"] * len(points))
        # psycopg2 reads every % of a statement with parameters.
        digest = row_digest_sql("postgres", [self.values[name] for name in columns or self.in_checksum]).replace("%", "%%")
        with self.source.connection.cursor() as cursor:
            cursor.execute(
                f"select segment, count(*), sum({digest_number_sql('postgres', 'digest')}) from "
                f"(select {segment} as segment, {digest} as digest from {self.table} where {where}) as rows_ "
                f"group by segment", [str(value) for point in points for value in point] + parameters)
            return _stats(cursor.fetchall())

    def rows(self, key_range: KeyRange) -> dict[str, dict[str, Any]]:
        where, parameters = self._where(key_range)
        return self.source._read(self.table, f"where {where}", parameters).rows

    def uncarried(self) -> dict[str, int]:
        with self.source.connection.cursor() as cursor:
            return _uncarried(cursor, self.table, self.rendered, self.values)


class MysqlRanges:
    def __init__(self, source: Any, table: str, mirror_columns: Sequence[Sequence[str]]) -> None:
        from python_jobs.capture.mysql_pages import _BINARY, _key_expressions

        self.source, self.table = source, table
        self.info = source._table(table)
        types = {column.name.lower(): column for column in self.info.columns}
        mirror_types = dict(checked_columns(mirror_columns))
        self.key = [self.info.types[name] for name in self.info.primary_key]
        self.key_names = list(self.info.primary_key)
        for column in self.key:
            family = type_family(mirror_types.get(column.name.lower(), ""))
            if column.data_type in _BINARY or family not in RANGE_KEY_FAMILIES:
                raise RangesUnsupported(f"key column {column.name} ({column.column_type}) is not compared by ranges")
            if family != "string" and column.data_type not in _MYSQL_NUMBER_TYPES:
                raise retyped_key(column.name, column.column_type, mirror_types[column.name.lower()])
        self.expressions = [_key_expressions(column) for column in self.key]
        # A key mirrored as a string is sampled as its written text (a uuid, an address, a decimal wider
        # than 38 digits), the order its ranges are compared in (mysql_pages._key_expressions); a bit
        # key as its number, which its mirror holds (the column's own value is its bytes, not a text).
        self.selected = ", ".join(ordered if column.data_type == "bit" else shown
                                  if type_family(mirror_types.get(column.name.lower(), "")) == "string"
                                  else quoted(column.name) for column, (ordered, shown, _) in zip(self.key, self.expressions))
        self.source_names = [column.name for column in self.info.columns]
        sources = {name: types[source.lower()] for name, source in source_columns(mirror_types, self.source_names).items()}
        self.rendered = [(name, quoted(sources[name].name), mirror_type, sources[name].data_type)
                         for name, mirror_type in mirror_types.items() if name in sources]
        self.render_for("")
        self.relation = quoted(self.info.schema, self.info.name)
        self.excluded: list[list[str]] = []

    def render_for(self, mirror_engine: str) -> None:
        """The checksum's texts as the mirror's engine holds each value (row_hash.value_sql)."""
        self.values = {name: text for name, *column in self.rendered
                       if (text := value_sql("mysql", *column, mirror_engine=mirror_engine))}
        self.in_checksum = list(self.values)

    def exclude(self, keys: Sequence[Sequence[str]]) -> None:
        """Leave these keys (each its values as text) out of every later query: rows in flight (in_flight.py)."""
        self.excluded = [list(key) for key in keys]

    def _compare(self, key: Key, operator: str) -> tuple[str, list[str]]:
        from python_jobs.capture.mysql_pages import _bound_parameters, _compare

        texts = [str(value) for value in key]
        return _compare([(ordered, parameter) for ordered, _, parameter in self.expressions], operator), \
            _bound_parameters(texts)

    def _where(self, key_range: KeyRange) -> tuple[str, list[str]]:
        conditions, parameters = ["true"], []
        if self.excluded:
            ordered = ", ".join(expression for expression, _, _ in self.expressions)
            one = "(" + ", ".join(parameter for _, _, parameter in self.expressions) + ")"
            conditions.append(f"({ordered}) not in ({', '.join([one] * len(self.excluded))})")
            # Numbers bound as numbers: a quoted number against a number column keeps MariaDB from
            # searching the list in order (one comparison per key and row instead).
            numeric = [parameter == "%s" for _, _, parameter in self.expressions]
            parameters.extend(Decimal(value) if is_number else value
                              for key in self.excluded for value, is_number in zip(key, numeric))
        for bound, operator in ((key_range.after, ">"), (key_range.through, "<=")):
            if bound is not None:
                condition, values = self._compare(bound, operator)
                conditions.append(condition)
                parameters.extend(values)
        return " and ".join(conditions), parameters

    def sample_keys(self, key_range: KeyRange, count: int) -> list[Key]:
        where, parameters = self._where(key_range)
        with self.source.connection.cursor() as cursor:
            cursor.execute(f"select {self.selected} from {self.relation} where {where} order by rand() limit {int(count)}",
                           parameters)
            return [tuple(value.decode("utf-8") if isinstance(value, (bytes, bytearray)) else value for value in row)
                    for row in cursor.fetchall()]

    def segment_stats(self, key_range: KeyRange, points: Sequence[Key],
                      columns: Sequence[str] | None = None) -> dict[int, SegmentStats]:
        where, parameters = self._where(key_range)
        compared = [self._compare(point, "<=") for point in points]
        segment = _segments([condition for condition, _ in compared])
        digest = row_digest_sql("mysql", [self.values[name] for name in columns or self.in_checksum]).replace("%", "%%")
        with self.source.connection.cursor() as cursor:
            cursor.execute(
                f"select segment, count(*), sum({digest_number_sql('mysql', 'digest')}) from "
                f"(select {segment} as segment, {digest} as digest from {self.relation} where {where}) as rows_ "
                f"group by segment", [value for _, values in compared for value in values] + parameters)
            return _stats(cursor.fetchall())

    def rows(self, key_range: KeyRange) -> dict[str, dict[str, Any]]:
        where, parameters = self._where(key_range)
        return self.source._read(self.table, f"where {where}", parameters).rows

    def uncarried(self) -> dict[str, int]:
        with self.source.connection.cursor() as cursor:
            return _uncarried(cursor, self.relation, self.rendered, self.values)
