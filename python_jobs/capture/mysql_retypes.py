"""Whether an ALTER TABLE of a MariaDB/MySQL table may have changed the values its rows hold: the
server converts every row to a column's new type with no rows event, so the mirror keeps the old
values unless the capture reads the table again online (mysql_table_changes.py).

A retype keeps every value only when it is one of the widenings below (lossless_retype); any other
is taken to change values. A wrong "keeps" leaves a mirror silently wrong, a wrong "changes" costs
one read of the table. Seen on MariaDB, with no rows event: a decimal's scale narrowed rounds (1.25
-> 1.3), a float made int rounds (2.4 -> 2), a signedness change or a narrower integer clips in a
non-strict session (-5 -> 0, 1000 -> 127), DATETIME(6), TIME(6) or TIMESTAMP(6) made (0) drop the
fraction, a shorter VARCHAR truncates in a non-strict session, VARBINARY <-> VARCHAR changes the
mirror's form (base64, text), a SET's members reordered reorder its text ('a,b' -> 'b,a'), an ENUM's
member dropped becomes '', CHAR strips trailing spaces and BINARY pads with zero bytes.

A MODIFY's or CHANGE's stated type is judged too (converted_columns): a capture reading far behind
finds a later ALTER's type in the catalog. information_schema's COLUMN_TYPE has no character set, so
a conversion of one (utf8mb4 -> latin1 makes '中' '?') is told by the statement (charset_converted)."""

from __future__ import annotations

import re
from typing import Iterable, Mapping, NamedTuple

