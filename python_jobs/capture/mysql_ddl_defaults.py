"""The literal defaults an ALTER TABLE statement gives the columns it adds, read from the statement.

The rows a table had when a column was added hold the default the column had then. The catalog
says the column's default when the capture reaches the statement in the binlog, which a later
`ALTER COLUMN ... SET DEFAULT` (or `DROP DEFAULT`) may have changed already when the capture reads
far behind; the statement itself says the default of its own time. Only a plain literal (a number,
a quoted string, a bit or hex literal, NULL) is taken from it; anything else (an expression, a
character set introducer) is left to the catalog, as before (mysql_columns.py).
"""

from __future__ import annotations

import re

# A statement's tokens: quoted strings and identifiers whole, numbers, words, single characters.
_TOKEN = re.compile(r"""
      (?P<string>[bx]?'(?:[^'\\]|''|\\.)*')
    | (?P<quoted>`(?:[^`]|``)*`|"(?:[^"\\]|""|\\.)*")
    | (?P<number>0x[0-9a-f]+|\d+(?:\.\d*)?(?:e[-+]?\d+)?|\.\d+(?:e[-+]?\d+)?)
    | (?P<word>[A-Za-z_$][A-Za-z0-9_$]*)
    | (?P<space>\s+|--[^\n]*|\#[^\n]*|/\*.*?\*/)
    | (?P<other>.)
""", re.IGNORECASE | re.VERBOSE | re.DOTALL)
# A default the capture can read as the server would: as mysql_columns._LITERAL, or NULL.
_LITERAL = re.compile(r"^(?:[-+]?\d+(?:\.\d*)?(?:e[-+]?\d+)?|'(?:[^'\\]|'')*'|b'[01]*'|0x[0-9a-f]+|null)$", re.IGNORECASE)
# What an ADD clause adds when it is not a column.
_NOT_COLUMNS = {"index", "key", "constraint", "primary", "unique", "foreign", "fulltext", "spatial", "partition",
                "period", "system", "check", "vector"}


def added_column_defaults(ddl: str) -> dict[str, str]:
    """{column name, lower-cased: its default's literal text as the statement writes it} for the
    columns an ALTER TABLE statement adds with a plain literal default."""
    defaults: dict[str, str] = {}
    for clause in _split(_tokens(ddl), depth=0):
        words = [text.lower() for _, text in clause]
        if "add" not in words:
            continue
        rest = clause[words.index("add") + 1:]
        rest = _skip_words(rest, ["column"])
        rest = _skip_words(rest, ["if", "not", "exists"])
        if not rest or rest[0][1].lower() in _NOT_COLUMNS:
            continue
        definitions = _split(rest[1:-1], depth=0) if rest[0][1] == "(" and rest[-1][1] == ")" else [rest]
        for definition in definitions:
            if definition and (literal := _default_literal(definition)) is not None:
                defaults[_name(definition[0])] = literal
    return defaults


def _tokens(ddl: str) -> list[tuple[str, str]]:
    return [(match.lastgroup or "", match.group()) for match in _TOKEN.finditer(ddl) if match.lastgroup != "space"]


def _split(tokens: list[tuple[str, str]], depth: int) -> list[list[tuple[str, str]]]:
    """The tokens split at the commas outside parentheses."""
    parts: list[list[tuple[str, str]]] = [[]]
    level = depth
    for kind, text in tokens:
        if kind == "other" and text == "(":
            level += 1
        elif kind == "other" and text == ")":
            level -= 1
        if kind == "other" and text == "," and level == depth:
            parts.append([])
        else:
            parts[-1].append((kind, text))
    return [part for part in parts if part]


def _skip_words(tokens: list[tuple[str, str]], words: list[str]) -> list[tuple[str, str]]:
    found = [text.lower() for _, text in tokens[:len(words)]]
    return tokens[len(words):] if found == words else tokens


def _name(token: tuple[str, str]) -> str:
    kind, text = token
    if kind == "quoted":
        quote = text[0]
        return text[1:-1].replace(quote * 2, quote).lower()
    return text.lower()


def _default_literal(definition: list[tuple[str, str]]) -> str | None:
    """The literal after DEFAULT in one column's definition (outside its type's parentheses), if plain."""
    level = 0
    for index, (kind, text) in enumerate(definition):
        if kind == "other" and text in "()":
            level += 1 if text == "(" else -1
        elif level == 0 and kind == "word" and text.lower() == "default":
            following = definition[index + 1:index + 3]
            literal = following[0][1] if following else ""
            if following and following[0][1] in "+-" and len(following) > 1 and following[1][0] == "number":
                literal = following[0][1] + following[1][1]
            return literal if _LITERAL.match(literal) else None
    return None
