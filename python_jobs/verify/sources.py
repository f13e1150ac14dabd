"""The source side of cdc-verify: a table's row count, a random sample of its rows, and its rows by
key, every value rendered as the capture writes it (the snapshot's own reading of a row), each row
by its canonical key, the mirror's `_cdc_key`.

The source comes from the project's var `cdc_merge_source` ({postgres: DSN} or {mysql:
user@host:port}, as cdc-init writes it), or cdc-verify's --postgres / --mysql; the password from
PGPASSWORD (or ~/.pgpass) and MYSQL_PWD, never from the project.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from python_jobs.capture.mysql_connection import access_denied_hint
from python_jobs.capture.mysql_snapshot import READ_AS_STORED, quoted
from python_jobs.formats.records import canonical_key, format_seq
from python_jobs.formats.wal2json import parse_lsn
from python_jobs.verify.in_flight import SourcePosition

Row = dict[str, Any]
# Between the WAL position that bounds what a snapshot may miss and the snapshot (pin_position).
PIN_PAUSE_SECONDS = 0.05


class SourceError(RuntimeError):
    """The source cannot be read; the message says what to change."""


def source_from(setting: Any) -> PostgresSource | MysqlSource:
    """The source database a `cdc_merge_source` setting names, connected."""
    if not isinstance(setting, Mapping) or len(setting) != 1 or next(iter(setting)) not in ("postgres", "mysql"):
        raise SourceError(
            "no source database to compare with: set the var cdc_merge_source in dbt_project.yml to "
            "{postgres: 'host=... dbname=... user=...'} or {mysql: 'user@host:3306'} (the password from "
            f"PGPASSWORD or MYSQL_PWD), or pass --postgres / --mysql to cdc-verify; got {setting!r}")
    kind, address = next(iter(setting.items()))
    return PostgresSource(str(address)) if kind == "postgres" else MysqlSource(str(address))


@dataclass
class SampledTable:
    key_columns: tuple[str, ...]
    rows: dict[str, Row]  # by canonical key


class PostgresSource:
    """A PostgreSQL source, read as cdc-capture-postgres's snapshot reads it."""

    # Key types whose text output is the capture's rendering too, so a key from the mirror finds its row.
    _TEXT_KEYED = re.compile(r"^(smallint|integer|bigint|numeric.*|text|character.*|uuid)$")

    def __init__(self, dsn: str) -> None:
        import psycopg2

        from python_jobs.capture.postgres_connection import connect, dsn_settings, dsn_without_secrets

        if "password" in dsn_settings(dsn):
            raise SourceError("the source DSN holds a password: remove it and set PGPASSWORD (or use ~/.pgpass)")
        try:
            self.connection = connect(dsn)
        except psycopg2.Error as error:
            raise SourceError(f"cannot connect to PostgreSQL ({dsn_without_secrets(dsn)}): "
                              f"{' '.join(str(error).split())}; check the source's DSN (cdc_merge_source, or "
                              "--postgres), and the password in PGPASSWORD (or ~/.pgpass)") from None
        self.connection.set_session(readonly=True, autocommit=True)
        self.name = f"PostgreSQL ({dsn_without_secrets(dsn)})"

    def _columns(self, table: str) -> tuple[list[tuple[str, Any]], tuple[str, ...], bool]:
        from python_jobs.capture.postgres_columns import read_catalog
        from python_jobs.formats.wal2json import snapshot_converter

        catalog = read_catalog(self.connection, [table]).get(table)
        if not catalog:
            raise SourceError(f"{self.name}: table {table} does not exist (or the user cannot read it)")
        key = tuple(column.name for column in catalog if column.in_primary_key)
        if not key:  # as MySQL's (read_table_info): no key to match the mirror's rows to the source's by
            raise SourceError(f"{self.name}: table {table} has no primary key: a mirror needs one to merge on")
        by_text = all(self._TEXT_KEYED.match(column.type_name) for column in catalog if column.in_primary_key)
        return [(column.name, snapshot_converter(column.type_name)) for column in catalog], key, by_text

    def count(self, table: str) -> int:
        with self.connection.cursor() as cursor:
            cursor.execute(f"select count(*) from {table}")
            return int(cursor.fetchone()[0])

    def key_names(self, table: str) -> tuple[str, ...]:
        """The table's primary key columns now, in the key's order."""
        return self._columns(table)[1]

    def declared_types(self, table: str) -> dict[str, str]:
        """{column: its type as declared (format_type: numeric(12,4))}."""
        from python_jobs.capture.postgres_columns import read_catalog

        return {column.name: column.type_name for column in read_catalog(self.connection, [table]).get(table) or []}

    def sample(self, table: str, size: int) -> SampledTable:
        return self._read(table, f"order by random() limit {int(size)}", [])

    def rows_by_key(self, table: str, keys: Sequence[Sequence[str]]) -> dict[str, Row] | None:
        """The rows of these keys (each the canonical key's values); None where a key's type cannot be looked up so."""
        columns, key, by_text = self._columns(table)
        if not keys:
            return {}
        if not by_text:
            return None
        from python_jobs.capture.postgres_snapshot import quote_identifier

        rendered = ", ".join(f"format('%%s', {quote_identifier(name)})" for name in key)
        tuples = ", ".join("(" + ", ".join(["%s"] * len(key)) + ")" for _ in keys)
        return self._read(table, f"where ({rendered}) in ({tuples})", [value for values in keys for value in values]).rows

    def request_keys(self, table: str, keys: Sequence[Sequence[str]]) -> list[list[str]]:
        """Canonical keys' values as a re-read request bounds them (snapshot_requests.py), each cast to its
        column's type by the capture's pages: a bytea as \\x and its hex (the capture writes the hex alone)."""
        from python_jobs.capture.postgres_columns import read_catalog

        types = [column.type_name for column in read_catalog(self.connection, [table]).get(table) or ()
                 if column.in_primary_key]
        return [["\\x" + value if type_name == "bytea" else value for value, type_name in zip(key, types)]
                for key in keys]

    def _read(self, table: str, condition: str, parameters: Sequence[Any]) -> SampledTable:
        from python_jobs.capture.postgres_snapshot import select_list

        columns, key, _ = self._columns(table)
        with self.connection.cursor() as cursor:
            # With parameters, psycopg2 reads every % of the statement: the select list's are doubled.
            cursor.execute(f"select {select_list([name for name, _ in columns]).replace('%', '%%')} from {table} {condition}",
                           list(parameters))
            rows = [{name: None if text is None else convert(text) for (name, convert), text in zip(columns, values)}
                    for values in cursor.fetchall()]
        return SampledTable(key, {canonical_key(row, "row", key): row for row in rows})

    def ranges(self, table: str, mirror_columns: Sequence[Sequence[str]]) -> Any:
        """The table as one side of a range check (source_ranges.py)."""
        from python_jobs.verify.source_ranges import PostgresRanges

        self._columns(table)  # a table that is not there, said so
        return PostgresRanges(self, table, mirror_columns)

    def pin_position(self) -> SourcePosition:
        """Every later read in one snapshot until release(), and the log positions it stands between
        (in_flight.py). A change's seq carries the end of its transaction's commit record (the WAL
        position once it is in): a transaction whose commit ended by the position read before the
        snapshot is taken is in it (a commit's visibility trails its WAL record by moments, hence
        the pause); every one the snapshot shows ended by the position read as its first statement."""
        with self.connection.cursor() as cursor:
            cursor.execute("select pg_current_wal_insert_lsn()::text")
            before = cursor.fetchone()[0]
        time.sleep(PIN_PAUSE_SECONDS)
        self.connection.set_session(isolation_level="REPEATABLE READ", readonly=True, autocommit=False)
        with self.connection.cursor() as cursor:
            cursor.execute("select pg_current_wal_insert_lsn()::text")
            within = cursor.fetchone()[0]
        return SourcePosition(format_seq(parse_lsn(before) + 1, 0, 0, 0), format_seq(parse_lsn(within), 0, 0, 0), within)

    def release(self) -> None:
        self.connection.rollback()
        self.connection.set_session(isolation_level="DEFAULT", readonly=True, autocommit=True)

    def close(self) -> None:
        self.connection.close()