_INTEGER_BITS = {"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "integer": 32, "bigint": 64}
# The most bytes each holds; a VARCHAR(n) or CHAR(n) takes up to 4 bytes a character (utf8mb4, utf32).
_TEXT_BYTES = {"tinytext": 255, "text": 65535, "mediumtext": 2**24 - 1, "longtext": 2**32 - 1}
_BLOB_BYTES = {"tinyblob": 255, "blob": 65535, "mediumblob": 2**24 - 1, "longblob": 2**32 - 1}
_TEMPORAL = {"datetime", "timestamp", "time"}
_TYPE = re.compile(r"^\s*([a-z][a-z0-9_]*)\s*(?:\((.*)\))?\s*(.*?)\s*$", re.IGNORECASE | re.DOTALL)
_MEMBER = re.compile(r"'((?:[^']|'')*)'")
_QUOTED = re.compile(r"'(?:[^'\\]|\\.|'')*'|\"(?:[^\"\\]|\\.|\"\")*\"|`(?:[^`]|``)*`")
_COLUMN_CHARSET = re.compile(r"^(?:modify|change)\b.*\b(?:character\s+set|charset|collate)\b", re.DOTALL)
_CONVERT = re.compile(r"\bconvert\s+to\s+(?:character\s+set|charset)\b")
_NOT_NULL = re.compile(r"^(?:modify|change)\b.*\bnot\s+null\b", re.DOTALL)
_ALTER_IGNORE = re.compile(r"^alter\s+(?:online\s+)?ignore\b")
# The session's sql_mode bits that make a conversion that loses a value an error (the same in MySQL).
_STRICT_MODES = (1 << 21) | (1 << 22)  # STRICT_TRANS_TABLES, STRICT_ALL_TABLES
_GENERATED = re.compile(r"^(?:modify|change)\b.*\b(?:as\s*\(|generated\s+always\b)", re.DOTALL)
_ID = r"(?:`(?:[^`]|``)*`|[^`\s,()]+)"  # a column's name, backquoted or not
# A MODIFY's or CHANGE's column (a CHANGE's name before it) and its type: name, (length), attributes.
_STATED_TYPE = r"([a-z][a-z0-9_]*(?:\s+precision|\s+varying)?)(?:\s*(\((?:[^()']|'(?:[^']|'')*')*\)))?((?:\s+(?:unsigned|signed|zerofill)\b)*)"
_MODIFY = re.compile(rf"^\s*modify\s+(?:column\s+)?(?:if\s+exists\s+)?({_ID})\s+{_STATED_TYPE}", re.IGNORECASE)
_CHANGE = re.compile(rf"^\s*change\s+(?:column\s+)?(?:if\s+exists\s+)?({_ID})\s+{_ID}\s+{_STATED_TYPE}", re.IGNORECASE)
_TYPE_ALIASES = {"integer": "int", "numeric": "decimal", "dec": "decimal", "fixed": "decimal", "real": "double",
                 "double precision": "double", "character": "char", "character varying": "varchar", "bool": "tinyint(1)",
                 "boolean": "tinyint(1)"}


class ColumnType(NamedTuple):
    base: str  # lower case: decimal, varchar, enum, ...
    arguments: str  # what its parentheses hold, as written: "10,2", "'a','B'"
    unsigned: bool


def parse_type(column_type: str) -> ColumnType:
    """A COLUMN_TYPE (int(10) unsigned, decimal(10,2), enum('a','b'), datetime(6)) taken apart."""
    match = _TYPE.match(column_type)
    if match is None:
        return ColumnType(column_type.strip().lower(), "", False)
    attributes = match.group(3).lower().split()
    return ColumnType(match.group(1).lower(), match.group(2) or "", "unsigned" in attributes or "zerofill" in attributes)


def lossless_retype(before: str, after: str) -> bool:
    """Whether a column retyped from before to after (COLUMN_TYPEs) keeps every value as the capture
    writes it: a wider integer, a decimal with more integer digits and the same scale, float ->
    double (whose exact digits the mirrors take from the schema change event, schema_changes.md),
    more fractional digits of a time, a longer CHAR, VARCHAR, VARBINARY or BIT, a text or blob type
    that holds at least as many bytes, an ENUM that keeps its members, a SET that keeps them in order."""
    old, new = parse_type(before), parse_type(after)
    if old == new:
        return True
    if old.base in _INTEGER_BITS and new.base in _INTEGER_BITS:
        low, high = _integer_range(old)
        new_low, new_high = _integer_range(new)
        return new_low <= low and high <= new_high
    if old.base in ("decimal", "numeric") and new.base in ("decimal", "numeric"):
        (precision, scale), (new_precision, new_scale) = _decimal(old), _decimal(new)
        return new_scale == scale and new_precision >= precision and (old.unsigned or not new.unsigned)
    if (old.base, new.base) == ("float", "double"):
        return not old.arguments and not new.arguments and (old.unsigned or not new.unsigned)
    if old.base in _TEMPORAL and new.base == old.base:
        return _number(new.arguments) >= _number(old.arguments)
    if old.base == new.base and old.base in ("char", "varchar", "varbinary", "bit"):
        return _number(new.arguments, 1) >= _number(old.arguments, 1)
    if old.base in ("varchar", *_TEXT_BYTES) and new.base in _TEXT_BYTES:
        return _max_bytes(old) <= _TEXT_BYTES[new.base]
    if old.base in ("varbinary", *_BLOB_BYTES) and new.base in _BLOB_BYTES:
        return (_number(old.arguments) if old.base == "varbinary" else _BLOB_BYTES[old.base]) <= _BLOB_BYTES[new.base]
    if old.base == new.base == "enum":  # its value is a member's text, which the server keeps
        return set(_members(old)) <= set(_members(new))
    if old.base == new.base == "set":  # its text lists the members in their order in the type
        remaining = iter(_members(new))
        return all(member in remaining for member in _members(old))
    return False


def converted_columns(before: Mapping[str, str], after: Mapping[str, str], retyped: Iterable[str], ddl: str) -> list[str]:
    """The columns whose values an ALTER TABLE may have converted: retyped from before to after (the
    catalog's types) other than by a widening, and those a MODIFY or CHANGE of the statement gave a type
    that does not widen theirs before it; the catalog may already have a later ALTER's type (a capture
    far behind), which may widen a type this one narrowed ('decimal(10,2)' -> 'decimal(10,1)' ->
    'decimal(12,2)') or be the type this one changed."""
    changed = [name for name in retyped if not lossless_retype(before[name], after[name])]
    names = {name.lower(): name for name in before}
    for named, stated in stated_types(ddl).items():
        name = names.get(named)
        if name is not None and name not in changed and not lossless_retype(before[name], stated):
            changed.append(name)
    return changed


def stated_types(ddl: str) -> dict[str, str]:
    """{column (lower case): its type as written} of an ALTER TABLE's MODIFY and CHANGE clauses (a
    CHANGE's by the column's name before it), in information_schema's spelling where it has another."""
    stated = {}
    for clause in _clauses(ddl):
        match = _MODIFY.match(clause) or _CHANGE.match(clause)
        if match is not None:
            base = re.sub(r"\s+", " ", match.group(2).lower())
            written = _TYPE_ALIASES.get(base, base)
            stated[_unquoted(match.group(1))] = written + (match.group(3) or "") + match.group(4)
    return stated


def charset_converted(ddl: str) -> bool:
    """Whether an ALTER TABLE may have converted text columns to another character set, which changes
    what a value holds (a character the new one lacks becomes '?'): CONVERT TO CHARACTER SET, or a
    MODIFY or CHANGE whose column definition names a character set or collation. A table's default
    character set alone (ALTER TABLE t CHARACTER SET latin1) converts nothing."""
    bare = _QUOTED.sub("''", ddl).lower()  # no name, comment or default can look like a clause
    if _CONVERT.search(bare):
        return True
    return any(_COLUMN_CHARSET.match(clause.strip()) for clause in _clauses(bare))


def regenerated(ddl: str) -> bool:
    """Whether an ALTER TABLE gave a column a generation expression (MODIFY or CHANGE ... AS (...)):
    the server computes every row's value again with no rows event, a VIRTUAL column's too (the
    binlog's full row image carries its value)."""
    bare = _QUOTED.sub("''", ddl).lower()
    return any(_GENERATED.match(clause.strip()) for clause in _clauses(bare))


def ignored_errors(ddl: str, sql_mode: int | None) -> str | None:
    """What an ALTER TABLE may have changed in rows with no rows event as it ignored what would have
    stopped it, else None: ALTER IGNORE drops the rows a new unique key finds duplicate; a session
    that is not strict makes NULLs the type's implicit default (0, '') in a column made NOT NULL."""
    bare = _QUOTED.sub("''", ddl).lower()
    if _ALTER_IGNORE.match(bare):
        return "ALTER IGNORE dropping duplicates"
    if (sql_mode is None or not sql_mode & _STRICT_MODES) and any(_NOT_NULL.match(c.strip()) for c in _clauses(bare)):
        return "NOT NULL in a session that is not strict"
    return None


def _clauses(ddl: str) -> list[str]:
    """An ALTER TABLE's clauses: its text split at the commas outside parentheses and quotes, the
    first without ALTER TABLE and the table's name."""
    clauses, depth, start, quote = [], 0, 0, ""
    for index, character in enumerate(ddl):
        if quote:  # a doubled quote closes and opens again: the same
            quote = "" if character == quote else quote
        elif character in "'\"`":
            quote = character
        elif character == "," and depth == 0:
            clauses.append(ddl[start:index])
            start = index + 1
        else:
            depth += {"(": 1, ")": -1}.get(character, 0)
    clauses.append(ddl[start:])
    clauses[0] = re.sub(r"^\s*alter\s+(?:online\s+|ignore\s+)*table\s+(?:if\s+exists\s+)?(?:`(?:[^`]|``)*`|[^`\s])+",
                        "", clauses[0], flags=re.IGNORECASE)
    return clauses


def _unquoted(name: str) -> str:
    return (name[1:-1].replace("``", "`") if name.startswith("`") else name).lower()


def _integer_range(column: ColumnType) -> tuple[int, int]:
    bits = _INTEGER_BITS[column.base]
    return (0, 2**bits - 1) if column.unsigned else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


def _decimal(column: ColumnType) -> tuple[int, int]:
    """(precision, scale); DECIMAL alone is DECIMAL(10,0)."""
    parts = [int(part) for part in re.findall(r"\d+", column.arguments)]
    return (parts[0] if parts else 10), (parts[1] if len(parts) > 1 else 0)


def _number(arguments: str, unwritten: int = 0) -> int:
    """A type's length or fractional digits: DATETIME is DATETIME(0), CHAR and BIT are (1)."""
    match = re.match(r"\s*(\d+)", arguments)
    return int(match.group(1)) if match else unwritten


def _max_bytes(column: ColumnType) -> int:
    return _number(column.arguments) * 4 if column.base == "varchar" else _TEXT_BYTES[column.base]


def _members(column: ColumnType) -> list[str]:
    return [member.replace("''", "'") for member in _MEMBER.findall(column.arguments)]
