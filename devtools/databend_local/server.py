"""A local Databend HTTP endpoint backed by the embedded Databend engine, for development and CI.

This is a development/test endpoint, NOT a server for production: one process-wide engine
session serves every client, statements run one at a time, there is no real authentication and
results are held in memory until fetched.

It speaks enough of Databend's HTTP query API for `databend-py` (the client under
`databend-sqlalchemy` and therefore `dbt-databend-cloud`) and `databend-driver`:

- `POST /v1/query` (body: `sql`, `session`, `pagination`) answers with `id`, `session`, `schema`,
  `data` (rows of strings, NULL as the string "NULL" unless the session sets
  `format_null_as_str=0`), `state`, `error`, `stats` and `next_uri` / `final_uri` / `kill_uri`;
- `GET /v1/query/{id}/page/{n}` pages through results larger than one page;
- `/v1/query/{id}/final` and `/v1/query/{id}/kill` release a result;
- `/v1/session/login`, `/logout`, `/refresh`, `/heartbeat` and `/v1/verify` for clients that call them.

Authentication: HTTP Basic with user `root` and any password (empty is fine).

The engine is the `databend` wheel from PyPI (`from databend import SessionContext`). Its catalog
and data live under `--data-dir` (`_meta`, `_data`, `logs`), so tables outlive the process.
One engine session serves all clients: before each statement the endpoint switches it to the
client's database and settings (`USE`, `SET`), so per-client state round-trips in `session` as
with a real server. A transaction opened by one client keeps other clients out until it ends.

    python -m devtools.databend_local --port 8000 --data-dir .databend-local
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import decimal
import json
import math
import os
import re
import signal
import struct
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

DEFAULT_PAGE_ROWS = 10_000
USER = "root"
# A fixed tenant: the binding's default tenant is random per process, which hides the catalog of
# earlier runs from a restarted server.
ENGINE_TENANT = "local"
NODE_ID = "databend-local"
RESULT_TTL_SECONDS = 600
TXN_IDLE_TIMEOUT_SECONDS = 300
# Settings that only change how this endpoint formats results; the engine does not know them.
CLIENT_SIDE_SETTINGS = {"format_null_as_str"}

ERROR_INTERNAL = 1001
ERROR_AUTH = 2201


# ---------------------------------------------------------------------------------------------
# Databend data types, read from the engine's schema
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DataType:
    """One Databend data type: `kind` plus its number type, decimal size or inner types."""

    kind: str
    number: str = ""
    precision: int = 0
    scale: int = 0
    inner: tuple["DataType", ...] = ()

    @property
    def name(self) -> str:
        """The type as the Databend server names it in `schema` (`Nullable(Int64)`, `Decimal(18, 2)`)."""
        if self.kind == "Number":
            return self.number
        if self.kind == "Decimal":
            return f"Decimal({self.precision}, {self.scale})"
        if self.inner:
            return f"{self.kind}({', '.join(t.name for t in self.inner)})"
        return self.kind


@dataclass(frozen=True)
class Field:
    name: str
    type: DataType


_DEBUG_TOKEN = re.compile(
    r'\s*(?:(?P<string>"(?:[^"\\]|\\.)*")|(?P<number>-?\d+)|(?P<ident>[A-Za-z_]\w*)|(?P<punct>[()\[\]{}:,]))'
)
_RUST_ESCAPE = re.compile(r"\\(u\{[0-9a-fA-F]+\}|.)")
_RUST_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "'": "'"}


def _unescape_rust(literal: str) -> str:
    def replace(match: re.Match) -> str:
        escape = match.group(1)
        if escape.startswith("u{"):
            return chr(int(escape[2:-1], 16))
        return _RUST_ESCAPES.get(escape, escape)

    return _RUST_ESCAPE.sub(replace, literal[1:-1])


def _tokenize_debug(text: str) -> list[tuple[str, str]]:
    tokens, position = [], 0
    text = text.rstrip()
    while position < len(text):
        match = _DEBUG_TOKEN.match(text, position)
        if not match:
            raise ValueError(f"cannot read engine schema at {text[position:position + 40]!r}")
        kind = match.lastgroup
        tokens.append((kind, match.group(kind)))
        position = match.end()
    return tokens


class _DebugReader:
    """Reads Rust `{:?}` output (the only schema the binding exposes) into Python values.

    `Name(a, b)` -> ("Name", [a, b]); `Name { k: v }` -> ("Name", {"k": v}); `Name` -> ("Name", None);
    `[a, b]` -> list; `{k: v}` -> dict; strings and integers as themselves.
    """

    def __init__(self, text: str):
        self.tokens = _tokenize_debug(text)
        self.position = 0

    def _next(self) -> tuple[str, str]:
        token = self.tokens[self.position]
        self.position += 1
        return token

    def _peek(self) -> str:
        return self.tokens[self.position][1] if self.position < len(self.tokens) else ""

    def _expect(self, punct: str) -> None:
        kind, value = self._next()
        if value != punct:
            raise ValueError(f"expected {punct!r} in engine schema, got {value!r}")

    def _sequence(self, closing: str, item) -> list:
        items = []
        while self._peek() != closing:
            items.append(item())
            if self._peek() == ",":
                self._next()
        self._expect(closing)
        return items

    def _pair(self) -> tuple[Any, Any]:
        key = self.value()
        if isinstance(key, tuple) and key[1] is None:
            key = key[0]  # a struct field name
        self._expect(":")
        return key, self.value()

    def value(self) -> Any:
        kind, token = self._next()
        if kind == "string":
            return _unescape_rust(token)
        if kind == "number":
            return int(token)
        if token == "[":
            return self._sequence("]", self.value)
        if token == "{":
            return dict(self._sequence("}", self._pair))
        if kind != "ident":
            raise ValueError(f"unexpected {token!r} in engine schema")
        if self._peek() == "(":
            self._next()
            return token, self._sequence(")", self.value)
        if self._peek() == "{":
            self._next()
            return token, dict(self._sequence("}", self._pair))
        return token, None


def _data_type(node: Any) -> DataType:
    kind, args = node
    if kind == "Number":
        return DataType("Number", number=args[0][0])
    if kind == "Decimal":
        size = args[0][1][0][1]  # Decimal(Decimal128(DecimalSize { precision, scale }))
        return DataType("Decimal", precision=size["precision"], scale=size["scale"])
    if kind == "Map":
        return DataType("Map", inner=_data_type(args[0]).inner)  # Map(Tuple([key, value]))
    if kind == "Tuple":
        return DataType("Tuple", inner=tuple(_data_type(t) for t in args[0]))
    if kind in ("Nullable", "Array"):
        return DataType(kind, inner=(_data_type(args[0]),))
    return DataType(kind)


def parse_schema(debug_text: str) -> list[Field]:
    """Fields of a `DataSchema { fields: [DataField { name, data_type, .. }] }` debug string."""
    _, schema = _DebugReader(debug_text).value()
    return [Field(f["name"], _data_type(f["data_type"])) for _, f in schema["fields"]]


# ---------------------------------------------------------------------------------------------
# Values as the Databend server writes them in `data`
# ---------------------------------------------------------------------------------------------


def _shortest_float32(value: float) -> str:
    # Arrow hands Float32 over widened to a double (0.1 -> 0.10000000149011612); print the
    # shortest digits that read back as the same float32, as Rust does.
    single = struct.unpack("<f", struct.pack("<f", value))[0]
    for digits in range(1, 10):
        text = format(value, f".{digits}g")
        if struct.unpack("<f", struct.pack("<f", float(text)))[0] == single:
            return text
    return repr(value)


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


# ---------------------------------------------------------------------------------------------
# The embedded engine
# ---------------------------------------------------------------------------------------------


class EngineError(Exception):
    """A statement failed; `code` and `message` are the engine's (e.g. 1025, "Unknown table ...")."""

    def __init__(self, code: int, message: str, name: str = ""):
        super().__init__(message)
        self.code, self.message, self.name = code, message, name


