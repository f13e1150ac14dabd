"""mysql_rows.fast_rows against python-mysql-replication's own decoding of the same binlog of a real
MariaDB: every row image alike, value for value and type for type, for every type the fast path
reads (and its edges: NULLs, extremes, signs, long and multi-byte text); an event it does not read
is the library's."""

from __future__ import annotations

import decimal
import random

from test_capture_faults import mariadb  # noqa: F401 - a fixture

from harness.mariadb_server import server_charsets
from python_jobs.capture import mysql_rows

COLUMNS = [
    ("id", "int", lambda r: None),
    ("ti", "tinyint", lambda r: r.choice([-128, 127, 0, r.randint(-128, 127)])),
    ("tu", "tinyint unsigned", lambda r: r.choice([0, 255, r.randint(0, 255)])),
    ("sm", "smallint", lambda r: r.choice([-32768, 32767, r.randint(-32768, 32767)])),
    ("su", "smallint unsigned", lambda r: r.choice([65535, r.randint(0, 65535)])),
    ("mi", "mediumint", lambda r: r.choice([-8388608, 8388607, -1, r.randint(-8388608, 8388607)])),
    ("mu", "mediumint unsigned", lambda r: r.choice([16777215, r.randint(0, 16777215)])),
    ("i", "int", lambda r: r.choice([-2147483648, 2147483647, r.randint(-2**31, 2**31 - 1)])),
    ("iu", "int unsigned", lambda r: r.choice([4294967295, r.randint(0, 2**32 - 1)])),
    ("b", "bigint", lambda r: r.choice([-2**63, 2**63 - 1, r.randint(-2**63, 2**63 - 1)])),
    ("bu", "bigint unsigned", lambda r: r.choice([2**64 - 1, r.randint(0, 2**64 - 1)])),
    ("f", "float", lambda r: r.choice([1.1, -3.4e38, 0.0, r.uniform(-1e6, 1e6)])),
    ("d", "double", lambda r: r.choice([0.1, 1e308, -2.5e-300, r.uniform(-1e12, 1e12)])),
    ("d1", "decimal(12,2)", lambda r: _decimal(r, 10, 2)),
    ("d2", "decimal(10,0)", lambda r: _decimal(r, 10, 0)),
    ("d3", "decimal(5,5)", lambda r: _decimal(r, 0, 5)),
    ("d4", "decimal(18,9)", lambda r: _decimal(r, 9, 9)),
    ("d5", "decimal(65,30)", lambda r: _decimal(r, 35, 30)),
    ("d6", "decimal(20,11)", lambda r: _decimal(r, 9, 11)),
    ("v", "varchar(20)", lambda r: r.choice(["", "zoë", "東京🚀", "a" * 20, "quote \" \\"])),
    ("vl", "varchar(400)", lambda r: r.choice(["", "ü" * 400, "x" * r.randint(0, 400)])),
    ("vlatin", "varchar(30) character set latin1", lambda r: r.choice(["", "café naïve", "ÆØÅ"])),
    ("c", "char(3)", lambda r: r.choice(["", "ab", "東京"])),
    ("t", "text", lambda r: r.choice(["", "t" * 65000 if r.random() < 0.05 else "short", "東京 " * 10])),
    ("mt", "mediumtext", lambda r: "m" * r.randint(0, 300)),
    ("j", "json", lambda r: r.choice(['{"a": [1, 2.50]}', "null", "[]"])),
    ("dd", "date", lambda r: r.choice(["0000-00-00", "2026-00-00", "1000-01-01", "9999-12-31", _day(r)])),
    ("dt0", "datetime", lambda r: r.choice(["0000-00-00 00:00:00", "1000-01-01 00:00:00", _day(r) + " 23:59:59"])),
    ("dt3", "datetime(3)", lambda r: r.choice(["2026-00-00 00:00:00", _day(r) + " 01:02:03.5", _day(r) + " 01:02:03.999"])),
    ("dt5", "datetime(5)", lambda r: _day(r) + f" 12:34:56.{r.randint(0, 99999):05d}"),
    ("dt6", "datetime(6)", lambda r: r.choice(["9999-12-31 23:59:59.999999", _day(r) + f" 00:00:00.{r.randint(0, 999999):06d}"])),
    ("ts0", "timestamp", lambda r: r.choice(["0000-00-00 00:00:00", "1970-01-01 00:00:01", _day(r, 1971, 2037) + " 10:00:00"])),
    ("ts1", "timestamp(1)", lambda r: _day(r, 1971, 2037) + " 10:00:00.7"),
    ("ts6", "timestamp(6)", lambda r: r.choice(["2038-01-19 03:14:07.999999", _day(r, 1971, 2037) + f" 10:00:00.{r.randint(0, 999999):06d}"])),
]


def _day(r: random.Random, first: int = 1000, last: int = 9999) -> str:
    return f"{r.randint(first, last):04d}-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}"


