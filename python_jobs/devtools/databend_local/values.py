"""Values as the Databend server writes them in a result's `data`: text per data type, VARIANT
decoded from the engine's JSONB."""

from __future__ import annotations

import decimal
import json
import math
import re
import struct
from typing import Any

from python_jobs.devtools.databend_local.data_types import DataType


def _shortest_float32(value: float) -> str:
    # Arrow hands Float32 over widened to a double (0.1 -> 0.10000000149011612); print the
    # shortest digits that read back as the same float32, as Rust does.
    single = struct.unpack("<f", struct.pack("<f", value))[0]
    for digits in range(1, 10):
        text = format(value, f".{digits}g")
        if _float32(float(text)) == single:
            return text
    return repr(value)


_FLOAT32_MAX = struct.unpack("<f", b"\xff\xff\x7f\x7f")[0]
_FLOAT32_HALFWAY = (_FLOAT32_MAX + 2.0 ** 128) / 2  # above it a double rounds to infinity as a float32


def _float32(value: float) -> float:
    """The float32 nearest value, as a float32 reads its text (struct refuses 3.4028235e38, the
    largest float32's shortest text, which is a little above it)."""
    if _FLOAT32_MAX < abs(value) < _FLOAT32_HALFWAY:
        return math.copysign(_FLOAT32_MAX, value)
    try:
        return struct.unpack("<f", struct.pack("<f", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def _rust_float(value: float, debug: bool = False, float32: bool = False) -> str:
    """Floats as Rust prints them: Display (`1`, `0.0000001`) or, inside JSON, Debug (`1.0`, `1e300`)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if debug:  # Rust's Debug switches to exponents where Python's repr does, but writes them shorter
        return re.sub(r"e([+-]?)0*(\d)", lambda m: "e" + m.group(1).replace("+", "") + m.group(2), repr(value))
    text = format(decimal.Decimal(_shortest_float32(value) if float32 else repr(value)), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def render_value(data_type: DataType, value: Any, nested: bool = False) -> str | None:
    """One value as a string the way the server encodes it; None for a top-level NULL."""
    kind = data_type.kind
    if kind in ("EmptyArray", "EmptyMap"):  # Arrow carries these as nulls
        return "[]" if kind == "EmptyArray" else "{}"
    if value is None:
        return "NULL" if nested else None
    if kind == "Nullable":
        return render_value(data_type.inner[0], value, nested)
    if kind == "Boolean":
        return "1" if value else "0"
    if kind == "Number":
        if isinstance(value, float):
            return _rust_float(value, float32=data_type.number == "Float32")
        return str(value)
    if kind == "Decimal":
        return format(value, "f")
    if kind == "String":
        return _quote(value) if nested else value
    if kind == "Timestamp":
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")
    if kind == "Date":
        return value.isoformat()
    if kind == "Variant":
        return jsonb_to_text(value)
    if kind in ("Binary", "Bitmap", "Geometry"):
        return value.hex().upper()
    if kind == "Array":
        return "[" + ",".join(render_value(data_type.inner[0], v, True) for v in value) + "]"
    if kind == "Map":
        key_type, value_type = data_type.inner
        return "{" + ",".join(
            f"{render_value(key_type, k, True)}:{render_value(value_type, v, True)}" for k, v in value
        ) + "}"
    if kind == "Tuple":
        items = value.values() if isinstance(value, dict) else value
        return "(" + ",".join(render_value(t, v, True) for t, v in zip(data_type.inner, items)) + ")"
    return str(value)


# Databend's binary JSON (the `jsonb` crate): a 4-byte header (container kind | element count),
# one 4-byte JEntry per element (kind | data length), then the element data.
_JSONB_ARRAY, _JSONB_OBJECT, _JSONB_SCALAR = 0x80000000, 0x40000000, 0x20000000
_JSONB_CONTAINER_MASK, _JSONB_COUNT_MASK = 0xE0000000, 0x1FFFFFFF
_JENTRY_KIND_MASK, _JENTRY_LENGTH_MASK = 0x70000000, 0x0FFFFFFF
_JENTRY_NULL, _JENTRY_STRING, _JENTRY_NUMBER = 0x00000000, 0x10000000, 0x20000000
_JENTRY_FALSE, _JENTRY_TRUE, _JENTRY_CONTAINER = 0x30000000, 0x40000000, 0x50000000
_INT_FORMATS = {1: ">b", 2: ">h", 4: ">i", 8: ">q"}
_UINT_FORMATS = {1: ">B", 2: ">H", 4: ">I", 8: ">Q"}


def _jsonb_number(data: bytes) -> int | float:
    tag, payload = data[0], data[1:]
    if tag == 0x00:
        return 0
    if tag == 0x10:
        return math.nan
    if tag in (0x20, 0x30):
        return math.inf if tag == 0x20 else -math.inf
    if tag == 0x40:
        return struct.unpack(_INT_FORMATS[len(payload)], payload)[0]
    if tag == 0x50:
        return struct.unpack(_UINT_FORMATS[len(payload)], payload)[0]
    if tag == 0x60:
        return struct.unpack(">d", payload)[0]
    raise ValueError(f"unknown jsonb number tag {tag:#x}")


def _jsonb_scalar(jentry: int, data: bytes) -> Any:
    kind = jentry & _JENTRY_KIND_MASK
    if kind == _JENTRY_NULL:
        return None
    if kind in (_JENTRY_TRUE, _JENTRY_FALSE):
        return kind == _JENTRY_TRUE
    if kind == _JENTRY_STRING:
        return data.decode("utf-8")
    if kind == _JENTRY_NUMBER:
        return _jsonb_number(data)
    if kind == _JENTRY_CONTAINER:
        return _jsonb_decode(data)
    raise ValueError(f"unknown jsonb entry kind {kind:#x}")


def _jsonb_decode(buffer: bytes) -> Any:
    (header,) = struct.unpack_from(">I", buffer, 0)
    container, count = header & _JSONB_CONTAINER_MASK, header & _JSONB_COUNT_MASK
    if container == _JSONB_SCALAR:
        count = 1
    elif container == _JSONB_OBJECT:
        count *= 2  # all keys, then all values
    elif container != _JSONB_ARRAY:
        raise ValueError(f"unknown jsonb container {container:#x}")
    jentries = struct.unpack_from(f">{count}I", buffer, 4)
    offset, values = 4 + 4 * count, []
    for jentry in jentries:
        length = jentry & _JENTRY_LENGTH_MASK
        values.append(_jsonb_scalar(jentry, buffer[offset:offset + length]))
        offset += length
    if container == _JSONB_SCALAR:
        return values[0]
    if container == _JSONB_OBJECT:
        half = len(values) // 2
        return dict(zip(values[:half], values[half:]))
    return values


def jsonb_to_text(buffer: bytes) -> str:
    """A VARIANT value (binary JSON) as the JSON text the server returns."""
    try:
        value = _jsonb_decode(bytes(buffer))
    except (ValueError, KeyError, IndexError, struct.error, UnicodeDecodeError):
        # The oldest Variant values were stored as JSON text.
        return bytes(buffer).decode("utf-8", errors="replace")
    return _json_text(value)


def _json_text(value: Any) -> str:
    # Not json.dumps: floats must read as the jsonb crate writes them (`1.0`, `1e300`).
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _rust_float(value, debug=True)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ",".join(map(_json_text, value)) + "]"
    return "{" + ",".join(f"{_json_text(k)}:{_json_text(v)}" for k, v in value.items()) + "}"