_ENGINE_ERROR = re.compile(r"(?:(\w+)\. )?Code: (\d+), Text = (.*?)(?:\s*<Backtrace.*)?$", re.S)


# The binding appends a Rust backtrace ("\n\n   0: <unknown>\n   1: ...") that a server does not send.
_RUST_BACKTRACE = re.compile(r"\n\s*\n\s*0: .*", re.S)


def _engine_error(exc: BaseException) -> EngineError:
    text = str(exc).strip()
    match = _ENGINE_ERROR.search(text)
    if match:
        message = _RUST_BACKTRACE.sub("", match.group(3)).strip()
        return EngineError(int(match.group(2)), message, match.group(1) or "")
    return EngineError(ERROR_INTERNAL, text or type(exc).__name__)


@dataclass
class StatementResult:
    fields: list[Field]
    rows: list[list[Any]]  # engine values (Python objects), rendered per page
    rows_written: int = 0


_LEADING_COMMENTS = re.compile(r"^(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/)*", re.S)
_USE = re.compile(r"use\s", re.I)
_SET = re.compile(r"set\s+(?!global\s)(?:session\s+)?([A-Za-z_]\w*)\s*=\s*(.+?)\s*;?\s*$", re.I | re.S)
_UNSET = re.compile(r"unset\s+(?:session\s+)?([A-Za-z_]\w*)\s*;?\s*$", re.I)
_TXN_BEGIN = re.compile(r"(begin|start\s+transaction)\b", re.I)
_TXN_END = re.compile(r"(commit|rollback|abort)\b", re.I)