def _decimal(r: random.Random, integral: int, fraction: int) -> str:
    digits = "".join(r.choice("0123456789") for _ in range(integral)) or "0"
    fraction_digits = "".join(r.choice("0123456789") for _ in range(fraction))
    return f"{r.choice(['', '-'])}{digits}{'.' + fraction_digits if fraction else ''}"


def _changes(connection, seed: int) -> None:
    r = random.Random(seed)
    names = [name for name, _, _ in COLUMNS[1:]]
    with connection.cursor() as cursor:
        cursor.execute("create database shop")
        cursor.execute("create table shop.wide (" + ", ".join(f"{name} {kind} null" for name, kind, _ in COLUMNS)
                       .replace("id int null", "id int primary key") + ")")
        cursor.execute("create table shop.other (id int primary key, at time(3))")
        for round_number in range(6):
            for key in range(round_number * 40, round_number * 40 + 40):
                values = [None if r.random() < 0.15 else make(r) for _, _, make in COLUMNS[1:]]
                cursor.execute(f"insert into shop.wide (id, {', '.join(names)}) values ({', '.join(['%s'] * (len(names) + 1))})",
                               [key, *values])
            cursor.execute("insert into shop.other values (%s, now(3))", (round_number,))
            for key in r.sample(range(round_number * 40 + 40), 25):
                name, _, make = r.choice(COLUMNS[1:])
                cursor.execute(f"update shop.wide set {name} = %s where id = %s", (None if r.random() < 0.2 else make(r), key))
            cursor.execute("update shop.wide set id = id + 10000 where id = %s", (round_number * 40,))  # a key change
            cursor.execute("delete from shop.wide where id in (%s, %s)", (round_number * 40 + 1, round_number * 40 + 2))
            connection.commit()


def _binlog_rows(server, decode) -> list[tuple[str, str, list]]:
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

    with server_charsets(server):
        stream = BinLogStreamReader(
            connection_settings={"host": "127.0.0.1", "port": server.port, "user": "root", "password": ""}, server_id=99,
            resume_stream=False, blocking=False, only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent])
        try:
            return [(type(event).__name__, event.table, decode(event)) for event in stream]
        finally:
            stream.close()


def _typed(rows: list) -> list:
    """Each value with its type: 1 and 1.0 and Decimal('1') are not alike here."""
    def typed(image):
        return {name: (type(value).__name__, str(value) if isinstance(value, decimal.Decimal) else value)
                for name, value in image.items()} if isinstance(image, dict) else image
    return [{part: typed(image) for part, image in row.items()} for row in rows]


def test_fast_rows_decode_as_the_library_does(mariadb):
    connection = mariadb.connect()
    _changes(connection, seed=20261129)
    library = _binlog_rows(mariadb, lambda event: event.rows)
    fast_read = []

    def fast(event):
        fast_read.append(event.table if mysql_rows.readers_of(event) is not None else None)
        return mysql_rows.fast_rows(event)

    fast = _binlog_rows(mariadb, fast)
    assert [(kind, table) for kind, table, _ in fast] == [(kind, table) for kind, table, _ in library]
    assert {kind for kind, table, _ in library if table == "wide"} == {"WriteRowsEvent", "UpdateRowsEvent", "DeleteRowsEvent"}
    # Every event of the wide table took the fast path; the table with a TIME column did not.
    assert set(fast_read) == {"wide", None} and fast_read.count("wide") == sum(table == "wide" for _, table, _ in library)
    assert all(table == "other" for (_, table, _), read in zip(library, fast_read) if read is None)
    rows = 0
    for (kind, table, expected), (_, _, got) in zip(library, fast):
        assert _typed(got) == _typed(expected), f"{kind} of {table}"
        rows += len(expected)
    assert rows > 300
    nulls = [value for _, table, events in fast if table == "wide" for row in events
             for value in row.get("values", row.get("after_values", {})).values() if value is None]
    assert nulls, "the changes hold NULLs"
    reasons = {reason for _, table, events in fast if table == "wide" for row in events
               for part, sources in row.items() if part.endswith("none_sources") for reason in sources.values()}
    assert reasons == {"null", "out of date range", "out of datetime2 range"}


def test_decimal_reader_reads_every_digit_group_and_sign():
    # MySQL's packed decimal (decimal2bin) of 1234567890.123456789 as decimal(19,9): the leading digit in
    # one byte, then 9 digits in 4, the fraction's 9 in 4, the sign bit set; a negative value's bytes are the complement.
    positive = bytes([0x80 | 1]) + (234567890).to_bytes(4, "big") + (123456789).to_bytes(4, "big")
    read = mysql_rows._new_decimal(19, 9)
    assert read(positive, 0) == (decimal.Decimal("1234567890.123456789"), len(positive))
    negative = bytes(byte ^ 0xFF for byte in positive)
    assert read(negative, 0)[0] == decimal.Decimal("-1234567890.123456789")
