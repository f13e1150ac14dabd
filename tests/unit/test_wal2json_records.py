"""The PostgreSQL capture's reading of wal2json records (python_jobs/capture/postgres_events.py):
orjson reads them, and every column value comes out as Python's json read with every number as its
text gives it, so that a numeric keeps its exact digits."""

from __future__ import annotations

import json

import pytest

from python_jobs.capture.postgres_events import wal2json_record
from python_jobs.formats.wal2json import value_converter

EXACT = json.JSONDecoder(parse_float=str, parse_int=str)


def values(record: dict) -> dict:
    """Each image's values as the capture writes them (postgres_events.columns_image)."""
    return {side: [(column["name"], None if column.get("value") is None else value_converter(column["type"])(column["value"]))
                   for column in record.get(side) or []]
            for side in ("columns", "identity")}


def column(pg_type: str, value: str) -> dict:
    return {"action": "I", "xid": 7, "columns": [{"name": "c", "type": pg_type, "value": value}]}


@pytest.mark.parametrize("pg_type, value, written", [
    ("numeric(12,2)", "1.50", "1.50"),
    ("numeric(12,2)", "-99999999.99", "-99999999.99"),
    ("numeric(12,0)", "12346", "12346"),
    ("numeric(15,5)", "1234567890.12345", "1234567890.12345"),
    ("numeric(5,3)", "-0.001", "-0.001"),
    # Wider than a double holds, without a precision, a negative scale: read again, every number as text.
    ("numeric(38,10)", "123456789012345678.0123456789", "123456789012345678.0123456789"),
    ("numeric", "1.50", "1.50"),
    ("numeric(5,-2)", "12300", "12300"),
    ("bigint", "9223372036854775807", 9223372036854775807),
    ("integer", "-5", -5),
    ("double precision", "-1e+20", -1e20),
    ("real", "1.1", 1.1),
    ("boolean", "true", True),
    ("text", '"x \\"value\\":1"', 'x "value":1'),
])
def test_a_value_comes_out_as_json_with_numbers_as_text_gives_it(pg_type, value, written):
    text = json.dumps(column(pg_type, "VALUE")).replace('"VALUE"', value)
    record = wal2json_record(text.encode())
    assert values(record) == values(EXACT.decode(text))
    assert values(record)["columns"] == [("c", written)]


def test_identity_values_and_str_records_are_read_the_same_way():
    text = '{"action":"D","xid":7,"identity":[{"name":"id","type":"numeric(12,2)","value":99999999.99}]}'
    assert values(wal2json_record(text)) == {"columns": [], "identity": [("id", "99999999.99")]}


def test_nan_which_json_has_not_is_read_again_as_python_reads_it():
    record = wal2json_record(b'{"action":"I","columns":[{"name":"f","type":"double precision","value":NaN}]}')
    value = record["columns"][0]["value"]
    assert value != value  # NaN, as Python's json reads it


def test_utc_timestamps_rewritten_as_text_equal_the_datetime_conversion():
    import datetime as dt
    import random

    from python_jobs.formats.wal2json import _utc_timestamp

    def through_datetime(value: str) -> str | None:
        if value.endswith(" BC"):
            return None  # no mirror reads times before year 1
        try:
            instant = dt.datetime.fromisoformat(value).astimezone(dt.timezone.utc)
        except ValueError:
            return value
        return instant.strftime("%Y-%m-%dT%H:%M:%S.%fZ").rjust(27, "0")  # %Y does not pad years before 1000

    chance = random.Random(20261128)
    values = ["2026-01-01 00:00:01+00", "0001-01-01 00:00:00+00", "0999-01-01 00:00:00.5+00", "2026-01-01 00:00:01+02",
              "2026-01-01 00:00:01.5+05:30", "infinity", "2026-01-01 00:00:01+00 BC", "12026-01-01 00:00:01+00"]
    for _ in range(5000):
        instant = dt.datetime(chance.randint(1, 9999), chance.randint(1, 12), chance.randint(1, 28), chance.randint(0, 23),
                              chance.randint(0, 59), chance.randint(0, 59), chance.choice([0, chance.randint(0, 999999)]))
        fraction = f".{instant.microsecond:06d}".rstrip("0") if instant.microsecond else ""
        values.append(f"{instant.year:04d}{instant:-%m-%d %H:%M:%S}{fraction}+00")
    assert [_utc_timestamp(value) for value in values] == [through_datetime(value) for value in values]
