"""Databend data types, read from the schema the embedded engine prints as Rust debug text."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


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
