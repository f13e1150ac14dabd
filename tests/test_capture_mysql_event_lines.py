"""mysql_event_lines.change_lines against orjson.dumps over mysql_events.change_events' dicts: the
same lines byte for byte, and the same count of changes, for the binlog of a real MariaDB (every type,
NULLs, key changes, both decoding paths) and for the parts of a line its templates hold (GTIDs,
names and positions with quotes, '%' and non-ASCII text, no GTID, no commit time, schema events,
truncates, several tables and rows events in one transaction)."""

from __future__ import annotations

import datetime as dt

import orjson
from test_capture_faults import mariadb  # noqa: F401 - a fixture
from test_capture_mysql_row_images import binlog_row_changes
from test_capture_mysql_rows import _changes

from python_jobs.capture.mysql_columns import read_table_info
from python_jobs.capture.mysql_event_lines import change_lines, first_position
from python_jobs.capture.mysql_events import Column, RowChange, TableInfo, Transaction, change_events
from python_jobs.capture.output import change_event_count


def _as_dicts(transaction: Transaction, processed_ms: int) -> tuple[list[bytes], int]:
    events = change_events(transaction, processed_ms)
    return [orjson.dumps(event) for event in events], change_event_count(events)


def _binlog_changes(server, tables) -> list[list[RowChange]]:
    """Each rows event's changes: the one-pass images where it takes them, and the general path's."""
    return [changes for one_pass in (True, False)
            for _, changes, _ in binlog_row_changes(server, tables, one_pass, server_id=97)]


def test_lines_are_the_events_dumped_byte_for_byte_on_a_real_binlog(mariadb):
    connection = mariadb.connect()
    _changes(connection, seed=20261201)
    with connection.cursor() as cursor:
        for key, text in enumerate(["100% \"sure\" \\ %d %s", "tab\there\nline\x01\x1f\x7f", "東京🚀 zoë", "%%"]):
            cursor.execute("insert into shop.wide (id, v, t) values (%s, %s, %s)", (90000 + key, text[:20], text))
    connection.commit()
    tables = {name: read_table_info(connection, f"shop.{name}") for name in ("wide", "other")}
    per_event = _binlog_changes(mariadb, tables)
    assert any(change.debezium for changes in per_event for change in changes)
    assert any(not change.debezium for changes in per_event for change in changes)

    # One transaction a rows event, then all of them in one (several tables and events, key changes).
    transactions = [Transaction(gtid="0-1-7", commit_ts_ms=1000, changes=changes) for changes in per_event]
    transactions.append(Transaction(begin_file="binlog.000001", begin_position=4, commit_ts_ms=None,
                                    changes=[change for changes in per_event for change in changes]))
    split = 0
    for transaction in transactions:
        lines, count = change_lines(transaction, 2000)
        assert (lines, count) == _as_dicts(transaction, 2000)
        split += count - len(transaction.changes)
    written = b"\n".join(change_lines(transactions[-1], 2000)[0])
    assert split > 0 and b'"op":"d"' in written and b'"op":"u"' in written  # key changes: a delete and an insert
    assert b'100% \\"sure\\" \\\\ %d %s' in written and b"tab\\there\\nline\\u0001\\u001f\x7f" in written


def test_the_templates_parts_are_written_as_orjson_writes_them():
    odd = TableInfo('sh"op%', "ta%sble é", (Column("id", "bigint", "bigint"), Column("at", "timestamp", "timestamp")),
                    ("id",))
    plain = TableInfo("shop", "lines", (Column("id", "bigint", "bigint"),), ("id",))
    changes = [
        RowChange(odd, "c", None, {"id": 1, "at": dt.datetime(2024, 1, 2, 3, 4, 5)}, "bin%dlog.000007", 4242, 0),
        RowChange(odd, "c", None, {"id": 2, "at": None}, "bin%dlog.000007", 4242, 1, False),
        RowChange(plain, "d", {"id": 4}, None, "bin%dlog.000007", 4300, 0, True),
        RowChange(odd, "u", {"id": 1, "at": None}, {"id": 1, "at": "x"}, "bin%dlog.000007", 4400, 0, True),
        RowChange(odd, "u", {"id": 1, "at": None}, {"id": 3, "at": None}, "bin%dlog.000007", 4400, 1, True),
        RowChange(plain, "t", None, None, "bin%dlog.000008", 4, 0),
        RowChange(plain, "c", None, {"id": 4}, "bin%dlog.000008", 4, 0, True),  # another file, the same position
    ]
    schema_event = {"source": {"file": "bin%dlog.000007", "pos": 4000, "row": 0}, "ddl": "alter table"}
    for gtid, commit_ms, schema_events in (("0-1-%s\"9é", 1000, []), (None, None, [schema_event]),
                                           ("0-1-9", 0, [{**schema_event, "op": "c"}])):
        transaction = Transaction(gtid=gtid, begin_file="bin%dlog.000007", begin_position=4000, commit_ts_ms=commit_ms,
                                  changes=changes, schema_events=schema_events)
        for processed_ms in (2000, 0, 2**40):
            assert change_lines(transaction, processed_ms) == _as_dicts(transaction, processed_ms)
        assert first_position(transaction) == (("bin%dlog.000007", 4000) if schema_events else ("bin%dlog.000007", 4242))
    only_schema = Transaction(gtid="0-1-9", schema_events=[schema_event])
    assert change_lines(only_schema, 2000) == _as_dicts(only_schema, 2000)
    empty = Transaction(gtid="0-1-9")
    assert change_lines(empty, 2000) == ([], 0) == _as_dicts(empty, 2000)
    assert first_position(empty) is None
