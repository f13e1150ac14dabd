"""Debezium's logical types, decoded with the schema of a {schema, payload} line.

Without the schema a precise DECIMAL arrives as base64 bytes whose scale is unknown: set
decimal.handling.mode=string on the connector, or keep schemas on. A VariableScaleDecimal
(PostgreSQL's numeric without precision, Oracle's NUMBER) carries its scale, {"scale": s,
"value": base64}, the only object a schemaless row image holds in that exact shape: it is
decoded without the schema too. With the schema each value becomes what a model casts with
cdc_column(): decimals as exact JSON numbers, dates, times and timestamps as ISO strings (UTC
for instants).
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import re
from decimal import Decimal
from typing import Any, Callable, Mapping

from python_jobs.formats.records import Members, RejectedRecord, short

_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_DATE = dt.date(1970, 1, 1)


def image_column_schemas(schema: Any, image_field: str) -> dict[str, Mapping[str, Any]]:
    """Column name -> Kafka Connect field schema of the envelope's 'before' or 'after'."""
    if not isinstance(schema, dict) or not isinstance(schema.get("fields"), list):
        return {}
    for envelope_field in schema["fields"]:
        if isinstance(envelope_field, dict) and envelope_field.get("field") == image_field:
            columns = envelope_field.get("fields")
            if isinstance(columns, list):
                return {
                    column["field"]: column
                    for column in columns
                    if isinstance(column, dict) and isinstance(column.get("field"), str)
                }
    return {}


VARIABLE_SCALE_DECIMAL = "io.debezium.data.VariableScaleDecimal"
_BASE64 = re.compile(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$")


def is_variable_scale_decimal(value: Any) -> bool:
    """A schemaless VariableScaleDecimal: an object of exactly an integer 'scale' and a non-empty
    base64 'value'. Debezium writes no other column as an object of that shape (JSON columns are
    strings, a geometry has 'wkb' and 'srid')."""
    if not isinstance(value, dict) or value.keys() != {"scale", "value"}:
        return False
    scale, digits = value["scale"], value["value"]
    return (isinstance(scale, int) and not isinstance(scale, bool) and isinstance(digits, str)
            and bool(digits) and _BASE64.match(digits) is not None)


def schemaless_column_schemas(image: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The schema a schemaless image's VariableScaleDecimal columns would have had."""
    return {name: {"name": VARIABLE_SCALE_DECIMAL} for name, value in image.items() if is_variable_scale_decimal(value)}


def decode_image(members: Members, column_schemas: Mapping[str, Mapping[str, Any]], image_field: str) -> tuple[dict, str]:
    """The image with logical types decoded: (values, exact JSON text)."""
    values: dict[str, Any] = {}
    rendered = []
    for name, (value, text, _) in members.items():
        decoder = _DECODERS.get(column_schemas.get(name, {}).get("name"))
        if decoder is not None and value is not None:
            try:
                value = decoder(value, column_schemas[name].get("parameters") or {})
            except (ValueError, TypeError, KeyError, OverflowError, binascii.Error) as error:
                raise RejectedRecord(
                    f"column '{name}' in '{image_field}' is {short(value)}, not a valid "
                    f"{column_schemas[name]['name']} ({error})"
                ) from None
            text = str(value) if isinstance(value, Decimal) else json.dumps(value)
        values[name] = value
        rendered.append(f"{json.dumps(name, ensure_ascii=False)}:{text}")
    return values, "{" + ",".join(rendered) + "}"


def _decimal(value: Any, parameters: Mapping[str, Any]) -> Decimal:
    """Connect Decimal: big-endian two's-complement unscaled bytes, base64, scale in the schema."""
    if not isinstance(value, str):
        raise TypeError("expected base64 text")
    scale = int(parameters["scale"])
    unscaled = int.from_bytes(base64.b64decode(value, validate=True), "big", signed=True)
    # From its text, every digit kept: arithmetic (scaleb) rounds to the context's 28 digits.
    return Decimal(f"{unscaled}E{-scale}")


def _variable_scale_decimal(value: Any, parameters: Mapping[str, Any]) -> Decimal:
    if not isinstance(value, dict) or not isinstance(value.get("scale"), int):
        raise TypeError("expected {scale, value}")
    return _decimal(value["value"], {"scale": value["scale"]})


def _bits(value: Any, parameters: Mapping[str, Any]) -> int:
    """BIT(n), n > 1: the bits as little-endian bytes, base64; becomes their unsigned integer."""
    if not isinstance(value, str):
        raise TypeError("expected base64 text")
    return int.from_bytes(base64.b64decode(value, validate=True), "little")


def _days(value: Any, parameters: Mapping[str, Any]) -> str:
    return (_EPOCH_DATE + dt.timedelta(days=_integer(value))).isoformat()


def _since_epoch(unit_per_second: int) -> Callable[[Any, Mapping[str, Any]], str]:
    def decode(value: Any, parameters: Mapping[str, Any]) -> str:
        seconds, fraction = divmod(_integer(value), unit_per_second)
        micros = fraction * 1_000_000 // unit_per_second
        return (_EPOCH + dt.timedelta(seconds=seconds, microseconds=micros)).isoformat(sep=" ")

    return decode


def _time_of_day(unit_per_second: int) -> Callable[[Any, Mapping[str, Any]], str]:
    """HH:MM:SS[.ffffff]; a MySQL TIME is a duration (-838:59:59 to 838:59:59): its hours past 24
    are kept and a negative one has its sign, as the server writes them."""

    def decode(value: Any, parameters: Mapping[str, Any]) -> str:
        units = _integer(value)
        seconds, fraction = divmod(abs(units), unit_per_second)
        micros = fraction * 1_000_000 // unit_per_second
        minutes, seconds = divmod(seconds, 60)
        hours, minutes = divmod(minutes, 60)
        text = f"{'-' if units < 0 else ''}{hours:02d}:{minutes:02d}:{seconds:02d}"
        return f"{text}.{micros:06d}" if micros else text

    return decode


def _integer(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("expected an integer")
    return value


_DECODERS: dict[str, Callable[[Any, Mapping[str, Any]], Any]] = {
    "org.apache.kafka.connect.data.Decimal": _decimal,
    "io.debezium.data.VariableScaleDecimal": _variable_scale_decimal,
    "io.debezium.data.Bits": _bits,
    "org.apache.kafka.connect.data.Date": _days,
    "io.debezium.time.Date": _days,
    "org.apache.kafka.connect.data.Timestamp": _since_epoch(1_000),
    "io.debezium.time.Timestamp": _since_epoch(1_000),
    "io.debezium.time.MicroTimestamp": _since_epoch(1_000_000),
    "io.debezium.time.NanoTimestamp": _since_epoch(1_000_000_000),
    "org.apache.kafka.connect.data.Time": _time_of_day(1_000),
    "io.debezium.time.Time": _time_of_day(1_000),
    "io.debezium.time.MicroTime": _time_of_day(1_000_000),
    "io.debezium.time.NanoTime": _time_of_day(1_000_000_000),
}