class MysqlSource:
    """A MariaDB/MySQL source, read as cdc-capture-mysql's snapshot reads it."""

    def __init__(self, address: str) -> None:
        import pymysql

        match = re.fullmatch(r"(?:([^@]+)@)?([^:]+)(?::(\d+))?", address)
        if match is None:
            raise SourceError(f"source mysql {address!r} is not USER@HOST:PORT")
        self.name = f"{match.group(1) or 'root'}@{match.group(2)}:{match.group(3) or 3306}"
        try:
            self.connection = pymysql.connect(host=match.group(2), port=int(match.group(3) or 3306),
                                              user=match.group(1) or "root", password=os.environ.get("MYSQL_PWD", ""),
                                              charset="utf8mb4", autocommit=True)
        except pymysql.Error as error:
            raise SourceError(f"cannot connect to {self.name}: {error}; check the address and MYSQL_PWD"
                              f"{access_denied_hint(error)}") from None
        with self.connection.cursor() as cursor:
            cursor.execute("set session time_zone = '+00:00'")  # TIMESTAMP in UTC, as the capture reads it
            cursor.execute(READ_AS_STORED)

    def _table(self, table: str) -> Any:
        from python_jobs.capture.mysql_columns import read_table_info
        from python_jobs.capture.output import CaptureError

        try:
            return read_table_info(self.connection, table)
        except CaptureError as error:
            raise SourceError(f"{self.name}: {error}") from None

    def key_names(self, table: str) -> tuple[str, ...]:
        """The table's primary key columns now, in the key's order."""
        return tuple(self._table(table).primary_key)

    def declared_types(self, table: str) -> dict[str, str]:
        """{column: its type as declared (COLUMN_TYPE: decimal(12,4) unsigned)}."""
        return {column.name: column.column_type for column in self._table(table).columns}

    def count(self, table: str) -> int:
        info = self._table(table)
        with self.connection.cursor() as cursor:
            cursor.execute(f"select count(*) from {quoted(info.schema, info.name)}")
            return int(cursor.fetchone()[0])

    def sample(self, table: str, size: int) -> SampledTable:
        return self._read(table, f"order by rand() limit {int(size)}", ())

    def rows_by_key(self, table: str, keys: Sequence[Sequence[str]]) -> dict[str, Row] | None:
        info = self._table(table)
        if not keys:
            return {}
        columns = ", ".join(quoted(name) for name in info.primary_key)
        tuples = ", ".join("(" + ", ".join(["%s"] * len(info.primary_key)) + ")" for _ in keys)
        return self._read(table, f"where ({columns}) in ({tuples})", [value for values in keys for value in values]).rows

    def request_keys(self, table: str, keys: Sequence[Sequence[str]]) -> list[list[str]]:
        """Canonical keys' values as a re-read request bounds them (snapshot_requests.py): a binary key
        as hex (the capture writes base64), a date and time as the server reads it (no T, no Z)."""
        import base64

        info = self._table(table)
        types = [info.types[name].data_type for name in info.primary_key]

        def bound(value: str, data_type: str) -> str:
            if data_type in ("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"):
                return base64.b64decode(value).hex().upper()
            if data_type in ("datetime", "timestamp"):
                return value.replace("T", " ").removesuffix("Z")
            return value

        return [[bound(value, data_type) for value, data_type in zip(key, types)] for key in keys]

    def _read(self, table: str, condition: str, parameters: Sequence[Any]) -> SampledTable:
        from python_jobs.capture.mysql_events import row_image
        from python_jobs.capture.mysql_snapshot import select_list

        info = self._table(table)
        names = [column.name for column in info.columns]
        with self.connection.cursor() as cursor:
            cursor.execute(f"select {select_list(info.columns)} from {quoted(info.schema, info.name)} {condition}", parameters)
            rows = [row_image(info, dict(zip(names, values))) for values in cursor.fetchall()]
        return SampledTable(info.primary_key, {canonical_key(row, "row", info.primary_key): row for row in rows})

    def ranges(self, table: str, mirror_columns: Sequence[Sequence[str]]) -> Any:
        """The table as one side of a range check (source_ranges.py)."""
        from python_jobs.verify.source_ranges import MysqlRanges

        return MysqlRanges(self, table, mirror_columns)

    def pin_position(self) -> SourcePosition:
        """Every later read in one consistent snapshot until release(), and its binlog position
        (in_flight.py): MariaDB says the snapshot's own; MySQL's is bounded by the server's position
        before and after the snapshot is taken (REPLICATION CLIENT, which the capture user has)."""
        with self.connection.cursor() as cursor:
            cursor.execute("show master status")
            before = cursor.fetchone()
            cursor.execute("start transaction with consistent snapshot, read only")
            cursor.execute("show status like 'binlog_snapshot_%'")
            status = {name.lower(): value for name, value in cursor.fetchall()}
            if status.get("binlog_snapshot_file"):
                before = within = (status["binlog_snapshot_file"], status["binlog_snapshot_position"])
            else:
                cursor.execute("show master status")
                within = cursor.fetchone()
        if before is None or within is None:
            raise SourceError(f"{self.name}: the binary log is off (SHOW MASTER STATUS is empty), so there is no position "
                              "to compare the mirror at: the capture needs log_bin")
        # A snapshot's rows at the position itself (phase 0) show the table as this snapshot does: not
        # in flight, or a quiet server's whole table would be left out after the capture's snapshot.
        return SourcePosition(_binlog_seq(before, phase=1), _binlog_seq(within), f"{within[0]}:{within[1]}")

    def release(self) -> None:
        self.connection.rollback()

    def close(self) -> None:
        self.connection.close()


def _binlog_seq(status: Sequence[Any], phase: int = 0) -> str:
    """A binlog file and offset as the raw seq of an event there (formats/debezium.py): phase 0 a
    snapshot's row, 1 a streamed change (whose rows event starts after its transaction's first event)."""
    match = re.search(r"(\d+)$", str(status[0]))
    return format_seq(int(match.group(1)) if match else 0, int(status[1]), 0, phase)


def key_values(keys: Iterable[str]) -> list[list[str]]:
    """The values of canonical keys (JSON arrays of text, the mirror's _cdc_key)."""
    import json

    return [json.loads(key) for key in keys]