def statement_body(sql: str) -> str:
    """The statement without leading comments (dbt prefixes each query with one)."""
    return sql[_LEADING_COMMENTS.match(sql).end():]


def _unquote_setting(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _quote_identifier(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _is_count_result(fields: list[Field]) -> bool:
    # MERGE INTO answers "number of rows inserted/updated/deleted" declared Int32 but built as
    # UInt32, and the binding panics converting that to Arrow; its text rendering works.
    return bool(fields) and all(f.name.startswith("number of rows") for f in fields)


def _rows_from_box(box: str, width: int) -> list[list[Any]]:
    """Data rows of the binding's box rendering of a small result (the MERGE counts)."""
    lines = box.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("├")) + 1
    rows = []
    for line in lines[start:]:
        if line.startswith("└"):
            break
        cells = [cell.strip() for cell in line.strip().strip("│").split("│")]
        rows.append([int(cell) if re.fullmatch(r"-?\d+", cell) else cell for cell in cells[:width]])
    return rows


class EmbeddedEngine:
    """The one process-wide engine session; every call is serialized by `lock`."""

    def __init__(self, data_dir: Path):
        data_dir = Path(data_dir).resolve()
        data_dir.mkdir(parents=True, exist_ok=True)
        if "databend" in sys.modules and os.environ.get("DATABEND_DATA_PATH") != f"{data_dir}/":
            raise RuntimeError("databend was imported before its data path was set; use a fresh process")
        # The binding reads these once, when the module is first imported.
        os.environ["DATABEND_DATA_PATH"] = f"{data_dir}/"
        os.environ.setdefault("LOG_FILE_DIR", str(data_dir / "logs"))
        os.environ.setdefault("RUST_BACKTRACE", "0")  # one line per engine panic, not a page
        from databend import SessionContext

        self.context = SessionContext(tenant=ENGINE_TENANT)
        self.lock = threading.Lock()
        self.database = "default"
        self.settings: dict[str, str] = {}
        self.txn_owner: str | None = None
        self.txn_last_used = 0.0

    # -- raw statements ----------------------------------------------------------------------

    @staticmethod
    def _call(action, during: str) -> Any:
        """Run one binding call, turning its failures (and panics) into an EngineError."""
        try:
            return action()
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:
            raise _engine_error(exc) from None
        except BaseException as exc:  # pyo3's PanicException derives from BaseException
            first_line = (str(exc).splitlines() or [type(exc).__name__])[0]
            raise EngineError(ERROR_INTERNAL, f"the embedded engine panicked {during}: {first_line}",
                              "EnginePanic") from None

    def _run(self, sql: str) -> StatementResult:
        frame = self._call(lambda: self.context.sql(sql), "planning the statement")
        schema_text = self._call(lambda: str(frame.schema()), "describing the result")
        try:
            fields = parse_schema(schema_text)
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            message = f"cannot read the engine's result schema {schema_text!r}: {exc}"
            raise EngineError(ERROR_INTERNAL, message) from None
        # Each of collect() / to_py_arrow() executes the plan again: call exactly one, once.
        if not fields:
            self._call(frame.collect, "running the statement")
            return StatementResult([], [])
        if _is_count_result(fields):
            rows = _rows_from_box(str(self._call(frame.collect, "running the statement")), len(fields))
            return StatementResult(fields, rows, sum(v for row in rows for v in row if isinstance(v, int)))
        batches = self._call(
            frame.to_py_arrow, "converting the result (the statement may already have taken effect)"
        )
        rows: list[list[Any]] = []
        for batch in batches:
            columns = [column.to_pylist() for column in batch.columns]
            rows.extend(map(list, zip(*columns)))
        return StatementResult(fields, rows)

    def _scalar(self, sql: str) -> Any:
        return self._run(sql).rows[0][0]

    # -- per-client session state --------------------------------------------------------------

    def _switch_database(self, database: str) -> None:
        if database == self.database:
            return
        try:
            self._run(f"USE {_quote_identifier(database)}")
            self.database = database
        except EngineError:
            # Like the server, a session may name a database that does not exist (yet): statements
            # that need it fail, others (CREATE DATABASE ...) still work.
            if self.database != "default":
                self._run("USE `default`")
                self.database = "default"

    def _apply_settings(self, wanted: dict[str, str]) -> None:
        wanted = {k: str(v) for k, v in wanted.items() if k not in CLIENT_SIDE_SETTINGS}
        for name in [n for n in self.settings if n not in wanted]:
            self._run(f"UNSET {name}")
            del self.settings[name]
        for name, value in wanted.items():
            if self.settings.get(name) != value:
                literal = value if re.fullmatch(r"-?\d+", value) else "'" + value.replace("'", "''") + "'"
                self._run(f"SET {name} = {literal}")
                self.settings[name] = value

    def _claim_transaction(self, session_id: str) -> None:
        if self.txn_owner in (None, session_id):
            return
        if time.monotonic() - self.txn_last_used > TXN_IDLE_TIMEOUT_SECONDS:
            self._run("ROLLBACK")  # its client went away; do not block everyone forever
            self.txn_owner = None
            return
        raise EngineError(
            ERROR_INTERNAL,
            "another client session has an open transaction on this local endpoint (one engine "
            "session serves all clients); retry after it commits or rolls back",
        )

    def execute(self, session: dict, sql: str) -> StatementResult:
        """Run one statement for a client session, updating `session` (database, settings, txn)."""
        body = statement_body(sql)
        set_match = _SET.match(body)
        with self.lock:
            self._claim_transaction(session["local_session_id"])
            self._switch_database(session.get("database") or "default")
            self._apply_settings(session.get("settings") or {})
            if set_match and set_match.group(1).lower() in CLIENT_SIDE_SETTINGS:
                result = StatementResult([], [])  # only this endpoint's formatting; nothing to run
            else:
                result = self._run(sql)
            self._record_session_change(session, body)
        return result

    def _record_session_change(self, session: dict, body: str) -> None:
        """After a successful statement: what USE / SET / UNSET / BEGIN / COMMIT changed."""
        settings = dict(session.get("settings") or {})
        if _USE.match(body):
            self.database = session["database"] = self._scalar("SELECT current_database()")
        elif set_match := _SET.match(body):
            name = set_match.group(1).lower()
            settings[name] = _unquote_setting(set_match.group(2))
            if name not in CLIENT_SIDE_SETTINGS:
                self.settings[name] = settings[name]
        elif unset_match := _UNSET.match(body):
            settings.pop(unset_match.group(1).lower(), None)
            self.settings.pop(unset_match.group(1).lower(), None)
        elif _TXN_BEGIN.match(body):
            self.txn_owner = session["local_session_id"]
        elif _TXN_END.match(body):
            self.txn_owner = None
        session["settings"] = settings
        self.txn_last_used = time.monotonic()
        session["txn_state"] = "Active" if self.txn_owner == session["local_session_id"] else "AutoCommit"


# ---------------------------------------------------------------------------------------------
# HTTP: queries, pages and sessions
# ---------------------------------------------------------------------------------------------


def _progress(rows: int = 0, size: int = 0) -> dict:
    return {"rows": rows, "bytes": size}


@dataclass
class StoredQuery:
    """One query's outcome, kept until its client fetches the final page (or it expires)."""

    id: str
    session: dict
    fields: list[Field] = field(default_factory=list)
    pages: list[list[list[str | None]]] = field(default_factory=lambda: [[]])
    error: EngineError | None = None
    rows_written: int = 0
    running_time_ms: float = 0.0
    created: float = field(default_factory=time.monotonic)

    @property
    def row_count(self) -> int:
        return sum(len(page) for page in self.pages)

    def response(self, page: int | None) -> dict:
        """The JSON body for a page (`None`: the final response, no data)."""
        uri = f"/v1/query/{self.id}"
        data = self.pages[page] if page is not None else []
        if self.error is not None or page is None:
            next_uri = None
        elif page + 1 < len(self.pages):
            next_uri = f"{uri}/page/{page + 1}"
        else:
            next_uri = f"{uri}/final"
        return {
            "id": self.id,
            "session_id": self.session.get("local_session_id"),
            "node_id": NODE_ID,
            "session": self.session,
            "schema": [{"name": f.name, "type": f.type.name} for f in self.fields],
            "data": data,
            "state": "Failed" if self.error is not None else "Succeeded",
            "error": None if self.error is None else {
                "code": self.error.code, "message": self.error.message, "detail": self.error.name or None,
            },
            "warnings": [],
            "affect": None,
            "stats": {
                "scan_progress": _progress(),
                "write_progress": _progress(self.rows_written),
                "result_progress": _progress(self.row_count),
                "total_scan": _progress(),
                "spill_progress": {"file_nums": 0, "bytes": 0},
                "running_time_ms": self.running_time_ms,
            },
            "result_timeout_secs": RESULT_TTL_SECONDS,
            "stats_uri": uri,
            "final_uri": f"{uri}/final",
            "next_uri": next_uri,
            "kill_uri": f"{uri}/kill",
        }


def _render_pages(result: StatementResult, null_as_str: bool, page_rows: int) -> list[list[list[str | None]]]:
    null = "NULL" if null_as_str else None
    rendered = []
    for row in result.rows:
        cells = (render_value(f.type, v) for f, v in zip(result.fields, row))
        rendered.append([null if cell is None else cell for cell in cells])
    return [rendered[i:i + page_rows] for i in range(0, len(rendered), page_rows)] or [[]]


def _session_state(requested: dict | None) -> dict:
    """The client's session as sent back to it, with an id so transactions know their owner."""
    session = dict(requested or {})
    session.setdefault("local_session_id", uuid.uuid4().hex)
    session["database"] = session.get("database") or "default"
    session["settings"] = {k: str(v) for k, v in (session.get("settings") or {}).items()}
    session.setdefault("role", "account_admin")
    session.setdefault("txn_state", "AutoCommit")
    session.setdefault("need_sticky", False)
    session.setdefault("need_keep_alive", False)
    return session


class LocalDatabend:
    """The endpoint's state: the engine, stored query results and the page size."""

    def __init__(self, data_dir: Path, page_rows: int = DEFAULT_PAGE_ROWS):
        self.engine = EmbeddedEngine(data_dir)
        self.page_rows = page_rows
        self.queries: dict[str, StoredQuery] = {}
        self.queries_lock = threading.Lock()
        self.version = _engine_version()

    def run_query(self, body: dict, query_id: str | None) -> StoredQuery:
        session = _session_state(body.get("session"))
        pagination = body.get("pagination") or {}
        page_rows = min(int(pagination.get("max_rows_per_page") or self.page_rows), self.page_rows)
        with self.queries_lock:
            self._expire_results()
            if not query_id or query_id in self.queries:
                query_id = uuid.uuid4().hex
        query = StoredQuery(query_id, session)
        started = time.monotonic()
        try:
            result = self.engine.execute(session, body.get("sql") or "")
            null_as_str = session["settings"].get("format_null_as_str", "1") not in ("0", "false")
            query.fields, query.rows_written = result.fields, result.rows_written
            query.pages = _render_pages(result, null_as_str, max(page_rows, 1))
        except EngineError as exc:
            query.error = exc
        query.running_time_ms = (time.monotonic() - started) * 1000
        if query.error is None:
            with self.queries_lock:
                self.queries[query_id] = query
        return query

    def query(self, query_id: str) -> StoredQuery | None:
        with self.queries_lock:
            return self.queries.get(query_id)

    def release(self, query_id: str) -> StoredQuery | None:
        with self.queries_lock:
            return self.queries.pop(query_id, None)

    def _expire_results(self) -> None:
        # Clients that stop paging half way never call final; do not keep their rows forever.
        cutoff = time.monotonic() - RESULT_TTL_SECONDS
        for query_id in [q for q, stored in self.queries.items() if stored.created < cutoff]:
            del self.queries[query_id]


def _engine_version() -> str:
    from importlib.metadata import version

    return version("databend")


_PAGE_PATH = re.compile(r"^/v1/query/([^/]+)/page/(\d+)$")
_END_PATH = re.compile(r"^/v1/query/([^/]+)/(final|kill)$")
_STATS_PATH = re.compile(r"^/v1/query/([^/]+)$")


class DatabendHandler(BaseHTTPRequestHandler):
    """Routes Databend's HTTP API onto `server.local` (a LocalDatabend)."""

    protocol_version = "HTTP/1.1"  # keep-alive: clients reuse one connection per session
    disable_nagle_algorithm = True  # headers and body go out as separate writes; no 40 ms stalls
    server_version = "databend-local"

    @property
    def local(self) -> LocalDatabend:
        return self.server.local  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: Any) -> None:
        if getattr(self.server, "verbose", False):
            super().log_message(format, *args)

    # -- plumbing -------------------------------------------------------------------------------

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _send_error(self, status: int, code: int, message: str) -> None:
        self._send_json(status, {"error": {"code": code, "message": message}})

    def _read_json(self) -> dict:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        return json.loads(raw) if raw.strip() else {}

    def _authorized(self) -> bool:
        header = self.headers.get("Authorization") or ""
        if header.startswith("Basic "):
            try:
                user = base64.b64decode(header[6:]).decode().split(":", 1)[0]
            except ValueError:
                user = ""
            if user == USER:
                return True
        message = f"authentication failed: this local endpoint takes Basic auth as user '{USER}' (any password)"
        self._send_error(401, ERROR_AUTH, message)
        return False

    # -- routes ---------------------------------------------------------------------------------

    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")

    def _route(self, method: str) -> None:
        try:
            self._dispatch(method)
        except Exception as exc:  # a bug here must not drop the client's connection silently
            self.log_error("internal error: %r", exc)
            self._send_error(500, ERROR_INTERNAL, f"databend_local internal error: {exc!r}")

    def _dispatch(self, method: str) -> None:
        path = self.path.split("?", 1)[0].rstrip("/") or "/"
        if path in ("/health", "/v1/health"):
            return self._send_json(200, {"status": "ok"})
        try:
            body = self._read_json() if method == "POST" else {}
        except ValueError as exc:
            return self._send_error(400, 400, f"request body is not JSON: {exc}")
        if not self._authorized():
            return None
        if method == "POST" and path == "/v1/query":
            return self._start_query(body)
        if match := _PAGE_PATH.match(path):
            return self._page(match.group(1), int(match.group(2)))
        if match := _END_PATH.match(path):
            return self._end_query(match.group(1), match.group(2))
        if match := _STATS_PATH.match(path):
            return self._page(match.group(1), None)
        if path.startswith("/v1/session/") or path == "/v1/verify":
            return self._session_endpoint(path, body)
        return self._send_error(404, 404, f"no such endpoint: {method} {path}")

    def _start_query(self, body: dict) -> None:
        query = self.local.run_query(body, self.headers.get("X-DATABEND-QUERY-ID"))
        self._send_json(200, query.response(0), {"X-DATABEND-QUERY-ID": query.id})

    def _page(self, query_id: str, page: int | None) -> None:
        query = self.local.query(query_id)
        if query is None:
            return self._send_error(404, 404, f"query id {query_id} not found (finished, killed or expired)")
        if page is not None and page >= len(query.pages):
            return self._send_error(404, 404, f"query {query_id} has no page {page}")
        self._send_json(200, query.response(page))

    def _end_query(self, query_id: str, action: str) -> None:
        query = self.local.release(query_id)
        if query is None or action == "kill":
            return self._send_json(200, {} if query is None else query.response(None))
        self._send_json(200, query.response(None))

    def _session_endpoint(self, path: str, body: dict) -> None:
        if path == "/v1/session/login":
            session_id = uuid.uuid4().hex
            # No tokens: clients then keep using Basic auth on every request.
            return self._send_json(
                200, {"version": self.local.version, "session_id": session_id, "tokens": None},
                {"X-DATABEND-SESSION-ID": session_id},
            )
        if path == "/v1/session/heartbeat":
            queries = [q for ids in (body.get("node_to_queries") or {}).values() for q in ids]
            return self._send_json(200, {"queries_to_remove": [q for q in queries if self.local.query(q) is None]})
        if path in ("/v1/session/logout", "/v1/session/refresh"):
            return self._send_json(200, {})
        if path == "/v1/verify":
            return self._send_json(200, {"tenant": ENGINE_TENANT, "user": USER, "roles": ["account_admin"]})
        return self._send_error(404, 404, f"no such endpoint: {path}")


class LocalDatabendServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], local: LocalDatabend, verbose: bool = False):
        super().__init__(address, DatabendHandler)
        self.local, self.verbose = local, verbose

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"


def make_server(data_dir: Path, host: str = "127.0.0.1", port: int = 0,
                page_rows: int = DEFAULT_PAGE_ROWS, verbose: bool = False) -> LocalDatabendServer:
    """Start the engine and bind the HTTP server (port 0: any free port); serve_forever() runs it."""
    return LocalDatabendServer((host, port), LocalDatabend(data_dir, page_rows), verbose)


# ---------------------------------------------------------------------------------------------
# CLI and test helper
# ---------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    parser.add_argument("--data-dir", type=Path, required=True, help="engine catalog, data and logs")
    parser.add_argument("--page-rows", type=int, default=DEFAULT_PAGE_ROWS, help="max rows per result page")
    parser.add_argument("--verbose", action="store_true", help="log every HTTP request to stderr")
    args = parser.parse_args(argv)

    server = make_server(args.data_dir, args.host, args.port, args.page_rows, args.verbose)

    def stop(signum: int, frame: Any) -> None:
        # shutdown() waits for serve_forever() to return, so it cannot run on serve_forever's thread.
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(server.url, flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0


@contextlib.contextmanager
def serve(data_dir: Path, page_rows: int = DEFAULT_PAGE_ROWS, startup_timeout: float = 60.0) -> Iterator[str]:
    """Run the endpoint in a subprocess on a free port; yields its URL (`http://127.0.0.1:PORT`).

    A subprocess, not a thread: the binding fixes its data path at import and can abort the
    whole process on some engine failures. Its stderr goes to `data_dir/databend_local.log`.
    """
    data_dir = Path(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "devtools.databend_local", "--port", "0",
               "--data-dir", str(data_dir), "--page-rows", str(page_rows)]
    with open(data_dir / "databend_local.log", "ab") as log:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, cwd=data_dir, text=True)
    try:
        yield _wait_for_url(process, startup_timeout, data_dir / "databend_local.log")
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()
    # Only reached when the body succeeded: a server that did not stop cleanly is a failure too.
    if process.returncode != 0:
        log = data_dir / "databend_local.log"
        raise RuntimeError(f"databend_local exited with code {process.returncode}; see {log}")


def _wait_for_url(process: subprocess.Popen, timeout: float, log_path: Path) -> str:
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(process.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    url = lines[0].strip() if lines else ""
    if not url.startswith("http://"):
        process.kill()
        raise RuntimeError(f"databend_local did not start within {timeout}s; see {log_path}")
    return url


if __name__ == "__main__":
    sys.exit(main())
