"""mysql_row_images.debezium_images against the general path (mysql_rows.fast_rows, binlog_values,
row_image) on the same binlog of a real MariaDB: the events of every row written byte for byte alike,
for every type the one-pass path reads (and NULLs, zero dates, signs, extremes, latin1 and
multi-byte text); an event with another type is left to the general path."""

from __future__ import annotations

import random

import orjson
from test_capture_faults import mariadb  # noqa: F401 - a fixture
from test_capture_mysql_rows import _changes

from harness.mariadb_server import server_charsets
from python_jobs.capture import mysql_rows
from python_jobs.capture.mysql_columns import read_table_info
from python_jobs.capture.mysql_events import RowChange, Transaction, change_events
from python_jobs.capture.mysql_row_images import debezium_images, decimal_text
from python_jobs.capture.mysql_server import _row_change


def binlog_row_changes(server, tables, one_pass: bool, server_id: int) -> list[tuple[str, list[RowChange], bool]]:
    """Each rows event of the tables: its table, its changes (by the one-pass images where one_pass and
    they take it, else by the general path), and whether the one-pass path took it."""
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

    found = []
    with server_charsets(server):
        stream = BinLogStreamReader(
            connection_settings={"host": "127.0.0.1", "port": server.port, "user": "root", "password": ""},
            server_id=server_id, resume_stream=False, blocking=False,
            only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent])
        try:
            for event in stream:
                table = tables[event.table]
                start = event.packet.log_pos - event.event_size
                decoded = debezium_images(event, table) if one_pass else None
                if decoded is not None:
                    op, images = decoded
                    found.append((event.table, [RowChange(table, op, before, after, stream.log_file, start, number, True)
                                                for number, (before, after) in enumerate(images)], True))
                else:
                    found.append((event.table, [_row_change(event, row, table, stream.log_file, start, number)
                                                for number, row in enumerate(mysql_rows.fast_rows(event))], False))
        finally:
            stream.close()
    return found


def _events(server, tables, one_pass: bool) -> tuple[list[bytes], list[str]]:
    """The events of every rows event of the tables (one transaction each, as the capture writes
    them), and the tables of the rows events the one-pass path took."""
    lines, taken = [], []
    for table, changes, took in binlog_row_changes(server, tables, one_pass, server_id=98):
        if took:
            taken.append(table)
        transaction = Transaction(gtid="0-1-1", commit_ts_ms=1000, changes=changes)
        lines.extend(orjson.dumps(event) for event in change_events(transaction, processed_ms=2000))
    return lines, taken


def test_one_pass_images_are_the_general_paths_byte_for_byte(mariadb):
    connection = mariadb.connect()
    _changes(connection, seed=20261130)
    tables = {name: read_table_info(connection, f"shop.{name}") for name in ("wide", "other")}

    general, none_taken = _events(mariadb, tables, one_pass=False)
    one_pass, taken = _events(mariadb, tables, one_pass=True)

    assert none_taken == []
    assert one_pass == general
    # Every event of the wide table took the one-pass path; the table with a TIME column did not.
    assert set(taken) == {"wide"} and len(taken) > 20
    written = b"\n".join(general)
    for edge in (b'"vlatin":"caf\xc3\xa9 na\xc3\xafve"', b'"dd":null', b'"ts0":null', b'"f":1.1,', b'"op":"d"'):
        assert edge in written, edge
    assert b'"d1":"-' in written and b'"ts6":"2038-01-19T03:14:07.999999Z"' in written


def test_decimal_text_is_the_decimals_text():
    """decimal_text against the Decimal mysql_rows reads, formatted as json_value formats it: every
    precision and scale, random bytes (also digit groups no server writes), zeros of both signs."""
    r = random.Random(7)
    for precision in range(1, 66):
        for decimals in range(0, min(precision, 30) + 1):
            as_decimal, as_text = mysql_rows._new_decimal(precision, decimals), decimal_text(precision, decimals)
            _, size = mysql_rows.decimal_layout(precision, decimals)
            zeros = [bytes([0x80]) + bytes(size - 1), bytes([0x7F]) + b"\xff" * (size - 1)]
            for packed in zeros + [bytes(r.randrange(256) for _ in range(size)) for _ in range(8)]:
                body = b"\x01" + packed + b"\x02"
                value, end = as_decimal(body, 1)
                assert as_text(body, 1) == (format(value, "f"), end), (precision, decimals, packed.hex())
    assert decimal_text(12, 2)(bytes([0x7F]) + b"\xff" * 5, 0)[0] == "-0.00"
